"""Tests of benchmarks/robustness_seeds.py (paired differences over seeds of robustness.py runs)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import robustness_seeds as rs


def _run(folder: Path, seed: int, kappas: dict[tuple[str, str], float]) -> Path:
    """Write a robustness.py-like output folder: run.json with the seed, robustness.csv with one row per fold."""
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"settings": {"seed": seed}}))
    lines = ["variant,subject,group,kappa"]
    lines += [f"{v},{s},{'bad' if s == 's02' else 'clean'},{k}" for (v, s), k in kappas.items()]
    (folder / "robustness.csv").write_text("\n".join(lines) + "\n")
    return folder


def test_folders_of_one_seed_pool_and_differences_are_paired(tmp_path: Path) -> None:
    folders = [
        _run(tmp_path / "a0", 0, {("acpe", "s01"): 0.5, ("acpe", "s02"): 0.4}),
        _run(tmp_path / "b0", 0, {("mlp", "s01"): 0.6, ("mlp", "s02"): 0.5}),   # same seed, another variant
        _run(tmp_path / "a1", 1, {("acpe", "s01"): 0.7, ("acpe", "s02"): 0.2, ("mlp", "s01"): 0.7,
                                  ("mlp", "s02"): 0.4}),
    ]
    per_seed = [rs.group_means(f) for f in folders]
    assert per_seed[0][("acpe", "bad")] == 0.4
    pooled = [per_seed[0] | per_seed[1], per_seed[2]]
    bad = rs.paired(pooled, "mlp", "acpe", "bad")
    assert bad is not None and bad["n"] == 2 and bad["mean"] == pytest.approx(0.15) and bad["ahead"] == 2
    assert bad["low"] < 0.15 < bad["high"]
    assert rs.paired(pooled, "mlp", "acpe", "clean")["mean"] == pytest.approx(0.05)
    assert rs.paired(pooled[:1], "mlp", "acpe", "bad") is None        # one seed: no interval


def test_main_prints_the_pooled_seeds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(tmp_path / "a0", 0, {("acpe", "s02"): 0.4, ("mlp", "s02"): 0.5})
    _run(tmp_path / "b0", 0, {("mlp+distrust", "s02"): 0.6})
    _run(tmp_path / "a1", 1, {("acpe", "s02"): 0.4, ("mlp", "s02"): 0.6, ("mlp+distrust", "s02"): 0.6})
    assert rs.main([str(p) for p in sorted(tmp_path.iterdir())] + ["--pairs", "mlp+distrust:acpe"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 seeds") and "| mlp+distrust − acpe | bad | 2 | +0.200 |" in out


def test_main_without_results_is_an_error(tmp_path: Path) -> None:
    assert rs.main([str(tmp_path)]) == 2
