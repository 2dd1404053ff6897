"""docs/architecture.md names files and definitions that exist (issue 37: three of its points had gone stale)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "passport_kit"
#: A file the page names in backticks, with an optional ``::name`` (``pretrain/run.py::_Run._build_training``).
NAMED = re.compile(r"`((?:[a-z_]+/)*[a-z_]+\.py)(?:::([A-Za-z_][A-Za-z_.]*))?`")


def resolve(relative: str) -> Path | None:
    """Return the file a path on the page means: from the repository, or inside the package, or inside cli/."""
    for base in (ROOT, PACKAGE, PACKAGE / "cli"):
        if (base / relative).is_file():
            return base / relative
    return None


def defines(path: Path, dotted: str) -> bool:
    """Return whether ``path`` defines ``dotted`` (a function, class, method, or a module-level name)."""
    scope: list[ast.stmt] = ast.parse(path.read_text(encoding="utf-8")).body
    for part in dotted.split("."):
        found = None
        for node in scope:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == part:
                found = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == part for t in targets):
                    found = node
        if found is None:
            return False
        scope = getattr(found, "body", [])
    return True


def stale(text: str) -> list[str]:
    """Return the files and definitions ``text`` names that the tree does not have."""
    missing = []
    for relative, name in NAMED.findall(text):
        path = resolve(relative)
        if path is None:
            missing.append(relative)
        elif name and not defines(path, name):
            missing.append(f"{relative}::{name}")
    return missing


def test_every_file_and_definition_the_architecture_page_names_exists() -> None:
    assert stale((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")) == []


def test_the_check_sees_a_file_or_a_definition_that_is_gone() -> None:
    assert stale("`onboard/recipes.py::Recipe` and `pretrain/run.py::_Run._build_training`") == []
    assert stale("`onboard/gone.py` and `onboard/recipes.py::NoSuchRecipe` and `pretrain/run.py::_Run.nothing`") == [
        "onboard/gone.py", "onboard/recipes.py::NoSuchRecipe", "pretrain/run.py::_Run.nothing"]


def diagram(text: str) -> str:
    """Return the page's drawing of the house: the first code block after "The house by floors"."""
    after = text[text.index("The house by floors"):]
    return after.split("```")[1]


def unnamed_rooms(drawing: str, package: Path = PACKAGE) -> list[str]:
    """Return the package's rooms the drawing does not name: every folder that is a package as ``name/``, every
    top-level module by its name (issue 60: validation/, sleep/, reports and lowp/ were missing)."""
    folders = sorted(f"{p.parent.name}/" for p in package.rglob("__init__.py") if p.parent != package)
    modules = sorted(p.stem for p in package.glob("*.py") if p.name != "__init__.py")
    return [name for name in folders + modules if not re.search(rf"(?<![\w/]){re.escape(name)}(?![\w])", drawing)]


def test_the_drawing_of_the_house_names_every_room() -> None:
    assert unnamed_rooms(diagram((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))) == []


def test_the_drawing_check_sees_a_room_left_out(tmp_path: Path) -> None:
    for folder in ("sleep", "model/lowp"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "reports.py").write_text("")
    assert unnamed_rooms("model/ sleep/ reports", tmp_path) == ["lowp/"]
    assert unnamed_rooms("lowp/ sleep reports", tmp_path) == ["sleep/"]
    assert unnamed_rooms("lowp/ sleep/ reports_x", tmp_path) == ["reports"]
