"""The per-recording writer of predict: sleep and classification outputs, epoch-grid gaps."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from passport_kit.errors import DataError
from passport_kit.inference.files import find_recordings
from passport_kit.inference.night_report import AdapterFacts, recording_stem, write_prediction
from passport_kit.inference.options import OutputOptions

SLEEP = ["W", "N1", "N2", "N3", "REM"]


def _facts(classes: list[str], task: str = "sleep-staging") -> AdapterFacts:
    return AdapterFacts(classes=classes, window_seconds=30.0, task=task, adapter=Path("a"), base_name="b")


def _write(tmp_path: Path, night_of, classes: list[str], task: str, onsets: list[float]):
    rng = np.random.default_rng(0)
    # Peaked probabilities: confident predictions, so the summary keeps its statistics.
    proba = rng.dirichlet(np.full(len(classes), 0.1), size=len(onsets))
    flags = np.zeros((len(onsets), 2), dtype=np.uint8)
    flags[0, 1] = 2
    return write_prediction(tmp_path / "rec", Path("sub-01_task-sleep_eeg.edf"), proba, night_of(onsets, flags),
                            adapter=_facts(classes, task))


def test_sleep_outputs_and_statistics(tmp_path: Path, night_of) -> None:
    result = _write(tmp_path, night_of, SLEEP, "sleep-staging", [0, 30, 60, 90])
    assert set(result.files) == {"predictions", "events", "summary", "hypnogram", "hypnogram_plot"}
    summary = json.loads(result.files["summary"].read_text())
    assert summary["sleep_statistics"]["TIB"] == pytest.approx(2.0)
    assert summary["flagged_windows"] == 1
    assert result.files["events"].name == "sub-01_task-sleep_events.tsv"


@pytest.mark.parametrize("fmt", ["svg", "pdf"])
def test_hypnogram_plot_in_the_format_asked_for(tmp_path: Path, night_of, fmt: str) -> None:
    rng = np.random.default_rng(0)
    result = write_prediction(tmp_path / "rec", Path("night.edf"), rng.dirichlet(np.full(5, 0.1), size=4),
                              night_of([0.0, 30, 60, 90], np.zeros((4, 2), dtype=np.uint8)), adapter=_facts(SLEEP),
                              output=OutputOptions(plot_format=fmt))
    assert result.files["hypnogram_plot"] == tmp_path / "rec" / f"night_hypnogram.{fmt}"
    assert sorted(p.name for p in (tmp_path / "rec").glob("*_hypnogram.*")) == ["night_hypnogram.json",
                                                                                 f"night_hypnogram.{fmt}"]


def test_missing_epochs_become_unscored(tmp_path: Path, night_of) -> None:
    result = _write(tmp_path, night_of, SLEEP, "sleep-staging", [0, 30, 120])
    hyp = json.loads(result.files["hypnogram"].read_text())
    assert hyp["stages"][2:4] == ["UNS", "UNS"] and len(hyp["stages"]) == 5


def test_classification_gives_recording_class_and_no_hypnogram(tmp_path: Path, night_of) -> None:
    result = _write(tmp_path, night_of, ["rest", "task"], "classification", [0, 30, 60])
    summary = result.summary
    assert summary["recording_class"] in {"rest", "task"} and "sleep_statistics" not in summary
    assert "hypnogram" not in result.files
    lines = result.files["events"].read_text().splitlines()
    assert lines[1].split("\t")[3] in {"rest", "task"}


@pytest.mark.parametrize(("name", "stem"), [("night1.edf", "night1"), ("sub-01_task-sleep_eeg.edf", "sub-01_task-sleep"),
                                            ("rec.fif.gz", "rec")])
def test_output_stem(name: str, stem: str) -> None:
    assert recording_stem(Path(name)) == stem


def test_find_recordings_searches_folders(tmp_path: Path) -> None:
    (tmp_path / "a.edf").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("x")
    assert find_recordings([tmp_path]) == [tmp_path / "a.edf"]


def test_missing_recording_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        find_recordings([tmp_path / "nope.edf"])


def test_plotting_is_imported_once_in_the_background() -> None:
    import sys

    from passport_kit.inference.night_report import import_plotting_soon

    thread = import_plotting_soon()
    if thread is not None:
        thread.join(timeout=60)
    assert "matplotlib.figure" in sys.modules and "matplotlib.backends.backend_agg" in sys.modules
    assert import_plotting_soon() is None  # imported: nothing more to start


def test_cli_and_python_predict_share_the_batch_size() -> None:
    import inspect

    import passport_kit as pk
    from passport_kit.cli.onboard import predict_command
    from passport_kit.inference.predict import RunOptions

    cli = inspect.signature(predict_command).parameters["batch_size"].default.default
    assert cli == RunOptions().batch_size == 32  # pk.predict's batch_size is RunOptions' field
    assert "batch_size : int" in (pk.predict.__doc__ or "")


def test_predict_refuses_an_unknown_plot_format_before_any_work(tmp_path: Path) -> None:
    import passport_kit as pk
    from passport_kit.errors import ConfigError

    with pytest.raises(ConfigError, match=r"--plot-format\) must be one of png, svg, pdf"):
        pk.predict(tmp_path / "no-bundle", [tmp_path / "x.edf"], tmp_path / "out", plot_format="jpg")  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()
