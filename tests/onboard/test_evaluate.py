"""evaluate through its Python API: fold selection, sweep files, rows kept when stopped midway."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from passport_kit.errors import DataError
from passport_kit.onboard.evaluate import evaluate, folds_for, make_config

SUBJECTS = np.array(["s01", "s02", "s03", "s04"])


def _cfg(tmp_path: Path, **options):
    return make_config(montage="m.yaml", data=tmp_path, out=tmp_path / "out", **options)


@pytest.mark.parametrize(("protocol", "tests"), [("loso", [("s02",)]), ("split", [("s02",)])])
def test_test_subjects_restrict_the_folds(tmp_path: Path, protocol: str, tests: list) -> None:
    folds = folds_for(_cfg(tmp_path, protocol=protocol, test_subjects=("s02",)), SUBJECTS)
    assert [f.test for f in folds] == tests
    assert all("s02" not in f.train for f in folds)


def test_split_is_the_same_for_every_seed(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, protocol="split", seeds=3)
    assert len(folds_for(cfg, SUBJECTS)) == 1


def test_unknown_test_subject_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"\['s09'\]"):
        folds_for(_cfg(tmp_path, test_subjects=("s09",)), SUBJECTS)


def test_sweep_writes_curve(tmp_path: Path, montage_yaml: Path, dataset: Path, checkpoint: str) -> None:
    report = evaluate(montage=str(montage_yaml), data=dataset, out=tmp_path / "ev", checkpoints=(checkpoint,),
                      protocol="split", subjects_sweep=(1, 2), seeds=2, max_steps=1, batch_size=4)
    rows = list(csv.DictReader((tmp_path / "ev" / "sweep.csv").open()))
    assert [(r["n_train_subjects"], r["n_runs"]) for r in rows if r["method"] == checkpoint] == [("1", "2"), ("2", "2")]
    # The zero-shot stager (issue 56) is fitted on no subject: one point at 0, from the first seed's largest size.
    assert [(r["n_train_subjects"], r["n_runs"]) for r in rows if r["method"] == "zero-shot yasa"] == [("0", "1")]
    assert report.files["sweep_plot"].is_file()


def test_stopped_evaluation_keeps_its_rows(tmp_path: Path, montage_yaml: Path, dataset: Path,
                                           checkpoint: str) -> None:
    def stop_after_first(done: int, total: int, what: str) -> None:
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        evaluate(montage=str(montage_yaml), data=dataset, out=tmp_path / "ev", checkpoints=(checkpoint,),
                 max_steps=1, batch_size=4, progress=stop_after_first)
    rows = list(csv.DictReader((tmp_path / "ev" / "results.csv").open()))
    assert [r["test_subject"] for r in rows if r["method"] == checkpoint] == ["s01"]


@pytest.mark.parametrize("h_freq", [None, 30.0])
def test_h_freq_overrides_the_checkpoint_low_pass(tmp_path: Path, montage_yaml: Path, dataset: Path,
                                                  checkpoint: str, h_freq: float | None) -> None:
    import json

    evaluate(montage=str(montage_yaml), data=dataset, out=tmp_path / "ev", checkpoints=(checkpoint,),
             test_subjects=("s01",), max_steps=1, batch_size=4, save_adapters=True, h_freq=h_freq)
    (bundle,) = (tmp_path / "ev" / "adapters").iterdir()
    recorded = json.loads((bundle / "adapter.json").read_text())["preprocessing"]["h_freq"]
    assert recorded == (h_freq if h_freq is not None else 75.0)


def test_channel_id_base_gets_fresh_rows_for_unseen_channels(tmp_path: Path, montage_yaml: Path,
                                                              dataset: Path, make_tiny_checkpoint) -> None:
    name = make_tiny_checkpoint("tiny-channel-id-empty-vocab", "channel-id")  # its vocabulary has no channel
    report = evaluate(montage=str(montage_yaml), data=dataset, out=tmp_path / "ev", checkpoints=(name,),
                      test_subjects=("s01",), max_steps=1, batch_size=4)
    assert [r["test_subject"] for r in report.rows if r["method"] == name] == ["s01"]


def test_probe_evaluation_carries_the_band_power_reference(tmp_path: Path, montage_yaml: Path, dataset: Path,
                                                           checkpoint: str) -> None:
    """Issue 24: next to the model, the probe's band-power read-out scored on the same test windows."""
    from passport_kit.onboard.evaluate import BANDPOWER

    report = evaluate(montage=str(montage_yaml), data=dataset, out=tmp_path / "ev", checkpoints=(checkpoint,),
                      protocol="split")
    # Beside the model, band power and (issue 56) the zero-shot stager, each with rows of its own.
    assert BANDPOWER in report.summary and "zero-shot yasa" in report.summary and len(report.summary) == 3
    assert all(BANDPOWER in row for row in report.per_subject)
    methods = {r["method"] for r in report.rows}
    assert methods == set(report.summary)
    assert {r["shipped"] for r in report.rows if r["method"] == BANDPOWER} == {BANDPOWER}
    header = (tmp_path / "ev" / "per_subject.csv").read_text().splitlines()[0]
    assert BANDPOWER in header
