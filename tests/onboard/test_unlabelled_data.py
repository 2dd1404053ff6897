"""A data set without labels is refused before any recording is read, in one line that says how to add them (issue 49).

Before: ``adapt`` read and checked every recording, then ended on an internal invariant (``a probe head
needs classes ... got 0``).
"""

from __future__ import annotations

from pathlib import Path

import edfio
import numpy as np
import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app

from conftest import write_recording

RUN = CliRunner()


def _unlabelled_folder(root: Path, *, yaml: bool) -> Path:
    """Write 3 recordings and no labels: a plain folder of EDFs, or with a dataset.yaml that gives no label."""
    root.mkdir(parents=True, exist_ok=True)
    for s in range(3):
        write_recording(root / f"s{s + 1:02d}.edf", ["W", "N2"], ["EL1", "ER1", "EL2"], seed=s)
    if yaml:
        (root / "dataset.yaml").write_text("task: classification\nwindow_seconds: 30\nrecordings:\n" + "".join(
            f"  - {{subject: s{s + 1:02d}, file: s{s + 1:02d}.edf}}\n" for s in range(3)))
    return root


@pytest.fixture
def windows_read(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Return the recordings whose windows are read (or taken from the cache) while the test runs."""
    import passport_kit.signals.dataset as dataset

    read: list[Path] = []
    real = dataset._recording_windows

    def spy(path, *args, **kwargs):  # noqa: ANN001, ANN202 - _recording_windows' signature
        read.append(Path(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(dataset, "_recording_windows", spy)
    return read


@pytest.mark.parametrize("command", ["adapt", "evaluate"])
@pytest.mark.parametrize(("yaml", "says"), [
    (False, "has no dataset.yaml and no labels for any of its 3 recordings (no labels file named after one, e.g. "
            "s01_hypnogram.csv"),
    (True, "the dataset.yaml in"),
])
def test_no_labels_exit_2_in_one_line_before_reading(montage_yaml: Path, tmp_path: Path, windows_read: list[Path],
                                                     command: str, yaml: bool, says: str) -> None:
    data = _unlabelled_folder(tmp_path / "data", yaml=yaml)
    result = RUN.invoke(app, [command, "--montage", str(montage_yaml), "--data", str(data), "--checkpoint",
                              "tiny-mlp", "--out", str(tmp_path / "out"), "--no-progress"])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and result.output.startswith("error: no labels: "), result.output
    assert says in result.output and "'label: <class>'" in result.output and "'labels: <file>'" in result.output
    assert windows_read == []  # refused from the spec and the headers, before any recording's samples


def test_check_reports_the_same_line(montage_yaml: Path, tmp_path: Path) -> None:
    from passport_kit.onboard.check import check

    report = check(montage=str(montage_yaml), data=_unlabelled_folder(tmp_path / "data", yaml=False),
                   checkpoint="tiny-mlp")
    labels = next(i for i in report.items if i.name == "labels")
    assert labels.status == "fail" and labels.detail.startswith("no labels: ") and "dataset.yaml" in labels.detail


def _annotated_edf(path: Path, texts: list[str]) -> Path:
    """Write a 60-s EDF+ (EL1, ER1, EL2) whose own annotations are ``texts``, one per 30-s epoch."""
    t = np.arange(200 * 60) / 200.0
    signals = [edfio.EdfSignal(20 * np.sin(2 * np.pi * 10 * t), sampling_frequency=200.0, label=name,
                               physical_dimension="uV", physical_range=(-500, 500)) for name in ("EL1", "ER1", "EL2")]
    edfio.Edf(signals, annotations=[edfio.EdfAnnotation(30.0 * i, 30.0, text)
                                    for i, text in enumerate(texts)]).write(path)
    return path


@pytest.mark.parametrize(("texts", "labelled"), [(["Sleep stage W", "Sleep stage 2"], True),
                                                 (["Lights off", "Arousal"], False)])
def test_a_discovered_recording_is_labelled_by_its_stage_annotations(tmp_path: Path, texts: list[str],
                                                                     labelled: bool) -> None:
    from passport_kit.signals.dataset import RecordingReader, missing_labels
    from passport_kit.signals.dataset_spec import load_dataset_spec

    _annotated_edf(tmp_path / "s01.edf", texts)
    spec = load_dataset_spec(tmp_path)
    assert (missing_labels(spec, RecordingReader(spec)) is None) == labelled


def test_one_labelled_recording_is_enough(tmp_path: Path) -> None:
    from passport_kit.signals.dataset import RecordingReader, missing_labels
    from passport_kit.signals.dataset_spec import load_dataset_spec

    data = _unlabelled_folder(tmp_path, yaml=True)
    text = (data / "dataset.yaml").read_text().replace("file: s02.edf}", "file: s02.edf, label: rest}")
    (data / "dataset.yaml").write_text(text)
    spec = load_dataset_spec(data)
    assert missing_labels(spec, RecordingReader(spec)) is None
