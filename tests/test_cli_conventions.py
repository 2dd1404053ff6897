"""CLI conventions a user of git, pip or MNE expects (issue 19, item 8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit import __version__
from passport_kit.cli.app import app


def test_version_option() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"passport-kit {__version__}"


@pytest.mark.parametrize("args", [[], ["data"], ["montages"], ["checkpoints"]])
def test_a_group_without_a_command_prints_help_and_exits_0(args: list[str]) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0 and "Usage:" in result.output


@pytest.mark.parametrize("command", ["adapt", "predict", "evaluate"])
def test_help_at_80_columns_keeps_every_option_name(command: str) -> None:
    result = CliRunner(env={"COLUMNS": "80"}).invoke(app, [command, "--help"])
    assert result.exit_code == 0
    assert "…" not in result.output and "--mask-uncorrelated-channels" in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80


def _help_sections(command: str) -> dict[str, str]:
    """Return ``{section title: its text}`` of ``command --help`` at 80 columns (titles: unindented 'Title:')."""
    result = CliRunner(env={"COLUMNS": "80"}).invoke(app, [command, "--help"])
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80
    sections: dict[str, str] = {}
    title = ""
    for line in result.output.splitlines():
        if line.endswith(":") and not line.startswith(" "):
            title = line[:-1]
        else:
            sections[title] = sections.get(title, "") + line + "\n"
    return sections


@pytest.mark.parametrize(("command", "panels"), [
    ("adapt", ["Data", "Model", "Training (probe)", "Training (finetune only)", "Poor contacts", "Compute", "Output"]),
    ("evaluate", ["Data", "Model", "Evaluation", "Training (probe)", "Training (finetune only)", "Poor contacts"]),
    ("predict", ["Arguments", "Data", "Scorer's labels", "Model", "Poor contacts", "Compute", "Output"]),
])
def test_help_groups_the_options_in_panels_within_80_columns(command: str, panels: list[str]) -> None:
    assert [t for t in _help_sections(command) if t in panels] == panels  # every panel, in this order


@pytest.mark.parametrize("command", ["adapt", "evaluate", "predict"])
def test_contact_policy_options_are_under_poor_contacts(command: str) -> None:
    from passport_kit.contacts import THRESHOLDS

    contacts = _help_sections(command)["Poor contacts"]
    assert all("--" + key.replace("_", "-") in contacts for key in THRESHOLDS)
    assert ("--quality-gate" in contacts) == (command != "predict")


def test_finetune_only_options_are_under_their_panel() -> None:
    sections = _help_sections("adapt")
    assert all(f"--{name} " in sections["Training (finetune only)"] for name in ("lr", "epochs", "max-steps", "train"))
    assert "--context " in sections["Training (probe)"] and "--lr " not in sections["Training (probe)"]


def test_pretrain_help_lists_the_registered_embedding_kinds() -> None:
    from passport_kit.model import EMBEDDING_KINDS

    result = CliRunner().invoke(app, ["pretrain", "--help"])
    assert f"Channel embedding: {', '.join(EMBEDDING_KINDS)}." in " ".join(result.output.split())  # unwrapped


def test_shell_completion_is_offered() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert "--install-completion" in result.output and "--show-completion" in result.output


def test_data_inspect_json(tmp_path: Path) -> None:
    import mne
    import numpy as np

    raw = mne.io.RawArray(np.zeros((2, 2560)) + 1e-6, mne.create_info(["C3", "C4"], 256.0, "eeg"), verbose="error")
    mne.export.export_raw(tmp_path / "r.edf", raw, fmt="edf", verbose="error")
    result = CliRunner().invoke(app, ["data", "inspect", str(tmp_path / "r.edf"), "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["sfreq"] == 256.0 and info["n_times"] == 2560 and [c["name"] for c in info["channels"]] == ["C3", "C4"]


def test_the_cli_starts_without_torch() -> None:
    # adapt/evaluate's options come from onboard.recipe.RecipeOptions at startup: it must stay torch-free.
    import subprocess
    import sys

    code = "import sys, passport_kit.cli.app; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"
