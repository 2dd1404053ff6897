"""adapt --config: a run file (YAML, or a bundle's adapter.json) fills AdaptConfig; options given override it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app

RUN = CliRunner()


def _training(bundle: Path) -> dict:
    return json.loads((bundle / "adapter.json").read_text())["training"]


def test_run_file_settings_apply_and_given_options_override(tmp_path: Path, montage_yaml: Path, dataset: Path,
                                                            checkpoint: str) -> None:
    run = tmp_path / "run.yaml"
    run.write_text(f"montage: {montage_yaml}\ndata: {dataset}\ncheckpoint: {checkpoint}\nrecipe: finetune\n"
                   "max_steps: 2\nbatch_size: 8\nseed: 5\nmask_bad_channels: 0.4\n")
    result = RUN.invoke(app, ["adapt", "--config", str(run), "--out", str(tmp_path / "b"), "--seed", "7",
                              "--no-progress"])
    assert result.exit_code == 0, result.output
    training = _training(tmp_path / "b")
    assert (training["max_steps"], training["batch_size"], training["mask_bad_channels"]) == (2, 8, 0.4)
    assert training["seed"] == 7  # given on the command line
    assert training["epochs"] == 50  # neither: AdaptConfig's default


def test_adapter_json_repeats_its_run(tmp_path: Path, bundle: Path) -> None:
    # Into its own folder: the same settings, so nothing to train.
    same = RUN.invoke(app, ["adapt", "--config", str(bundle / "adapter.json"), "--out", str(bundle), "--no-progress"])
    assert same.exit_code == 0, same.output
    assert "left as it was" in same.output
    again = RUN.invoke(app, ["adapt", "--config", str(bundle / "adapter.json"), "--out", str(tmp_path / "again"),
                             "--no-progress"])
    assert again.exit_code == 0, again.output
    assert _training(tmp_path / "again") == _training(bundle)


@pytest.mark.parametrize(("text", "message"), [
    ("montage: [unclosed\n", "is not valid YAML at line"),
    ("- just\n- a list\n", "must hold a mapping of adapt settings"),
    ("max_stepz: 3\n", "unknown setting(s) max_stepz"),
    ("max_steps: -1\n", "invalid adapt setting max_steps in run file"),
    ("recipe: probe\nmax_steps: 3\n", "recipe 'probe' ignores max_steps"),
])
def test_bad_run_file_is_one_line_exit_2(tmp_path: Path, montage_yaml: Path, dataset: Path, text: str,
                                         message: str) -> None:
    run = tmp_path / "run.yaml"
    run.write_text(f"montage: {montage_yaml}\ndata: {dataset}\n" + text if text[0] != "-" else text)
    result = RUN.invoke(app, ["adapt", "--config", str(run), "--out", str(tmp_path / "b")])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output


def test_adapt_without_montage_or_config_says_so(dataset: Path) -> None:
    result = RUN.invoke(app, ["adapt", "--data", str(dataset)])
    assert result.exit_code == 2 and "adapt needs --montage (or a --config run file that gives it)" in result.output


@pytest.mark.parametrize(("text", "message"), [
    ("seed: true\n", "invalid adapt setting seed in run file"),            # issue 57: read as 1
    ("max_steps: '200'\n", "invalid adapt setting max_steps in run file"),  # text where a number is meant
    ("seed: 3\nseed: 4\n", "the key 'seed' is given twice"),               # the last one silently won
])
def test_a_run_file_is_read_strictly(tmp_path: Path, montage_yaml: Path, dataset: Path, text: str,
                                     message: str) -> None:
    run = tmp_path / "run.yaml"
    run.write_text(f"montage: {montage_yaml}\ndata: {dataset}\n" + text)
    result = RUN.invoke(app, ["adapt", "--config", str(run), "--out", str(tmp_path / "b")])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.output


def test_relative_paths_of_a_run_file_are_read_from_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    from passport_kit.onboard.run_file import adapt_config_from_file

    (tmp_path / "runs").mkdir()
    run = tmp_path / "runs" / "run.yaml"
    run.write_text("montage: ../montages/ear.yaml\ndata: ../data/ear\nout: ear-out\ncheckpoint: cbramod-base\n"
                   "instance_norm: true\n")
    monkeypatch.chdir(tmp_path)  # another folder than the run file's
    cfg = adapt_config_from_file(run)
    assert cfg.data == tmp_path / "runs" / ".." / "data" / "ear"
    assert cfg.out == tmp_path / "runs" / "ear-out"
    assert cfg.montage == str(tmp_path / "runs" / ".." / "montages" / "ear.yaml")
    assert cfg.checkpoint == "cbramod-base" and cfg.instance_norm is True  # a name stays a name; a switch is true
