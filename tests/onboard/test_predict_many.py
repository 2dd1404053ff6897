"""predict over many recordings goes on past a bad one, lists what failed and exits 2 at the end (issue 19, item 5)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app

RUN = CliRunner()


@pytest.fixture
def folder(dataset: Path, tmp_path: Path) -> Path:
    """Three recordings; the middle one (s02) is truncated."""
    out = tmp_path / "nights"
    out.mkdir()
    for name in ("s01.edf", "s03.edf"):
        shutil.copy(dataset / name, out / name)
    data = (dataset / "s02.edf").read_bytes()
    (out / "s02.edf").write_bytes(data[: len(data) // 2])
    return out


def test_predict_continues_past_a_bad_recording_and_exits_2(bundle: Path, folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "pred"
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(folder), "--out", str(out)])
    assert result.exit_code == 2
    assert (out / "s01" / "s01_summary.json").is_file() and (out / "s03" / "s03_summary.json").is_file()
    assert not (out / "s02").exists()
    assert "s02.edf: FAILED - recording" in result.output and "truncated" in result.output
    assert result.output.strip().splitlines()[-1].startswith("error: 1 of 3 recordings could not be predicted")
    rows = list(csv.DictReader((out / "recordings.tsv").open(), delimiter="\t"))
    assert [(Path(r["recording"]).name, r["status"]) for r in rows] == [("s01.edf", "ok"), ("s02.edf", "failed"),
                                                                        ("s03.edf", "ok")]
    assert "truncated" in rows[1]["error"] and rows[0]["windows"] == "10"


def test_python_api_raises_at_the_end_with_the_results(bundle: Path, folder: Path, tmp_path: Path) -> None:
    import passport_kit as pk
    from passport_kit.inference.predict import PredictionFailures

    with pytest.raises(PredictionFailures) as caught:
        pk.predict(bundle, folder, out=tmp_path)
    assert [r.recording.name for r in caught.value.results] == ["s01.edf", "s03.edf"]
    assert [Path(f["recording"]).name for f in caught.value.failures] == ["s02.edf"]


def test_a_single_bad_recording_gives_its_own_error(bundle: Path, folder: Path, tmp_path: Path) -> None:
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(folder / "s02.edf"), "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.startswith("error: recording") and "truncated" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_file_and_its_folder_are_predicted_once(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    from passport_kit.inference.files import find_recordings

    found = find_recordings([dataset / "s01.edf", dataset])
    assert [p.name for p in found].count("s01.edf") == 1 and len(found) == 4


def test_recordings_with_the_same_name_get_their_own_folders(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    for night in ("night1", "night2"):
        (tmp_path / night).mkdir()
        shutil.copy(dataset / "s01.edf", tmp_path / night / "s01.edf")
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(tmp_path / "night1"), str(tmp_path / "night2"),
                              "--out", str(tmp_path / "pred")])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "pred").iterdir() if p.is_dir()) == ["night1_s01", "night2_s01"]
