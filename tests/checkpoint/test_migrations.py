"""Older forms of the checkpoint files read through the migration table (checkpoint/files.py::MIGRATIONS).

Each migration is tested by reading a block in the form an older version wrote: it must read as
the current form, rebuild the head it was, and be written back as it was read.
"""

from __future__ import annotations

import json

import pytest
import torch

from passport_kit.checkpoint import AdapterMeta, InputContract
from passport_kit.checkpoint.files import MIGRATIONS, upgraded, written
from passport_kit.checkpoint.folders import dump_json
from passport_kit.model import Classifier, build_backbone, model_config
from passport_kit.model.spectral import STANDARD_BANDS

#: A probe head as the current version writes one for sleep staging: every key.
CURRENT = {"kind": "probe", "n_classes": 5, "n_channels": 2, "context": 2, "layer": 0, "pooling_probe": "meanstd",
           "bands": [list(b) for b in STANDARD_BANDS], "scaling": "recording", "n_prior": 5,
           "prior": {"name": "yasa", "eeg": "C3", "eog": None, "emg": None}, "temperature": 1.3,
           "smoothing": {"transitions": [[0.2] * 5] * 5, "emission_prior": [0.2] * 5}, "scales_prior": False}
#: Each head migration: the keys a block written before it lacks, and the values that absence means.
OLDER = {
    "head-kind": {"kind": "mlp"},
    "probe-layer": {"layer": None, "pooling_probe": "mean"},
    "probe-bands": {"bands": None, "scaling": "none"},
    "probe-prior": {"n_prior": 0, "prior": None},
    "probe-temperature": {"temperature": 1.0},
    "probe-smoothing": {"smoothing": None},
    "probe-prior-scaling": {"scales_prior": True},
}
MLP = {"n_classes": 5, "pooling": "mean", "n_patches": None, "hidden": 20, "dropout": 0.1}


def _meta(head: dict) -> AdapterMeta:
    return AdapterMeta(base_name="b", base_sha256="0" * 64, montage={}, montage_hash="0" * 64,
                       classes=["W", "N1", "N2", "N3", "REM"], preprocessing={"sfreq": 200.0}, head=head)


def test_every_migration_is_named_once_with_what_brought_the_current_form() -> None:
    names = [m.name for m in MIGRATIONS]
    assert len(set(names)) == len(names) and set(OLDER) | {"notch-freq"} == set(names)
    assert all(m.since.startswith("issue ") and m.block in ("head", "preprocessing") for m in MIGRATIONS)


@pytest.mark.parametrize("name", [n for n in OLDER if n != "head-kind"])
def test_a_probe_head_written_before_a_key_reads_as_the_head_it_was_and_is_written_back_as_read(name: str) -> None:
    old = {k: v for k, v in CURRENT.items() if k not in OLDER[name]}
    meta = _meta(old)
    assert meta.head == {**old, **OLDER[name]}  # the current form: the absent keys hold what their absence meant
    assert json.loads(dump_json(meta))["head"] == old
    backbone = build_backbone(model_config("cbramod-tiny", "mlp-experts"))
    head = Classifier(backbone, **meta.head).head
    assert written("head", head.settings()) == old  # the head it rebuilds is written in the same form
    assert Classifier(backbone, **old).head.linear.in_features == head.linear.in_features  # as Classifier's defaults


def test_an_mlp_head_written_before_the_probe_head_reads_as_an_mlp_head() -> None:
    meta = _meta(MLP)
    assert meta.head == {"kind": "mlp", **MLP} and json.loads(dump_json(meta))["head"] == MLP
    torch.manual_seed(0)
    classifier = Classifier(build_backbone(model_config("cbramod-tiny", "ape")), **meta.head)
    assert classifier.head.kind == "mlp" and written("head", classifier.head_settings) == MLP


def test_the_oldest_probe_head_reads_with_every_key_and_a_current_one_passes_unchanged() -> None:
    oldest = {"kind": "probe", "n_classes": 2, "n_channels": 2, "context": 0}
    assert upgraded("head", oldest) == {**oldest, **{k: v for keys in OLDER.values() for k, v in keys.items()
                                                      if k != "kind"}}
    assert upgraded("head", CURRENT) == CURRENT and written("head", CURRENT) == CURRENT
    assert upgraded("head", "garbage") == "garbage"  # not a block: validation says so


@pytest.mark.parametrize(("stored", "notch_freq"), [({"notch": 60}, 60.0), ({"notch": "site's mains"}, None)])
def test_a_base_written_before_notch_freq_reads_its_notch(stored: dict, notch_freq: float | None) -> None:
    assert InputContract.model_validate(stored).notch_freq == notch_freq
