"""Every training option acts or is refused (issue 27 item 1): gradient-only options select the finetune recipe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.onboard.adapt import make_config, training_record
from passport_kit.onboard.run_file import adapt_config_from_file

RUN = CliRunner()


@pytest.mark.parametrize("option", [
    {"lr": 1e-2}, {"epochs": 3}, {"train": "full"}, {"head_lr": 1e-3}, {"patience": 2}, {"balance": "sampler"},
    {"dropout": 0.3}, {"validation_fraction": 0.4},
])
def test_a_gradient_only_option_selects_finetune(option: dict) -> None:
    assert make_config(montage="m", data="d", **option).recipe == "finetune"


@pytest.mark.parametrize("option", [{}, {"train": "head"}, {"lr": 1e-4}, {"batch_size": 32}])
def test_options_the_probe_uses_or_defaults_keep_the_auto_recipe(option: dict) -> None:
    assert make_config(montage="m", data="d", **option).recipe == "auto"


@pytest.mark.parametrize(("options", "named"), [(["--lr", "0.01"], "lr"), (["--epochs", "3"], "epochs"),
                                                (["--train", "full"], "train"), (["--head-lr", "0.001"], "head_lr")])
def test_probe_named_with_a_gradient_option_exits_2_naming_the_recipe(tmp_path: Path, montage_yaml: Path,
                                                                      dataset: Path, options: list[str],
                                                                      named: str) -> None:
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--out",
                              str(tmp_path / "b"), "--recipe", "probe", *options])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and f"recipe 'probe' ignores {named}" in lines[0], result.output


def test_probe_records_no_learning_rate_and_its_adapter_json_repeats_a_probe(tmp_path: Path) -> None:
    assert training_record(make_config(montage="m", data="d"))["head_lr"] is None  # auto: lr only if given
    cfg = make_config(montage="m", data="d", recipe="probe")
    assert training_record(cfg)["head_lr"] is None
    # A probe bundle written before issue 27 recorded a resolved head_lr: given to --config it stays a probe.
    old = {"format": "passport-kit/adapter-bundle", "training": {**training_record(cfg), "head_lr": 0.0005}}
    (tmp_path / "adapter.json").write_text(json.dumps(old))
    assert adapt_config_from_file(tmp_path / "adapter.json").recipe == "probe"


def test_adapt_names_its_recipe_and_counts_what_the_probe_fitted(tmp_path: Path, montage_yaml: Path, dataset: Path,
                                                                checkpoint: str) -> None:
    from passport_kit.checkpoint import load_adapter_bundle

    out = tmp_path / "adapter"
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                              checkpoint, "--out", str(out), "--no-progress", "--recipe", "probe"])
    assert result.exit_code == 0, result.output
    assert "recipe probe\n" in result.output
    model, _ = load_adapter_bundle(out)
    fitted = model.head.linear.weight.numel() + model.head.linear.bias.numel()
    assert f"fitted: the read-out head.linear ({fitted:,} params)" in result.output
    assert not result.output.splitlines()[1].startswith("trainable params")


@pytest.mark.parametrize("command", ["adapt", "evaluate"])
def test_recipe_is_shown_as_a_choice(command: str) -> None:
    result = RUN.invoke(app, [command, "--help"])
    assert "--recipe <auto|probe|finetune>" in result.output
    assert "validation subjects). Default: finetune if an option only it uses is given" in " ".join(result.output.split())
