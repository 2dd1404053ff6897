"""Issue 60: a rung sees the ladder through a typed view, the ladder has one CV loop, and a recipe declares what the
ladder reads."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import passport_kit.onboard.rungs as rungs
from passport_kit.onboard.ladder import Ladder
from passport_kit.onboard.rungs import LadderView

ONBOARD = Path(rungs.__file__).resolve().parent


def _view_members() -> set[str]:
    return {n for n in dir(LadderView) if not n.startswith("_")} | set(LadderView.__annotations__)


def _ladder_uses(tree: ast.AST) -> tuple[set[str], list[str]]:
    """Return the attributes of ``ladder`` the rungs read, and those they assign (``ladder.x =``, ``ladder.x[k] =``)."""
    read, written = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ladder":
            read.add(node.attr)
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                base = target.value if isinstance(target, ast.Subscript) else target
                if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and base.value.id == "ladder":
                    written.append(base.attr)
    return read, written


def test_the_rungs_use_only_what_the_view_declares_and_assign_nothing_of_the_ladder() -> None:
    read, written = _ladder_uses(ast.parse(Path(rungs.__file__).read_text(encoding="utf-8")))
    assert read and read <= _view_members(), read - _view_members()
    assert written == []


def test_the_ladder_is_a_view() -> None:
    missing = [n for n in _view_members() if not hasattr(Ladder, n) and n not in ("data", "se_multiple", "min_effect")]
    assert missing == []
    signatures = {n: inspect.signature(getattr(LadderView, n)) for n in dir(LadderView)
                  if not n.startswith("_") and inspect.isfunction(getattr(LadderView, n))}
    for name, signature in signatures.items():
        assert list(inspect.signature(getattr(Ladder, name)).parameters) == list(signature.parameters), name


def test_the_ladder_cross_validates_in_one_loop() -> None:
    tree = ast.parse((ONBOARD / "ladder.py").read_text(encoding="utf-8"))
    loops = [node for node in ast.walk(tree) if isinstance(node, ast.For)
             and "fit_rows" in ast.unparse(node.target) and "test_rows" in ast.unparse(node.target)
             and any(isinstance(n, ast.For) for n in ast.walk(node) if n is not node)]  # folds, then a C grid inside
    assert len(loops) == 1


def test_a_recipe_declares_what_the_ladder_reads() -> None:
    from passport_kit.onboard.recipes import ProbeRecipe, Recipe

    assert "ladder_inputs" in vars(ProbeRecipe)
    fit = ast.parse(inspect.cleandoc("\n" + inspect.getsource(ProbeRecipe.fit)))
    lambdas = [ast.unparse(n) for n in ast.walk(fit) if isinstance(n, ast.Lambda) and "plain" in ast.unparse(n.args)]
    assert lambdas == []  # the ladder's inputs come from the hook, not an inline lambda
    assert issubclass(ProbeRecipe, Recipe)
