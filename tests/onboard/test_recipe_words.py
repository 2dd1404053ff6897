"""The words that describe a recipe are the recipe's own, and say what it does today (issue 49).

``adapt --help`` described ``--recipe auto`` as "the probe, then the mixture adapter trained from its read-out
(LP-FT) only where cross-validation ... says it helps": the recipe before the ladder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.onboard.recipes import get_recipe, recipe_names

#: What --help said of the auto recipe before the ladder.
_BEFORE_THE_LADDER = ("the probe, then the mixture adapter", "LP-FT) only where cross-validation",
                      "over the training subjects says it helps")


def _flat(text: str) -> str:
    """Return ``text`` on one line, as written: single spaces, words that --help broke at a hyphen joined again."""
    return re.sub(r"(\w)- (\w)", r"\1-\2", " ".join(text.split()))


def _help(*command: str) -> str:
    result = CliRunner(env={"COLUMNS": "80"}).invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    return _flat(result.output)


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Yield the path of every command and group under ``group`` (a click group: typer vendors click)."""
    for name, command in group.commands.items():
        yield (*path, name)
        if hasattr(command, "commands"):  # a group
            yield from _commands(command, (*path, name))


@pytest.mark.parametrize("command", ["adapt", "evaluate"])
def test_recipe_help_is_each_recipes_own_description(command: str) -> None:
    text = _help(command)
    assert all(f"{name}: {_flat(get_recipe(name).help)}" in text for name in recipe_names())


def test_the_auto_recipe_says_where_the_ladder_starts_and_when_it_climbs() -> None:
    words = get_recipe("auto").help
    assert "starts from the textbook band-power classifier" in words
    assert "for sleep staging, from a pretrained sleep stager (YASA built in" in words
    assert "only where cross-validation over your subjects shows a clear paired gain" in words


@pytest.mark.parametrize("command", [c for c in _commands(typer.main.get_command(app)) if not c[0].startswith("_")],
                         ids=" ".join)
def test_no_help_describes_the_recipe_before_the_ladder(command: tuple[str, ...]) -> None:
    text = _help(*command)
    assert not [words for words in _BEFORE_THE_LADDER if words in text]
