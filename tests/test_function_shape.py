"""The package's functions stay readable (issue 37): a workflow takes its option objects, not a dozen flat keywords."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "passport_kit"
#: The most parameters a function may take (self and cls not counted; *args and **kwargs count one each).
MOST_PARAMETERS = 12


def functions(root: Path = PACKAGE) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Return every function and method below ``root`` by ``path::name`` (the last of a name wins)."""
    out = {}
    for file in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[f"{file.relative_to(root.parent)}::{node.name}"] = node
    return out


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Return how many parameters ``node`` takes, not counting ``self`` and ``cls``."""
    a = node.args
    names = [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x is not None]
    return len([n for n in names if n not in ("self", "cls")])


def test_no_function_takes_more_than_12_parameters() -> None:
    wide = {name: parameters(node) for name, node in functions().items() if parameters(node) > MOST_PARAMETERS}
    assert wide == {}


def test_the_workflows_are_short_loops_over_named_steps() -> None:
    found = functions()
    for name in ("passport_kit/inference/predict.py::predict", "passport_kit/onboard/finetune.py::fit"):
        node = found[name]
        assert node.end_lineno - node.lineno + 1 < 80, name
        assert parameters(node) < 10, name


def test_the_counter_counts_every_kind_of_parameter(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("class A:\n    def f(self, a, /, b, *c, d, **e):\n        pass\n")
    assert {name: parameters(node) for name, node in functions(tmp_path / "pkg").items()} == {"pkg/a.py::f": 5}
