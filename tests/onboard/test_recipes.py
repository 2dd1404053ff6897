"""The recipe and head registries (issue 37): one class per recipe or head, nothing else names them."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from passport_kit.errors import ConfigError
from passport_kit.onboard.recipe import RecipeOptions, parse_options
from passport_kit.onboard.recipes import RECIPES, Fitted, FitJob, Recipe, get_recipe, recipe_names

PACKAGE = Path(__file__).resolve().parents[2] / "passport_kit"


def recipe_string_branches(root: Path = PACKAGE) -> list[str]:
    """Return ``file:line`` of every comparison of something named ``recipe`` with a string (or strings) outside the
    registry module."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "recipes.py" and path.parent.name == "onboard":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            named = any((isinstance(s, ast.Name) and s.id == "recipe")
                        or (isinstance(s, ast.Attribute) and s.attr == "recipe")
                        or (isinstance(s, ast.Call) and isinstance(s.func, ast.Attribute) and s.func.attr == "get"
                            and s.args and isinstance(s.args[0], ast.Constant) and s.args[0].value == "recipe")
                        for s in sides)
            strings = any(isinstance(s, ast.Constant) and isinstance(s.value, str)
                          or isinstance(s, (ast.Tuple, ast.List, ast.Set))
                          and any(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in s.elts)
                          for s in sides)
            if named and strings:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return found


def test_no_recipe_is_named_in_a_branch_outside_the_registry() -> None:
    assert recipe_string_branches() == []


def test_the_branch_finder_sees_the_forms_it_forbids(tmp_path: Path) -> None:
    pkg = tmp_path / "passport_kit"
    pkg.mkdir()
    (pkg / "a.py").write_text("if cfg.recipe == 'finetune':\n    pass\nif recipe in ('probe', 'auto'):\n    pass\n"
                              "if data.get('recipe') == 'probe':\n    pass\nif cfg.recipe_line == 'x':\n    pass\n")
    assert recipe_string_branches(pkg) == ["passport_kit/a.py:1", "passport_kit/a.py:3", "passport_kit/a.py:5"]


def test_every_recipe_fits_a_registered_head_and_is_an_option() -> None:
    from passport_kit.model.heads import Head

    assert recipe_names()[0] == "auto" and set(recipe_names()) == {"auto", "probe", "finetune"}
    for name in recipe_names():
        recipe = get_recipe(name)
        assert Head.of_kind(recipe.head).kind == recipe.head
        assert RecipeOptions(recipe=name).recipe == name
    with pytest.raises(ConfigError, match="unknown recipe 'nope'; choose one of auto, probe, finetune"):
        get_recipe("nope")
    with pytest.raises(ConfigError, match="invalid adapt option --recipe \\(recipe\\): unknown recipe 'nope'"):
        parse_options(RecipeOptions, "adapt", None, {"recipe": "nope"})


@pytest.fixture
def extra_recipe() -> Iterator[type[Recipe]]:
    class HeadOnly(Recipe):
        """A recipe defined outside the package: registered by subclassing, refusing what it does not take."""

        name = "head-only"
        help = "the probe's head and nothing else"
        takes = ("lr",)

        def refuse(self, data: dict[str, Any], given: list[str]) -> str | None:
            extra = [k for k in given if k not in self.takes]
            return f"recipe '{self.name}' ignores {', '.join(extra)}" if extra else None

        def head_options(self, **_: Any) -> dict[str, Any]:
            return {"kind": "probe", "n_channels": 2}

        def fit(self, options: Any, model: Any, job: FitJob) -> Fitted:
            raise NotImplementedError

    try:
        yield HeadOnly
    finally:
        RECIPES.remove("head-only")


def test_a_new_recipe_is_one_subclass(extra_recipe: type[Recipe]) -> None:
    from passport_kit.cli.onboard import _recipe_option

    assert "head-only" in recipe_names()
    assert RecipeOptions(recipe="head-only", lr=0.01).lr == 0.01  # an option it takes
    with pytest.raises(ConfigError, match="recipe 'head-only' ignores epochs"):
        parse_options(RecipeOptions, "adapt", None, {"recipe": "head-only", "epochs": 3})
    annotation, _ = _recipe_option("recipe")
    assert "head-only" in repr(annotation)  # the CLI's choices are the registry's names
    assert get_recipe("head-only").validation_fraction(RecipeOptions()) is None
    assert get_recipe("head-only").chosen_by(RecipeOptions()) == []


def test_a_second_recipe_of_a_taken_name_is_refused() -> None:
    with pytest.raises(ValueError, match="a recipe named 'probe' is already registered"):
        type("AnotherProbe", (Recipe,), {"name": "probe"})
    assert get_recipe("probe").help.startswith("the same ladder")  # the shipped one stays


def test_recipes_record_what_they_use() -> None:
    probe, finetune = get_recipe("probe"), get_recipe("finetune")
    options = RecipeOptions(recipe="finetune", lr=1e-3)
    assert finetune.validation_fraction(options) == 0.2 and finetune.chosen_by(options) == ["lr"]
    assert finetune.recorded_head_lr(options, 0) == options.settings(0).resolved_head_lr
    assert probe.recorded_head_lr(RecipeOptions(recipe="probe"), 0) is None
    assert probe.head_options(n_channels=3, dropout=0.1, probe_layer=1, bands=((1.0, 4.0),)) == {
        "kind": "probe", "n_channels": 3, "layer": 1, "bands": ((1.0, 4.0),)}
    assert finetune.head_options(n_channels=3, dropout=0.3, probe_layer=1, bands=()) == {"kind": "mlp",
                                                                                          "dropout": 0.3}


def test_heads_rebuild_from_their_settings_and_refuse_another_heads_keywords() -> None:
    from passport_kit.model import Classifier, build_backbone
    from passport_kit.model.config import model_config

    backbone = build_backbone(model_config("cbramod-tiny", "mlp-experts"))
    for settings in ({"kind": "mlp", "n_classes": 3, "pooling": "mean", "n_patches": None, "hidden": 50,
                      "dropout": 0.2},
                     {"kind": "probe", "n_classes": 2, "n_channels": 4, "context": 0, "layer": 1,
                      "pooling_probe": "meanstd", "bands": [[1.0, 4.0]], "scaling": "none", "n_prior": 0,
                      "prior": None, "temperature": 1.0, "smoothing": None, "scales_prior": True}):
        assert Classifier(backbone, **settings).head_settings == settings
    with pytest.raises(ConfigError, match="head 'mlp' does not take these settings"):
        Classifier(backbone, 2, kind="mlp", n_channels=4)
    with pytest.raises(ConfigError, match="unknown head kind 'rnn'"):
        Classifier(backbone, 2, kind="rnn")
