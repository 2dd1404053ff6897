"""The package's import directions (DESIGN.md §5; issues 17 and 29): read with ``ast``, imports inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "passport_kit"


def imported_modules(path: Path, top: Path = PACKAGE.parent) -> set[str]:
    """Return every module a file imports (absolute names; relative imports resolved against ``top``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parts = list(path.relative_to(top).with_suffix("").parts)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = parts[: len(parts) - node.level]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def violations(folder: str, forbidden: tuple[str, ...], package: Path = PACKAGE) -> list[str]:
    """Return ``file: module`` for every import below ``package/folder`` that starts with a forbidden package."""
    root = package / folder
    files = [root] if root.suffix == ".py" else sorted(root.rglob("*.py"))
    return [f"{f.relative_to(package.parent)}: {m}" for f in files for m in sorted(imported_modules(f, package.parent))
            if any(m == p or m.startswith(p + ".") for p in forbidden)]


@pytest.mark.parametrize(("folder", "forbidden"), [
    ("inference", ("passport_kit.onboard", "passport_kit.pretrain")),  # prediction imports neither training room
    ("pretrain", ("passport_kit.onboard",)),  # pretraining never imports onboarding
    ("onboard", ("passport_kit.pretrain", "passport_kit.cli",
                 "passport_kit.inference")),  # onboarding imports neither pretraining nor prediction (nor the CLI)
    ("reports.py", ("passport_kit.onboard", "passport_kit.inference", "passport_kit.pretrain",
                    "passport_kit.cli")),  # the figures and tables both rooms write: below them
    ("validation", ("passport_kit.onboard", "passport_kit.inference", "passport_kit.pretrain", "passport_kit.cli",
                    "passport_kit.engine", "passport_kit.model")),  # the validation report (issues 44, 60): under
                                                                    # onboarding and prediction, of neither
    ("demo.py", ("passport_kit.cli",)),  # the demo composes onboarding and prediction, under the CLI
    ("engine", ("passport_kit.onboard", "passport_kit.pretrain", "passport_kit.inference",
                "passport_kit.cli")),  # the floor under all three
    ("model", ("passport_kit.montage", "passport_kit.signals")),  # positions and quality arrive as tensors
    ("signals/simulator", ("passport_kit.inference",)),  # stage names live in signals.labels
    # predict's options (issue 48): built by the CLI and pk.predict before any model, under every part that reads them
    ("inference/options.py", ("torch", "passport_kit.engine", "passport_kit.model", "passport_kit.checkpoint",
                              "passport_kit.inference.predict", "passport_kit.inference.recording",
                              "passport_kit.inference.night_report")),
    # the night report writes what the probabilities say: it runs no model, under the recording path that calls it
    ("inference/night_report.py", ("torch", "passport_kit.engine", "passport_kit.model", "passport_kit.checkpoint",
                                   "passport_kit.inference.predict", "passport_kit.inference.recording",
                                   "passport_kit.inference.files", "passport_kit.inference.zero_shot")),
    ("sleep", ("passport_kit.onboard", "passport_kit.inference", "passport_kit.pretrain", "passport_kit.cli",
               "passport_kit.model", "passport_kit.engine")),  # priors read windows, never a model (issue 33)
    ("runtime.py", ("passport_kit.onboard", "passport_kit.inference", "passport_kit.model", "passport_kit.signals",
                    "passport_kit.montage", "passport_kit.checkpoint", "passport_kit.cli")),  # the ground floor
    ("contacts.py", ("passport_kit.onboard", "passport_kit.inference", "passport_kit.model", "passport_kit.signals",
                     "passport_kit.montage", "passport_kit.checkpoint", "passport_kit.cli")),  # the CLI builds options
    ("wording.py", ("passport_kit.onboard", "passport_kit.inference", "passport_kit.model", "passport_kit.signals",
                    "passport_kit.montage", "passport_kit.checkpoint", "passport_kit.cli")),  # words of every part
    ("version.py", ("passport_kit",)),  # the version every writer records: imports nothing of the package
    ("registry.py", ("passport_kit",)),  # the registry every part registers in: imports nothing of the package
    # live staging (issue 59): under the CLI, beside the training rooms; prediction only through live/prediction.py
    ("live", ("passport_kit.onboard", "passport_kit.pretrain", "passport_kit.cli", "passport_kit.demo")),
    ("live/causal.py", ("passport_kit.inference", "torch")),
    ("live/stream.py", ("passport_kit.inference", "torch")),
    ("live/outputs.py", ("passport_kit.inference", "torch")),
    ("live/replay.py", ("passport_kit.inference", "torch")),
    ("live/lsl_scope.py", ("passport_kit.inference", "torch", "mne_lsl")),
    ("embedding_kinds.py", ("torch", "passport_kit.model", "passport_kit.checkpoint", "passport_kit.onboard",
                            "passport_kit.inference", "passport_kit.cli")),  # the CLI's help lists the kinds, torch-free
])
def test_dependency_direction(folder: str, forbidden: tuple[str, ...]) -> None:
    assert (PACKAGE / folder).exists(), f"{folder} moved: update this test, or it guards nothing"
    assert violations(folder, forbidden) == []


#: The package's rooms by floor, top first (issue 60): a room imports only its own files and the rooms of the floors
#: below; rooms of one floor never import each other. Every room of the package stands on one floor, so that an
#: import running up (the one issue 60 removed: validation read prediction's hypnogram while prediction reads
#: validation) or a new room nobody placed fails here. The package's face (``passport_kit/__init__.py``, whose
#: names load lazily, by their module's name as a string) stands on no floor.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("cli",),
    ("demo",),  # composes onboarding and prediction
    ("onboard", "pretrain", "live"),  # live: an LSL stream staged causally (issue 59)
    ("inference",),
    ("validation", "engine", "checkpoint"),
    ("model", "signals"),
    ("montage", "sleep", "reports", "output_lock", "embedding_kinds", "runtime", "contacts"),
    ("atomic_io", "bounded_yaml", "errors", "registry", "stage_names", "version", "wording"),  # the ground
)


