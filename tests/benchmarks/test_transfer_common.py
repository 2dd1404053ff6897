"""Unit tests of benchmarks/transfer_common.py and the pure helpers of benchmarks/transfer_real.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import transfer_common as tc
import transfer_real


def _row(kind: str, subject: str, pseed: int, seed: int, kappa: float | None, **extra: object) -> dict:
    return {"kind": kind, "layout": "tuh-standard", "test_subject": subject, "pretrain_seed": pseed,
            "seed": seed, "fold": f"loso-{subject}", "n_train_subjects": 2, "kappa": kappa, **extra}


@pytest.mark.parametrize(("text", "expected"), [("3", (3, 3)), ("2x5", (2, 5)), ("1X1", (1, 1)), ("4×2", (4, 2))])
def test_parse_seeds_accepts_n_and_pxf(text: str, expected: tuple[int, int]) -> None:
    assert tc.parse_seeds(text) == expected


@pytest.mark.parametrize("text", ["0", "two", "2x", "1x2x3", "3x0"])
def test_parse_seeds_rejects_bad_values_with_a_hint(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="PxF"):
        tc.parse_seeds(text)


def test_summarise_averages_within_a_unit_before_taking_the_spread() -> None:
    rows = [  # seed 0 scores 0.2 and 0.4 on two test subjects (mean 0.3), seed 1 scores 0.5 on both
        _row("acpe", "s01", 0, 0, 0.2), _row("acpe", "s02", 0, 0, 0.4),
        _row("acpe", "s01", 0, 1, 0.5), _row("acpe", "s02", 0, 1, 0.5),
    ]
    (out,) = tc.summarise(rows, by=("kind",), unit=("pretrain_seed", "seed"), metric="kappa")
    assert out["kappa"] == pytest.approx(0.4)
    assert out["sd"] == pytest.approx(0.1)
    assert out["n_units"] == 2


def test_summarise_skips_missing_scores() -> None:
    rows = [_row("acpe", "s01", 0, 0, None), _row("acpe", "s01", 0, 1, 0.6)]
    (out,) = tc.summarise(rows, by=("kind",), unit=("seed",), metric="kappa")
    assert (out["kappa"], out["n_units"]) == (pytest.approx(0.6), 1)


def test_per_subject_table_has_one_row_per_subject_and_a_mean_row() -> None:
    rows = [_row("acpe", "s01", 0, 0, 0.1), _row("acpe", "s01", 0, 1, 0.3), _row("acpe", "s02", 0, 0, 0.6),
            _row("mlp-experts", "s01", 0, 0, 0.5), _row("mlp-experts", "s02", 0, 0, 0.7)]
    table = tc.per_subject_table(rows, methods=("acpe", "mlp-experts"), metric="kappa")
    assert [r["subject"] for r in table] == ["s01", "s02", "mean"]
    assert table[0]["acpe"] == pytest.approx(0.2)
    assert table[0]["acpe_sd"] == pytest.approx(0.1)
    assert table[2]["acpe"] == pytest.approx(0.4)  # mean of the subject means 0.2 and 0.6
    assert table[2]["mlp-experts"] == pytest.approx(0.6)


def test_differences_to_pairs_runs_by_seeds_and_fold() -> None:
    rows = [_row("acpe", "s01", 0, 0, 0.1), _row("acpe", "s01", 0, 1, 0.5),
            _row("mlp-experts", "s01", 0, 0, 0.3), _row("mlp-experts", "s01", 0, 1, 0.5)]
    (d,) = tc.differences_to(rows, reference="acpe", methods=("mlp-experts",), metric="kappa")
    assert d["kappa_minus_acpe"] == pytest.approx(0.1)  # pairs (0.3-0.1, 0.5-0.5)
    assert d["sd"] == pytest.approx(0.1)
    assert d["n_pairs"] == 2


def test_differences_to_leaves_unpaired_runs_out() -> None:
    rows = [_row("acpe", "s01", 0, 0, 0.1), _row("mlp-experts", "s01", 0, 0, 0.3),
            _row("mlp-experts", "s01", 0, 1, 0.9)]  # seed 1 has no ACPE partner
    (d,) = tc.differences_to(rows, reference="acpe", methods=("mlp-experts",), metric="kappa")
    assert (d["kappa_minus_acpe"], d["n_pairs"]) == (pytest.approx(0.2), 1)


def test_markdown_table_rounds_floats_and_marks_missing_values() -> None:
    text = tc.markdown_table([{"kind": "acpe", "kappa": 0.12345, "sd": None}])
    assert text.splitlines() == ["| kind | kappa | sd |", "|---|---|---|", "| acpe | 0.123 | – |"]


def test_write_outputs_writes_csv_and_json(tmp_path: Path) -> None:
    import json

    paths = tc.write_outputs(tmp_path, "table", [{"kind": "acpe", "kappa": 0.5}])
    assert [p.name for p in paths] == ["table.csv", "table.json"]
    assert (tmp_path / "table.csv").read_text().splitlines()[0] == "kind,kappa"
    assert json.loads((tmp_path / "table.json").read_text()) == [{"kind": "acpe", "kappa": 0.5}]


@pytest.mark.parametrize("which", ["sweep", "bars", "scores"])
def test_figures_are_written_as_png(tmp_path: Path, which: str) -> None:
    rows = [_row(k, s, 0, f, v) for k in ("acpe", "mlp-experts") for s in ("s01", "s02") for f in (0, 1)
            for v in [0.1 + 0.1 * f + (0.2 if k == "acpe" else 0.0)]]
    path = tmp_path / f"{which}.png"
    if which == "sweep":
        curves = tc.summarise(rows, by=("layout", "kind", "n_train_subjects"), unit=("seed",), metric="kappa")
        tc.plot_sweep_panels(curves, path, metric="kappa", panels=("tuh-standard",), lines=("acpe", "mlp-experts"))
    elif which == "bars":
        diffs = tc.differences_to(rows, reference="acpe", methods=("mlp-experts",), metric="kappa")
        tc.plot_difference_bars(diffs, path, metric="kappa", reference="acpe", methods=("mlp-experts",),
                                outline=("s02",))
    else:
        table = tc.per_subject_table(rows, methods=("acpe", "mlp-experts"), metric="kappa")
        tc.plot_subject_scores(table, path, metric="kappa", methods=("acpe", "mlp-experts"))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_band_power_features_put_a_10_hz_rhythm_in_the_alpha_band() -> None:
    t = np.arange(2000) / 200.0
    x = np.sin(2 * np.pi * 10 * t).reshape(1, 1, 10, 200).astype(np.float32)
    features = transfer_real.band_power_features(x)
    assert features.shape == (1, len(transfer_real.BANDS))
    alpha = next(i for i, (lo, hi) in enumerate(transfer_real.BANDS) if lo <= 10 < hi)
    assert int(np.argmax(features[0])) == alpha


def test_eegmat_dataset_yaml_labels_rest_and_arithmetic_by_file(tmp_path: Path) -> None:
    from passport_kit.signals.dataset_spec import load_dataset_spec

    source = tmp_path / "eegmat"
    source.mkdir()
    for name in ("Subject00_1.edf", "Subject00_2.edf", "Subject01_1.edf", "subject-info.csv"):
        (source / name).write_bytes(b"")
    spec = load_dataset_spec(transfer_real.write_dataset_yaml(source, tmp_path / "ds"))
    assert [(r.subject, Path(r.file).name, r.label) for r in spec.recordings] == [
        ("Subject00", "Subject00_1.edf", "rest"), ("Subject00", "Subject00_2.edf", "arithmetic"),
        ("Subject01", "Subject01_1.edf", "rest")]
    assert spec.window_seconds == transfer_real.WINDOW_SECONDS


def test_eegmat_dataset_yaml_without_recordings_is_a_data_error(tmp_path: Path) -> None:
    from passport_kit.errors import DataError

    with pytest.raises(DataError, match="--data"):
        transfer_real.write_dataset_yaml(tmp_path, tmp_path / "ds")


def test_shipped_eegmat_montage_has_the_bipolar_ear_channel() -> None:
    from passport_kit.montage import resolve_montage

    montage = resolve_montage(transfer_real.MONTAGE)
    assert montage.ch_names == ["T3", "T4", "T5", "T6", "A2-A1"]
    refs = montage.reference_positions
    assert np.isnan(refs[:4]).all()
    assert refs[4][0] < 0 < montage.positions[4][0]  # A2 (right) minus A1 (left), never a midpoint


@pytest.mark.parametrize(("scale", "expected"), [
    ({"pre_steps": 600, "pre_batch": 8, "pre_lr": 3e-3}, (600, 8, 3e-3)),
    ({"pre_steps": 40}, (40, tc.PretrainBudget().batch_size, tc.PretrainBudget().lr)),
])
def test_simulated_plan_takes_pretraining_batch_and_lr_from_the_scale(scale: dict, expected: tuple) -> None:
    args = tc.simulated_parser("x", default_out="o", kinds=("acpe",)).parse_args(["--quick"])
    base = {"pre_hours": 1.0, "ft_hours": 1.0, "ft_steps": 3, "seeds": (1, 1)}
    budget = tc.simulated_plan(args, {"quick": base | scale, "default": base | scale}).budget
    assert (budget.steps, budget.batch_size, budget.lr) == expected


def test_subsets_quick_scale_pretrains_past_the_old_40_step_budget() -> None:
    # 40 steps left the expert kinds at the zero predictor (docs/transfer.md); the quick scale
    # must not fall back to a budget of that size, and the default must be at least as large.
    import transfer_subsets

    quick, default = transfer_subsets.SCALES["quick"], transfer_subsets.SCALES["default"]
    assert quick["pre_steps"] * quick["pre_batch"] >= 300 * 8
    assert default["pre_steps"] * default["pre_batch"] >= quick["pre_steps"] * quick["pre_batch"]


def test_pretraining_table_reads_each_checkpoints_held_out_ratio(tmp_path: Path) -> None:
    import json

    folder = tmp_path / "tuh-frontal-acpe-p1"
    folder.mkdir()
    validation = {"val_loss": 0.02, "val_zero_loss": 0.05, "ratio_to_zero": 0.4}
    (folder / "config.json").write_text(json.dumps(
        {"training": {"steps": 600, "wall_time_s": 90.0, "validation": validation}}))
    run = tc.PretrainRun("tuh-frontal", "acpe", 1)
    (row,) = tc.pretraining_table({run.name: folder}, {run.name: run})
    assert row == {"layout": "tuh-frontal", "kind": "acpe", "pretrain_seed": 1, "steps": 600, "val_mse": 0.02,
                   "zeros_mse": 0.05, "ratio_to_zeros": 0.4, "wall_s": 90.0}


@pytest.mark.parametrize(("options", "same"), [
    ({"seeds": 1, "max_steps": 30, "subjects_sweep": (1, 2, 4), "device": "cuda"}, True),
    ({"seeds": 2, "max_steps": 30, "subjects_sweep": (1, 2, 4)}, False),
    ({"seeds": 1, "max_steps": 60, "subjects_sweep": (1, 2, 4)}, False),
    ({"seeds": 1, "max_steps": 30, "subjects_sweep": (1, 2)}, False),
])
def test_a_finished_evaluation_is_reused_only_with_the_same_recipe(options: dict, same: bool) -> None:
    finished = {"seeds": 1, "max_steps": 30, "subjects_sweep": [1, 2, 4], "device": "cpu"}
    assert tc._same_recipe(finished, options) is same


@pytest.mark.parametrize(("steps", "batch", "lr", "ok"), [(600, 8, 2e-3, True), (40, 8, 2e-3, False),
                                                          (600, 4, 2e-3, False), (600, 8, 5e-4, False)])
def test_a_finished_checkpoint_is_reused_only_with_the_same_budget(tmp_path: Path, steps: int, batch: int,
                                                                   lr: float, ok: bool) -> None:
    import json

    (tmp_path / "config.json").write_text(json.dumps(
        {"training": {"steps": 600, "batch_size_per_process": 8, "optimizer": {"lr": 2e-3}}}))
    budget = tc.PretrainBudget(steps=steps, batch_size=batch, lr=lr)
    if ok:
        tc._check_budget(tmp_path, budget)
    else:
        with pytest.raises(ValueError, match="new --out"):
            tc._check_budget(tmp_path, budget)


def test_transfer_benchmarks_keep_the_paper_recipe(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # adapt/evaluate distrust low-quality channels by default; the layout-transfer grids do not.
    seen: dict = {}

    def fake_evaluate(**options: object) -> SimpleNamespace:
        seen.update(options)
        return SimpleNamespace(rows=[])

    monkeypatch.setattr("passport_kit.onboard.evaluate.evaluate", fake_evaluate)
    tc.evaluate_grid({"a": "tiny-mlp"}, {"a": tc.PretrainRun("standard", "mlp", 0)}, tmp_path, seeds=1)
    assert seen["distrust_bad_channels"] is None
    tc.evaluate_grid({"b": "tiny-mlp"}, {"b": tc.PretrainRun("standard", "mlp", 0)}, tmp_path, seeds=1,
                     distrust_bad_channels=0.5)
    assert seen["distrust_bad_channels"] == 0.5
