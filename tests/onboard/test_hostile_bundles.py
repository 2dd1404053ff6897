"""Edited adapter.json files get one line (issue 28, item 5)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.checkpoint.seal import reseal_bundle
from passport_kit.cli.app import app

RUN = CliRunner()


def _predict(adapter: Path, dataset: Path, tmp_path: Path):
    return RUN.invoke(app, ["predict", "--adapter", str(adapter), str(dataset / "s01.edf"), "--out",
                            str(tmp_path / "pred")])


def test_deeply_nested_adapter_json_is_one_line(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    edited = shutil.copytree(bundle, tmp_path / "deep")
    (edited / "adapter.json").write_text("[" * 100_000 + "]" * 100_000)
    result = _predict(edited, dataset, tmp_path)
    assert result.exit_code == 2, result.output
    assert "nested too deeply" in result.output


def test_classes_that_do_not_fit_the_head_are_refused(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    edited = shutil.copytree(bundle, tmp_path / "two")
    meta = json.loads((edited / "adapter.json").read_text())
    meta["classes"] = ["W", "S"]
    (edited / "adapter.json").write_text(json.dumps(meta))
    reseal_bundle(edited)  # an edit made on purpose (issue 57): the checks behind the seal still hold
    result = _predict(edited, dataset, tmp_path)
    assert result.exit_code == 2, result.output
    assert "names 2 classes (W, S) for a head with 5 outputs" in result.output


def _edited(bundle: Path, tmp_path: Path, edit, *, reseal: bool = True) -> Path:  # noqa: ANN001 - of the parsed JSON
    """Return a copy of ``bundle`` with ``edit`` applied to its adapter.json, re-sealed (an edit made on purpose, whose
    numbers the load still checks) unless ``reseal`` is False."""
    folder = shutil.copytree(bundle, tmp_path / "edited")
    meta = json.loads((folder / "adapter.json").read_text())
    edit(meta)
    (folder / "adapter.json").write_text(json.dumps(meta))
    if reseal:
        reseal_bundle(folder)
    return folder


@pytest.mark.parametrize(("edit", "message"), [
    (lambda m: m["metrics"].__setitem__("distribution", "garbage"), "metrics.distribution must be the guard's profile"),
    (lambda m: m["metrics"]["distribution"].__setitem__(
        "quantiles", [[[float("nan")] * 5] * len(m["metrics"]["distribution"]["bands"])] * 3),
     "quantiles holds no finite channel"),
    (lambda m: m["metrics"]["distribution"].__setitem__("amplitude_uv", [-1.0, 2.0, 3.0]), "must be positive"),
    (lambda m: m["head"].__setitem__("temperature", 1e-300), "head.temperature is 1e-300, outside"),
    # Issue 57: the two sleep blocks of the guard were not checked: "garbage" was a 70-line TypeError.
    (lambda m: m["metrics"]["distribution"].__setitem__("stages", "garbage"),
     "metrics.distribution.stages must be a mapping that names its classes"),
    (lambda m: m["metrics"]["distribution"].__setitem__("transitions", {"classes": m["classes"], "counts": "x"}),
     "metrics.distribution.transitions.counts must be numbers"),
    # Issue 57: a tampered training amplitude was reported as the recording's wrong unit.
    (lambda m: m["metrics"]["amplitude"].__setitem__("median_uv", 1e-9), "metrics.amplitude.median_uv must be"),
    (lambda m: m["metrics"]["amplitude"].__setitem__("median_uv", "x"), "metrics.amplitude.median_uv must be"),
])
def test_edited_head_numbers_and_guard_profile_are_one_line(bundle: Path, dataset: Path, tmp_path: Path, edit,  # noqa: ANN001
                                                           message: str) -> None:
    # Issue 46: an all-NaN guard profile switched the guard off silently; "garbage" was an AttributeError traceback.
    result = _predict(_edited(bundle, tmp_path, edit), dataset, tmp_path)
    assert result.exit_code == 2, result.output
    assert message in result.output and "adapter.json was edited or damaged" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1, result.output


@pytest.mark.parametrize(("edit", "named"), [
    # Issue 57: each was staged with exit 0 (classes reordered: 51/60 REM at 0.95; the transitions swapped: TST 15
    # instead of 4.5; temperature 0.0101: confidence 1.000; another stager channel; the guard's profile deleted: a
    # x10 night staged with statistics; the selection record rewritten: describing another model).
    (lambda m: m.__setitem__("classes", m["classes"][::-1]), "(classes)"),
    (lambda m: m["head"].__setitem__("smoothing", {"transitions": [[float(i == j) for j in range(5)] for i in range(5)],
                                                   "emission_prior": [0.2] * 5}), "head.smoothing"),  # identity
    (lambda m: m["head"].__setitem__("temperature", 0.0101), "(head.temperature"),
    (lambda m: m["metrics"].pop("distribution"), "metrics.distribution (deleted)"),
    (lambda m: m["metrics"].__setitem__("selection", {}), "metrics.selection"),
])
def test_a_bundle_edited_after_adapt_is_refused_in_one_line(bundle: Path, dataset: Path, tmp_path: Path, edit,  # noqa: ANN001
                                                            named: str) -> None:
    result = _predict(_edited(bundle, tmp_path, edit, reseal=False), dataset, tmp_path)
    assert result.exit_code == 2, result.output
    assert "was changed after adapt wrote it" in result.output and named in result.output
    assert "passport-kit checkpoints reseal" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1, result.output
