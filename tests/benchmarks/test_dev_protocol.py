"""Tests of benchmarks/dev_protocol.py: grouped draws, the clean skip; the real run is a benchmark."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import dev_protocol as dp


def test_draws_never_split_a_subject_and_cover_every_usable_window() -> None:
    subjects = np.repeat([f"s{k}" for k in range(8)], 5)
    keep = np.ones(len(subjects), bool)
    keep[3] = False
    task = SimpleNamespace(name="eegmat-temporal", subjects=subjects, keep=keep)
    out = dp.draws(task, 3, seed=0)
    assert len(out) == 3 and all(len(d) == 4 for d in out)
    for folds in out:
        tests = np.concatenate([te for _, te in folds])
        assert sorted(tests.tolist()) == np.flatnonzero(keep).tolist()
        for tr, te in folds:
            assert not set(subjects[tr]) & set(subjects[te])
    assert any(not np.array_equal(out[0][0][1], d[0][1]) for d in out[1:])  # the draws differ


def test_skips_cleanly_without_the_shared_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert dp.main(["--data", str(tmp_path / "nothing"), "--out", str(tmp_path / "out")]) == 0
    assert "skipped" in capsys.readouterr().out
