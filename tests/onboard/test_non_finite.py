"""Non-finite weights are never written and never used (issue 28, item 1)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from typer.testing import CliRunner

from passport_kit.checkpoint.seal import reseal_bundle
from passport_kit.cli.app import app

RUN = CliRunner()


def test_diverging_adapt_exits_2_and_writes_no_bundle(tmp_path: Path, montage_yaml: Path, dataset: Path,
                                                     checkpoint: str) -> None:
    out = tmp_path / "lrhuge"
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                              checkpoint, "--batch-size", "8", "--out", str(out), "--no-progress", "--max-steps", "10",
                              "--lr", "1e12", "--head-lr", "1e12"])
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("error: training diverged at step ") and "learning rate" in line
    assert not (out / "adapter.json").exists() and not (out / "adapter.safetensors").exists()


def test_first_non_finite_names_the_tensor() -> None:
    from passport_kit.onboard.finetune import first_non_finite

    good, bad = torch.zeros(3), torch.tensor([1.0, float("nan")])
    assert first_non_finite([("a", good)]) is None
    assert first_non_finite([("a", good), ("b", bad)]) == "b"


def _poison(weights: Path) -> None:
    tensors = load_file(weights)
    name = sorted(tensors)[0]
    tensors[name] = torch.full_like(tensors[name], float("nan"))
    save_file(tensors, weights)


def test_predict_refuses_a_bundle_with_nan_tensors(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    poisoned = tmp_path / "nan-bundle"
    shutil.copytree(bundle, poisoned)
    _poison(poisoned / "adapter.safetensors")
    result = RUN.invoke(app, ["predict", "--adapter", str(poisoned), str(dataset / "s01.edf"), "--out",
                              str(tmp_path / "pred")])
    assert result.exit_code == 2, result.output
    assert "changed after adapt wrote it (adapter.safetensors)" in result.output  # the seal first (issue 57)
    reseal_bundle(poisoned)  # sealed as it is, NaN tensors are still refused
    result = RUN.invoke(app, ["predict", "--adapter", str(poisoned), str(dataset / "s01.edf"), "--out",
                              str(tmp_path / "pred")])
    assert result.exit_code == 2, result.output
    assert "NaN or infinite" in result.output and "refused" in result.output
    assert not list((tmp_path / "pred").rglob("*_summary.json"))


def test_a_base_checkpoint_with_nan_tensors_is_refused(tmp_path: Path, make_tiny_checkpoint) -> None:
    import json

    from passport_kit.checkpoint import load_base_checkpoint, sha256_bytes, user_checkpoint_dir
    from passport_kit.errors import CheckpointError

    name = make_tiny_checkpoint("tiny-nan")
    folder = user_checkpoint_dir() / name
    try:
        _poison(folder / "model.safetensors")
        config = json.loads((folder / "config.json").read_text())
        config["weights_sha256"] = sha256_bytes((folder / "model.safetensors").read_bytes())  # a consistent forgery
        (folder / "config.json").write_text(json.dumps(config))
        with pytest.raises(CheckpointError, match="NaN or infinite"):
            load_base_checkpoint(name)
    finally:
        shutil.rmtree(folder)


def test_saving_non_finite_weights_is_refused(tmp_path: Path) -> None:
    from passport_kit.checkpoint import save_base_checkpoint
    from passport_kit.errors import CheckpointError
    from passport_kit.model import build_backbone, model_config

    backbone = build_backbone(model_config("cbramod-tiny", "acpe"))
    with torch.no_grad():
        next(backbone.parameters()).fill_(float("inf"))
    with pytest.raises(CheckpointError, match="not written"):
        save_base_checkpoint(backbone, tmp_path / "ckpt", name="inf-ckpt")
    assert not (tmp_path / "ckpt").exists()


def test_checkpoints_show_checks_the_recorded_hash(make_tiny_checkpoint) -> None:
    import json

    from passport_kit.checkpoint import user_checkpoint_dir

    name = make_tiny_checkpoint("tiny-show")
    folder = user_checkpoint_dir() / name
    try:
        shown = RUN.invoke(app, ["checkpoints", "show", name])
        assert shown.exit_code == 0 and "(model.safetensors matches it)" in shown.output
        _poison(folder / "model.safetensors")
        shown = RUN.invoke(app, ["checkpoints", "show", name])
        assert "DIFFERS: changed or damaged" in shown.output
        assert json.loads(RUN.invoke(app, ["checkpoints", "show", name, "--json"]).output)["weights"] == "differs"
    finally:
        shutil.rmtree(folder)
