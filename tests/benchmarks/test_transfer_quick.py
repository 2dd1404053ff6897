"""The transfer benchmarks run end to end on simulated data (slow: minutes; ``pytest -m slow``)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

#: Tiny budgets: a quarter-hour night per subject, two steps of pretraining and fine-tuning.
TINY = ["--quick", "--kinds", "acpe,mlp-experts", "--steps", "2", "--ft-steps", "2", "--hours", "0.25",
        "--threads", "1"]


def _read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow
def test_transfer_subsets_quick_writes_tables_figures_and_run_record(tmp_path: Path) -> None:
    import transfer_subsets

    out = tmp_path / "subsets"
    assert transfer_subsets.main([*TINY, "--out", str(out)]) == 0
    curves = _read_csv(out / "curves.csv")
    assert {(r["layout"], r["kind"]) for r in curves} == {
        (layout, kind) for layout in transfer_subsets.LAYOUTS for kind in ("acpe", "mlp-experts")}
    assert {r["n_train_subjects"] for r in curves} == {"1", "2", "4"}
    overall = json.loads((out / "overall.json").read_text())
    assert len(overall) == 6 and all(-1.0 <= r["kappa"] <= 1.0 for r in overall)
    for png in ("transfer_subsets.png", "transfer_subsets_acpe.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    run = json.loads((out / "run.json").read_text())
    assert run["settings"]["pretrain"]["steps"] == 2 and run["wall_s"] > 0


@pytest.mark.slow
def test_transfer_ear_quick_writes_the_per_subject_table_and_difference_plot(tmp_path: Path) -> None:
    import transfer_ear

    out = tmp_path / "ear"
    assert transfer_ear.main([*TINY, "--out", str(out)]) == 0
    table = json.loads((out / "per_subject.json").read_text())
    assert [r["subject"] for r in table] == [f"s{i:02d}" for i in range(1, 10)] + ["mean"]
    diffs = _read_csv(out / "difference_to_acpe.csv")
    assert {r["method"] for r in diffs} == {"mlp-experts"} and len(diffs) == 9
    assert (out / "transfer_ear.png").read_bytes()[:4] == b"\x89PNG"
    # Rerunning the same command reuses every finished pretraining and fine-tuning run.
    stamps = {p: p.stat().st_mtime_ns for p in (out / "finetune").rglob("summary.json")}
    assert transfer_ear.main([*TINY, "--out", str(out)]) == 0
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
