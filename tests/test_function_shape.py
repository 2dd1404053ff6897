"""The package's functions stay readable (issues 37, 48): a workflow takes its option objects, not a dozen flat keywords."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "passport_kit"
#: The most parameters a function may take (self and cls not counted; *args and **kwargs count one each).
MOST_PARAMETERS = 10
#: The functions that may take more, each with why. Anything else over the limit groups its parameters in an options
#: object or a small dataclass instead.
WIDER: dict[str, str] = {
    "passport_kit/cli/data.py::inspect_cmd": "a Typer command: its parameters are its command-line options",
    "passport_kit/cli/onboard.py::adapt_command": "a Typer command: its parameters are its command-line options",
    "passport_kit/cli/onboard.py::evaluate_command": "a Typer command: its parameters are its command-line options",
    "passport_kit/cli/onboard.py::predict_command": "a Typer command: its parameters are its command-line options",
    "passport_kit/cli/live.py::stream_cmd": "a Typer command: its parameters are its command-line options",
    "passport_kit/model/heads.py::ProbeHead.build": "one keyword per key of adapter.json's head block, which a bundle "
                                                    "passes as Classifier(backbone, **head)",
    "passport_kit/model/heads.py::ProbeHead.__init__": "the backbone's width and build's keywords, one per stored key",
    "passport_kit/engine/forward.py::predict_proba": "the forward pass every room calls: each keyword an optional "
                                                     "per-row input (index, masks, recordings, prior, dead channels) "
                                                     "documented with its shape, or how the batches run",
}


class _Definitions(ast.NodeVisitor):
    """Collects every function by ``path::Qualified.name`` (a method under its class, a nested function under its
    own); a name defined twice in one scope is kept twice, the later one with its line."""

    def __init__(self, prefix: str) -> None:
        self.prefix, self.scope = prefix, []
        self.found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}

    def _enter(self, node: ast.AST, name: str) -> None:
        self.scope.append(name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._enter(node, node.name)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        key = f"{self.prefix}::{'.'.join([*self.scope, node.name])}"
        self.found[f"{key}@{node.lineno}" if key in self.found else key] = node
        self._enter(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef


def functions(root: Path = PACKAGE) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Return every function and method below ``root`` by ``path::Qualified.name``."""
    out = {}
    for file in sorted(root.rglob("*.py")):
        visitor = _Definitions(str(file.relative_to(root.parent)))
        visitor.visit(ast.parse(file.read_text(encoding="utf-8")))
        out |= visitor.found
    return out


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Return how many parameters ``node`` takes, not counting ``self`` and ``cls``."""
    a = node.args
    names = [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x is not None]
    return len([n for n in names if n not in ("self", "cls")])


def test_no_function_takes_more_than_10_parameters_but_the_named_ones() -> None:
    found = functions()
    wide = {name: parameters(node) for name, node in found.items()
            if parameters(node) > MOST_PARAMETERS and name not in WIDER}
    assert wide == {}
    assert [name for name in WIDER if name not in found or parameters(found[name]) <= MOST_PARAMETERS] == []


def test_the_workflows_are_short_loops_over_named_steps() -> None:
    found = functions()
    for name in ("passport_kit/inference/predict.py::predict", "passport_kit/onboard/finetune.py::fit",
                 "passport_kit/onboard/check.py::check"):
        node = found[name]
        assert node.end_lineno - node.lineno + 1 < 80, name
        assert parameters(node) < 10, name


def test_the_counter_counts_every_kind_of_parameter_and_tells_namesakes_apart(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("class A:\n    def f(self, a, /, b, *c, d, **e):\n        pass\n"
                                           "class B:\n    def f(self):\n        def g(x): pass\n"
                                           "def h(): pass\ndef h(y): pass\n")
    assert {name: parameters(node) for name, node in functions(tmp_path / "pkg").items()} == {
        "pkg/a.py::A.f": 5, "pkg/a.py::B.f": 0, "pkg/a.py::B.f.g": 1, "pkg/a.py::h": 0, "pkg/a.py::h@8": 1}
