"""An interrupted multi-recording predict leaves nothing behind for good, and can resume (issue 35, item 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app

RUN = CliRunner()


@pytest.fixture
def nights(tmp_path: Path) -> Path:
    from tests.onboard.conftest import CLASSES, write_recording

    folder = tmp_path / "nights"
    folder.mkdir()
    for k in (1, 2):
        write_recording(folder / f"n{k}.edf", [CLASSES[i % 5] for i in range(4)], ["EL1", "ER1", "EL2"], seed=k)
    return folder


def _kill_9_after_the_first(out: Path) -> None:
    """Leave what kill -9 left in issue 35: one recording finished, a hidden temporary folder of the next."""
    tmp = out / ".n2.ab12cd34.tmp"
    tmp.mkdir(parents=True)
    (tmp / "n2_predictions.csv").write_text("onset\n")


def test_a_killed_runs_temporary_folder_is_removed_by_the_next_run(bundle: Path, nights: Path, tmp_path: Path) -> None:
    out = tmp_path / "pred"
    assert RUN.invoke(app, ["predict", "--adapter", str(bundle), str(nights / "n1.edf"), "--out", str(out)]).exit_code == 0
    _kill_9_after_the_first(out)
    (out / ".other.ab12cd34.tmp").mkdir()   # not one of this run's recordings: left alone
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(nights / "n2.edf"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [".other.ab12cd34.tmp"]
    assert not any(p.name.endswith(".lock") for p in tmp_path.iterdir())


def test_resume_keeps_the_finished_recordings_and_predicts_the_rest(bundle: Path, nights: Path, tmp_path: Path) -> None:
    out = tmp_path / "pred"
    assert RUN.invoke(app, ["predict", "--adapter", str(bundle), str(nights / "n1.edf"), "--out", str(out)]).exit_code == 0
    first = (out / "n1" / "n1_summary.json").stat().st_mtime_ns
    _kill_9_after_the_first(out)
    refused = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(nights), "--out", str(out)])
    assert refused.exit_code == 2 and "already holds predictions for 'n1'" in refused.output
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(nights), "--out", str(out), "--resume"])
    assert result.exit_code == 0, result.output
    assert (out / "n1" / "n1_summary.json").stat().st_mtime_ns == first
    assert (out / "n2" / "n2_summary.json").is_file()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]
    assert "n1.edf" in result.output and "n2.edf" in result.output


def test_resume_with_another_adapter_is_refused(bundle: Path, nights: Path, tmp_path: Path) -> None:
    # Issue 46: --resume with a different adapter reprinted the other adapter's results as new.
    import shutil

    out = tmp_path / "pred"
    assert RUN.invoke(app, ["predict", "--adapter", str(bundle), str(nights / "n1.edf"), "--out", str(out)]).exit_code == 0
    other = shutil.copytree(bundle, tmp_path / "other")
    result = RUN.invoke(app, ["predict", "--adapter", str(other), str(nights), "--out", str(out), "--resume"])
    assert result.exit_code == 2, result.output
    assert "holds predictions made with adapter" in result.output and f"not '{other}'" in result.output


def test_a_resumed_run_lists_every_file_the_finished_run_wrote(bundle: Path, nights: Path, tmp_path: Path) -> None:
    # Issue 60: the files of a recording's folder are named once (night_report.REPORT_FILES); the resume reads them
    # from there, so an output added to the writer is listed by a resumed run without a second table to edit.
    from passport_kit.inference.predict import predict
    from passport_kit.inference.files import finished_result
    from passport_kit.inference.night_report import REPORT_FILES
    from passport_kit.inference.options import OutputOptions

    out = tmp_path / "pred"
    [first] = predict(bundle, [nights / "n1.edf"], out, output=OutputOptions(edf_annotations=True))
    written = {kind: path for kind, path in first.files.items() if kind in REPORT_FILES}
    assert set(written) == set(REPORT_FILES)        # every named file was written (channel quality, EDF+ included)
    again = finished_result(out / "n1", nights / "n1.edf")
    assert {k: again.files[k] for k in written} == written
    assert again.files["hypnogram_plot"] == first.files["hypnogram_plot"]
