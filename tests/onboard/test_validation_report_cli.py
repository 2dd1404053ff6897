"""evaluate and predict --labels write the device validation report (issue 44), end to end on simulated nights."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from tests.onboard.conftest import CLASSES, write_recording

RUN = CliRunner()


def test_evaluate_writes_the_report_of_every_method_on_the_held_out_nights(tmp_path: Path, montage_yaml: Path,
                                                                           dataset: Path, checkpoint: str) -> None:
    out = tmp_path / "ev"
    # Two held-out nights of one split keep the test within seconds; loso takes the same path, once per subject.
    result = RUN.invoke(app, ["evaluate", "--montage", str(montage_yaml), "--data", str(dataset), "--out", str(out),
                              "--checkpoint", checkpoint, "--protocol", "split", "--test-subject", "s01",
                              "--test-subject", "s02", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert f"validation_html: {out / 'validation' / 'validation.html'}" in result.output
    report = json.loads((out / "validation" / "validation.json").read_text())
    methods = {m["method"]: m for m in report["methods"]}
    assert set(methods) == {checkpoint, "band power", "zero-shot yasa"}
    # Each method is named by what its folds shipped; the zero-shot stager is a method of results.csv and summary.json.
    assert methods["band power"]["shipped"] == "band power (1/1 folds)" and methods[checkpoint]["shipped"]
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert {r["method"] for r in rows} == set(methods) and all(r["shipped"] for r in rows)
    # The model's pooled error matrix is the one evaluate's summary pools over the same folds.
    summary = json.loads((out / "summary.json").read_text())
    assert methods[checkpoint]["pooled"]["confusion"] == summary["methods"][checkpoint]["confusion_pooled"]
    assert summary["methods"]["zero-shot yasa"]["shipped"] == {"zero-shot yasa": 1}
    nights = methods[checkpoint]["nights"]
    assert sorted(n["night"] for n in nights) == ["s01.edf", "s02.edf"]
    # The tiny nights are 5 min long: epoch by epoch and minutes per stage; the whole-night measures withheld.
    assert all("TST" not in n["discrepancy"] and "N2_min" in n["discrepancy"] and "5 min long" in
               n["discrepancy_withheld"] for n in nights)
    assert methods[checkpoint]["discrepancy"]["TST"]["n"] == 0
    page = (out / "validation" / "validation.html").read_text()
    assert "zero-shot yasa" in page and "Whole-night measures withheld" in page and "band power (1/1 folds)" in page
    # An error matrix per method and a hypnogram per night; no Bland–Altman plot without 3 nights for a group.
    assert page.count("data:image/png;base64,") == 3 + 2


@pytest.fixture
def long_night(tmp_path: Path) -> tuple[Path, Path]:
    """Return a 2.5-h recording of the tiny montage and its scorer's labels (a stage per 20 min, in turn)."""
    labels = [CLASSES[(i // 40) % len(CLASSES)] for i in range(300)]
    recording = write_recording(tmp_path / "night.edf", labels, ["EL1", "ER1", "EL2"], seed=7)
    scored = tmp_path / "night.csv"
    scored.write_text("\n".join(labels) + "\n")
    return recording, scored


def test_predict_labels_adds_the_nights_validation_numbers(tmp_path: Path, bundle: Path,
                                                           long_night: tuple[Path, Path]) -> None:
    recording, scored = long_night
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(recording), "--labels", str(scored),
                              "--out", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    summary = json.loads(next((tmp_path / "p").rglob("*_summary.json")).read_text())
    numbers = summary["validation"]
    assert numbers["epoch_by_epoch"]["kappa"] == pytest.approx(summary["scorer_agreement"]["kappa"])
    assert numbers["discrepancy_withheld"] is None and numbers["hours"] == pytest.approx(2.5)
    # The device's TST is its sleep epochs; the scorer's, 300 epochs less two 40-epoch blocks of W: 110 min.
    counts = summary["class_counts"]
    tst = numbers["discrepancy"]["TST"]
    assert tst["device"] == pytest.approx(0.5 * (sum(counts.values()) - counts["W"]))
    assert tst["reference"] == 110.0 and tst["difference"] == pytest.approx(tst["device"] - 110.0)
