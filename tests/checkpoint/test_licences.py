"""The licences: passport-kit's own (MIT: LICENSE, pyproject, README agree), a base checkpoint's, and those of what an
adapter bundle contains or needs to predict (issue 58 item 6)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.checkpoint.licences import bundle_licences, copyleft, licences_line

ROOT = Path(__file__).resolve().parents[2]
RUN = CliRunner()


def test_the_repository_pyproject_and_readme_say_mit() -> None:
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in licence
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    # PEP 639: the wheel's metadata carries License-Expression: MIT and the LICENSE file itself
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "## Licence" in readme and "passport-kit is MIT (`LICENSE`" in readme and "AGPL-3.0" in readme


@pytest.mark.parametrize("folder", sorted(p.name for p in (ROOT / "checkpoints").iterdir() if p.is_dir()))
def test_every_shipped_checkpoint_states_its_licence_and_show_prints_it(folder: str) -> None:
    stated = json.loads((ROOT / "checkpoints" / folder / "config.json").read_text())["licence"]
    assert stated.startswith("MIT") and f"- licence: {stated}" in (ROOT / "checkpoints" / folder /
                                                                    "MODEL_CARD.md").read_text()
    shown = RUN.invoke(app, ["checkpoints", "show", str(ROOT / "checkpoints" / folder)])
    assert shown.exit_code == 0, shown.output
    assert f"licence:       {stated}" in shown.output


def test_a_bundle_states_what_it_contains_and_a_copyleft_stager_is_named() -> None:
    licences = bundle_licences("passport-small-mlp", "MIT (...)", {"name": "yasa+gssc"})
    assert licences["passport-kit (code and the adapter's own tensors)"] == "MIT"
    assert licences["base checkpoint passport-small-mlp"] == "MIT (...)"
    assert licences["sleep stager yasa"] == "BSD-3-Clause" and licences["sleep stager gssc"] == "AGPL-3.0"
    assert list(copyleft(licences)) == ["sleep stager gssc"]
    assert "base checkpoint old: not stated in its config.json" in licences_line(bundle_licences("old", None, None))


def test_adapt_with_gssc_says_its_licence_before_it_runs() -> None:
    from passport_kit.cli.onboard import prior_licence_note

    assert "sleep stager gssc is AGPL-3.0, not a passport-kit dependency" in prior_licence_note("gssc")
    assert prior_licence_note("yasa") is None and prior_licence_note("auto") is None
