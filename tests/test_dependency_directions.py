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
    ("validation", ("passport_kit.onboard", "passport_kit.pretrain", "passport_kit.cli", "passport_kit.engine",
                    "passport_kit.model")),  # the validation report (issue 44): under onboarding and prediction
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


def test_validation_reads_only_the_hypnogram_of_prediction() -> None:
    """Issue 44: evaluate (onboarding) writes the report, so the room takes nothing of prediction but the Hypnogram
    value object (``inference/hypnogram.py``, which imports only the ground floor) for its sleep measures."""
    hypnogram = "passport_kit.inference.hypnogram"
    found = [v for v in violations("validation", ("passport_kit.inference",))
             if not (v.endswith(hypnogram) or f"{hypnogram}." in v)]
    assert found == []
    assert violations("inference/hypnogram.py", ("passport_kit.inference", "passport_kit.signals",
                                                 "passport_kit.onboard")) == []


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
