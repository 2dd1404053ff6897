"""Tests of benchmarks/robustness.py (simulated poor contacts, LOSO kappa per variant)."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import robustness as rb


def test_unknown_variant_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        rb.parse_args(["--variants", "mlp,mlp+telepathy"])
    assert exc.value.code == 2 and "mlp+telepathy" in capsys.readouterr().err


def test_bad_subjects_are_read_from_the_spec() -> None:
    assert rb.bad_subjects("s02:ELA:noise,s02:ERB:drift,s04:ELE:noise") == ["s02", "s04"]


@pytest.mark.slow
def test_distrust_variant_runs_end_to_end_and_scores_only_as_trained(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = rb.main(["--out", str(out), "--subjects", "3", "--hours", "0.25", "--steps", "2", "--batch-size", "8",
                    "--bad-channels", "s02:ELA:noise", "--variants", "mlp,mlp+distrust,mlp+distrust+uncorr",
                    "--threads", "1"])
    assert code == 0
    rows = list(csv.DictReader((out / "robustness.csv").open()))
    variants = {r["variant"] for r in rows}
    assert variants == {"mlp", "mlp+mask", "mlp+distrust@test", "mlp+distrust", "mlp+distrust+uncorr"}
    bad = {r["variant"]: int(r["distrusted_channel_windows"]) for r in rows if r["subject"] == "s02"}
    assert bad["mlp+distrust"] > 0 and bad["mlp+distrust@test"] == bad["mlp+distrust"] and bad["mlp"] == 0
    assert all(int(r["distrusted_channel_windows"]) == 0 for r in rows if r["subject"] != "s02")
    # The uncorrelated rule masks (some of) the distrusted noise contact's windows, and nothing elsewhere.
    uncorr = {r["subject"]: r for r in rows if r["variant"] == "mlp+distrust+uncorr"}
    assert int(uncorr["s02"]["distrusted_channel_windows"]) == bad["mlp+distrust"]
    assert int(uncorr["s02"]["masked_channel_windows"]) <= bad["mlp+distrust"]
    assert all(int(r["masked_channel_windows"]) == 0 for s, r in uncorr.items() if s != "s02")
