"""evaluate's held-out nights: each method named by what its folds shipped, subgroups from dataset.yaml (issue 56)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from passport_kit.onboard.held_out_nights import HeldOutNights
from passport_kit.signals.dataset_spec import RecordingSpec

CLASSES = ["W", "N1", "N2", "N3", "REM"]


def windows(n_nights: int, epochs: int = 20) -> SimpleNamespace:
    """Return the window arrays evaluate hands over: recording, onset (s) and class of every window."""
    rng = np.random.default_rng(0)
    return SimpleNamespace(recording=np.repeat([f"n{i}.edf" for i in range(n_nights)], epochs),
                           onset_s=np.tile(30.0 * np.arange(epochs), n_nights), y=rng.integers(0, 5, n_nights * epochs))


def test_a_method_is_named_by_what_each_fold_shipped(tmp_path: Path) -> None:
    w = windows(4)
    nights = HeldOutNights(CLASSES, window_seconds=30.0, task="sleep-staging")
    for fold, shipped in enumerate(["band power", "band power", "band power + sleep prior", "band power"]):
        rows = np.flatnonzero(w.recording == f"n{fold}.edf")
        nights.add("passport-small-mlp", w, rows, w.y[rows], shipped=shipped)
    assert nights.shipped("passport-small-mlp") == "band power (3/4 folds), band power + sleep prior (1/4 folds)"
    report = json.loads(nights.write(tmp_path, context="t")["validation_json"].read_text())
    assert report["methods"][0]["shipped"].startswith("band power (3/4 folds)")
    assert "passport-small-mlp → band power (3/4 folds)" in (tmp_path / "validation.html").read_text()


def test_groups_of_the_dataset_yaml_reach_the_nights() -> None:
    spec = RecordingSpec(subject="s1", file="n0.edf", labels="n0.csv", groups={"sex": "F", "age_group": 40})
    assert spec.groups == {"sex": "F", "age_group": "40"}
    w = windows(2)
    nights = HeldOutNights(CLASSES, window_seconds=30.0, task="sleep-staging", groups={"n0.edf": spec.groups})
    nights.add("m", w, np.arange(40), w.y)
    by_name = {n.name: n.groups for n in nights._nights["m"].values()}
    assert by_name == {"n0.edf": {"sex": "F", "age_group": "40"}, "n1.edf": {}}