def rooms(package: Path = PACKAGE) -> set[str]:
    """Return the package's rooms: its folders and top-level modules (``cli``, ``runtime``), the face left out."""
    return {p.stem for p in package.iterdir() if (p.is_dir() and (p / "__init__.py").exists())
            or (p.suffix == ".py" and p.name != "__init__.py")}


def upward_imports(floors: tuple[tuple[str, ...], ...] = FLOORS, package: Path = PACKAGE) -> list[str]:
    """Return ``file: module`` for every import of another room that does not stand on a lower floor (a name taken
    from the package's face counts as its own room: ``from passport_kit import X`` where X is no room)."""
    floor = {room: level for level, names in enumerate(floors) for room in names}
    found = []
    for room in sorted(floor):
        root = package / room if (package / room).is_dir() else package / f"{room}.py"
        for f in [root] if root.is_file() else sorted(root.rglob("*.py")):
            for m in sorted(imported_modules(f, package.parent)):
                parts = m.split(".")
                if parts[0] != package.name or len(parts) == 1:
                    continue
                other = parts[1] if parts[1] in floor else "__init__"
                if other != room and (other == "__init__" or floor[other] <= floor[room]):
                    found.append(f"{f.relative_to(package.parent)}: {m}")
    return found


def test_every_room_stands_on_one_floor() -> None:
    placed = [room for names in FLOORS for room in names]
    assert len(placed) == len(set(placed))
    assert sorted(rooms()) == sorted(placed)


def test_no_import_runs_up_a_floor_or_across_one() -> None:
    assert upward_imports() == []


def test_the_floor_rule_sees_an_import_up_and_one_across(tmp_path: Path) -> None:
    package = tmp_path / "passport_kit"
    for room in ("top", "low", "side"):
        (package / room).mkdir(parents=True)
        (package / room / "__init__.py").write_text("")
    (package / "low" / "a.py").write_text("def f():\n    from passport_kit.top import x\n")
    (package / "side" / "b.py").write_text("from ..low import a\nfrom passport_kit import face_name\n")
    (package / "top" / "c.py").write_text("from passport_kit.low.a import f\nfrom passport_kit.top import c\n")
    assert upward_imports((("top",), ("low", "side")), package) == [
        "passport_kit/low/a.py: passport_kit.top", "passport_kit/low/a.py: passport_kit.top.x",
        "passport_kit/side/b.py: passport_kit.face_name", "passport_kit/side/b.py: passport_kit.low",
        "passport_kit/side/b.py: passport_kit.low.a"]


def test_the_reader_sees_imports_inside_functions_and_relative_ones(tmp_path: Path) -> None:
    folder = tmp_path / "passport_kit" / "inference"
    folder.mkdir(parents=True)
    (folder / "a.py").write_text("def f():\n    from passport_kit.onboard.adapt import adapt\n")
    (folder / "b.py").write_text("from ..onboard import finetune\n")
    assert violations("inference", ("passport_kit.onboard",), tmp_path / "passport_kit") == [
        "passport_kit/inference/a.py: passport_kit.onboard.adapt",
        "passport_kit/inference/a.py: passport_kit.onboard.adapt.adapt",
        "passport_kit/inference/b.py: passport_kit.onboard",
        "passport_kit/inference/b.py: passport_kit.onboard.finetune"]
