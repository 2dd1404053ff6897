"""predict names the classes the adapter cannot output (issue 27 item 4): a night without REM in training."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app

from conftest import make_dataset

RUN = CliRunner()


def test_predict_says_which_classes_the_adapter_never_learned(tmp_path: Path, montage_yaml: Path,
                                                             checkpoint: str) -> None:
    data = make_dataset(tmp_path / "no-rem", n_subjects=3, n_epochs=10)
    for labels in data.glob("s*.csv"):
        labels.write_text(labels.read_text().replace("REM", "N2"))
    adapted = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(data), "--checkpoint",
                               checkpoint, "--out", str(tmp_path / "adapter"), "--no-progress"])
    assert adapted.exit_code == 0, adapted.output
    result = RUN.invoke(app, ["predict", "--adapter", str(tmp_path / "adapter"), str(data / "s01.edf"), "--out",
                              str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "p" / "s01" / "s01_summary.json").read_text())
    assert summary["classes_not_learned"] == ["REM"]
    assert "this adapter cannot output REM: it had no training windows of it" in result.output


def test_predict_labels_prints_kappa_and_confusion_per_night(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), str(dataset / "s02.edf"),
                              "--labels", str(dataset / "s01.csv"), "--labels", str(dataset / "s02.csv"),
                              "--out", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    assert result.output.count("  scorer (") == 2 and "scorer \\ predicted" in result.output
    summary = json.loads((tmp_path / "p" / "s01" / "s01_summary.json").read_text())
    scored = summary["scorer_agreement"]
    assert scored["windows"] == 10 and -1 <= scored["kappa"] <= 1
    assert sum(sum(row.values()) for row in scored["confusion"].values()) == 10
    assert scored["confusion"]["W"]["W"] + scored["confusion"]["W"]["N2"] <= 2  # the file's 2 W epochs


def test_predict_labels_one_file_per_recording(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), str(dataset / "s02.edf"),
                              "--labels", str(dataset / "s01.csv"), "--out", str(tmp_path / "p")])
    assert result.exit_code == 2 and "2 recording(s), 1 label file(s)" in result.output


def test_predict_labels_in_rk_numbers_need_the_rk_map(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    rk = {"W": "5", "N1": "3", "N2": "2", "N3": "1", "REM": "4"}
    values = [rk[v] for v in (dataset / "s01.csv").read_text().split() for _ in range(6)]  # one per 5 s
    (tmp_path / "rk.txt").write_text("[Hypnogram]\n" + "\n".join(values) + "\n")
    args = ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), "--labels", str(tmp_path / "rk.txt")]
    refused = RUN.invoke(app, [*args, "--out", str(tmp_path / "p1")])
    assert refused.exit_code == 2 and "--label-map" in refused.output
    result = RUN.invoke(app, [*args, "--out", str(tmp_path / "p2"), "--label-map", "rk"])
    assert result.exit_code == 0, result.output
    with_rk = json.loads((tmp_path / "p2" / "s01" / "s01_summary.json").read_text())["scorer_agreement"]
    assert with_rk["windows"] == 10


@pytest.mark.realdata
def test_dreams_hypnogram_reads_as_rk_epochs(shared_data: Path) -> None:
    from passport_kit.inference.agreement import scorer_labels

    path = shared_data / "dreams-spindles" / "Hypnogram_excerpt3.txt"
    n_values = len(path.read_text().split()) - 1  # the '[Hypnogram]' line
    y = scorer_labels(path, ["W", "N1", "N2", "N3", "REM"], n_windows=n_values // 6, window_seconds=30,
                      label_map="rk")
    assert len(y) == n_values // 6 and (y >= 0).mean() > 0.9


def test_adapts_absent_class_note_is_made_true_of_the_model_shipped() -> None:
    """Issue 58: 'will never be predicted: REM' beside a stager, shipped as it is, that outputs REM."""
    from types import SimpleNamespace

    from passport_kit.onboard.class_outputs import class_output_notes

    notes = ["classes with fewer than 20 training windows are hard to learn: W (16)",
             "classes absent from the training windows will never be predicted: N1, REM"]
    stager = SimpleNamespace(stager_classes=lambda: [0, 2, 3, 4])   # the stager reaches REM, not N1
    assert class_output_notes(notes, stager, ["W", "N1", "N2", "N3", "REM"]) == [
        notes[0], "classes absent from the training windows will never be predicted: N1",
        "classes absent from the training windows come from the sleep stager alone, unchecked against your labels: "
        "REM (the model shipped stages all five)"]
    no_stager = SimpleNamespace(stager_classes=lambda: [])
    assert class_output_notes(notes, no_stager, ["W", "N1", "N2", "N3", "REM"]) == notes
