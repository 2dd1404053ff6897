"""``passport-kit pretrain`` end to end on simulated recordings, and its user errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.checkpoint import load_base_checkpoint
from passport_kit.cli.app import app

runner = CliRunner()


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return a simulated dataset folder: 2 subjects x 3 min on tuh-standard."""
    from passport_kit.signals.simulator.simulate import simulate_dataset

    return simulate_dataset("tuh-standard", tmp_path_factory.mktemp("sim") / "sim", n_subjects=2, hours=0.05, seed=0)


def test_pretrain_command_writes_a_checkpoint(simulated: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, [
        "pretrain", "--data", f"{simulated}:tuh-standard", "--embedding", "xattn-experts",
        "--config", "cbramod-tiny", "--steps", "1", "--batch-size", "2", "--amplitude-limit-uv", "none",
        "--val-subjects", "s02",
        "--device", "cpu", "--threads", "1", "--no-progress", "--out", str(out), "--name", "cli-test",
    ])
    assert result.exit_code == 0, result.output
    assert f"base checkpoint written to {out}" in result.output
    backbone, info = load_base_checkpoint(out)
    assert info.name == "cli-test" and backbone.config.embedding == "xattn-experts"
    card = (out / "MODEL_CARD.md").read_text()
    assert "tuh-standard" in card and "--val-subjects s02" in card
    assert [d["val_subjects"] for d in info.training["data"]] == [["s02"]]


@pytest.mark.parametrize(("quiet", "shown"), [([], True), (["--quiet"], False), (["-q"], False)])
def test_pretrain_quiet_hides_its_progress(simulated: Path, tmp_path: Path, quiet: list[str], shown: bool) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, [
        "pretrain", "--data", f"{simulated}:tuh-standard", "--embedding", "acpe", "--config", "cbramod-tiny",
        "--steps", "1", "--batch-size", "2", "--amplitude-limit-uv", "none", "--device", "cpu", "--threads", "1",
        "--out", str(out), *quiet,
    ])
    assert result.exit_code == 0, result.output
    assert ("step 1/1 loss" in result.output) == shown  # no terminal here: the plain progress line
    assert f"base checkpoint written to {out}" in result.output  # the result stays


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--embedding", "sinusoid"], "unknown embedding 'sinusoid'"),
        (["--embedding", "acpe", "--config", "cbramod-huge"], "unknown architecture 'cbramod-huge'"),
        (["--embedding", "acpe", "--device", "tpu"], "unknown device 'tpu'"),
        (["--embedding", "acpe", "--amplitude-limit-uv", "loud"], "--amplitude-limit-uv must be"),
        (["--embedding", "acpe", "--notch", "mains"], "--notch must be a frequency in Hz"),
        (["--embedding", "acpe", "--steps", "0"], "invalid pretraining option steps"),
    ],
)
def test_pretrain_user_errors_exit_2_with_one_line(simulated: Path, tmp_path: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["pretrain", "--data", str(simulated), "--montage", "tuh-standard",
                                 "--out", str(tmp_path / "run"), "--no-progress", *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_pretrain_without_montage_says_how_to_name_it(tmp_path: Path) -> None:
    result = runner.invoke(app, ["pretrain", "--data", str(tmp_path), "--embedding", "acpe", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "pass --montage NAME or --data DIR:MONTAGE" in result.output
