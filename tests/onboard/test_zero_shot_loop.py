"""Zero-shot staging is scored by predict's own loop: it resumes after a kill, stages the other recordings when one is
bad, and keeps a run log (issue 60, as issue 19 and 35 gave adapters)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app

RUN = CliRunner()


def _zero_shot(montage_yaml: Path, out: Path, *recordings: Path | str):  # noqa: ANN202
    return RUN.invoke(app, ["predict", "--zero-shot", "yasa", "--montage", str(montage_yaml), *map(str, recordings),
                            "--out", str(out)])


@pytest.fixture
def nights(dataset: Path, tmp_path: Path) -> Path:
    """Two good nights, s01 and s03, in a folder."""
    folder = tmp_path / "nights"
    folder.mkdir()
    for name in ("s01.edf", "s03.edf"):
        shutil.copy(dataset / name, folder / name)
    return folder


def test_zero_shot_stages_the_other_recordings_when_one_is_bad(montage_yaml: Path, nights: Path, dataset: Path,
                                                                tmp_path: Path) -> None:
    data = (dataset / "s02.edf").read_bytes()
    (nights / "s02.edf").write_bytes(data[: len(data) // 2])   # truncated
    out = tmp_path / "zs"
    result = _zero_shot(montage_yaml, out, nights)
    assert result.exit_code == 2, result.output
    assert (out / "s01" / "s01_summary.json").is_file() and (out / "s03" / "s03_summary.json").is_file()
    assert not (out / "s02").exists()
    assert "s02.edf: FAILED - recording" in result.output and "truncated" in result.output
    rows = list(csv.DictReader((out / "recordings.tsv").open(), delimiter="\t"))
    assert [(Path(r["recording"]).name, r["status"]) for r in rows] == [("s01.edf", "ok"), ("s02.edf", "failed"),
                                                                        ("s03.edf", "ok")]


def test_zero_shot_resumes_after_a_kill(montage_yaml: Path, nights: Path, tmp_path: Path) -> None:
    out = tmp_path / "zs"
    assert _zero_shot(montage_yaml, out, nights / "s01.edf").exit_code == 0
    first = (out / "s01" / "s01_summary.json").stat().st_mtime_ns
    # what kill -9 left while the second night was written (issue 35): a hidden temporary folder
    (out / ".s03.ab12cd34.tmp").mkdir()
    (out / ".s03.ab12cd34.tmp" / "s03_predictions.csv").write_text("onset\n")
    refused = _zero_shot(montage_yaml, out, nights)
    assert refused.exit_code == 2 and "already holds predictions for 's01'" in refused.output
    result = RUN.invoke(app, ["predict", "--zero-shot", "yasa", "--montage", str(montage_yaml), str(nights),
                              "--out", str(out), "--resume"])
    assert result.exit_code == 0, result.output
    assert (out / "s01" / "s01_summary.json").stat().st_mtime_ns == first   # kept, not staged again
    assert (out / "s03" / "s03_summary.json").is_file()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]
    assert "s01.edf" in result.output and "s03.edf" in result.output


def test_zero_shot_does_not_resume_an_adapters_predictions(montage_yaml: Path, nights: Path, tmp_path: Path) -> None:
    import json

    out = tmp_path / "zs"
    assert _zero_shot(montage_yaml, out, nights / "s01.edf").exit_code == 0
    summary = out / "s01" / "s01_summary.json"
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "adapter": str(tmp_path / "bundle")}))
    result = RUN.invoke(app, ["predict", "--zero-shot", "yasa", "--montage", str(montage_yaml), str(nights),
                              "--out", str(out), "--resume"])
    assert result.exit_code == 2, result.output
    assert "holds predictions made with adapter" in result.output and "not 'zero-shot:yasa'" in result.output


def test_zero_shot_reads_the_next_recording_while_staging_one(montage_yaml: Path, nights: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from passport_kit.inference.zero_shot import StagerScorer, predict_zero_shot

    read = StagerScorer.read
    threads: list[str] = []

    def noted(self: StagerScorer, path: Path):  # noqa: ANN202
        threads.append(threading.current_thread().name)
        return read(self, path)

    monkeypatch.setattr(StagerScorer, "read", noted)
    results = predict_zero_shot(montage_yaml, nights, tmp_path / "zs")
    assert [r.recording.name for r in results] == ["s01.edf", "s03.edf"]
    assert threads[0] == threading.current_thread().name and threads[1].startswith("passport-kit-read")
    threads.clear()
    predict_zero_shot(montage_yaml, nights, tmp_path / "zs2", prefetch=False)
    assert threads == [threading.current_thread().name] * 2
