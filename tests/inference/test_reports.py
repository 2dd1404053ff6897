"""Report writers: files exist, parse back, and writes are atomic."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import mne
import numpy as np
import pytest

from passport_kit.inference.hypnogram import Hypnogram
from passport_kit.inference import reports

CLASSES = ["W", "N1", "N2", "N3", "REM"]


def _hypnogram() -> Hypnogram:
    rng = np.random.default_rng(0)
    proba = rng.dirichlet(np.ones(5), size=12)
    stages = [CLASSES[i] for i in proba.argmax(1)]
    return Hypnogram(stages, proba=proba, classes=CLASSES)


def test_window_csv_has_probabilities_and_confidence(tmp_path: Path) -> None:
    proba = np.array([[0.7, 0.3], [0.2, 0.8]])
    rows = reports.window_rows(np.array([0.0, 30.0]), 30.0, proba, ["rest", "task"])
    path = reports.write_window_csv(tmp_path / "w.csv", rows)
    read = list(csv.DictReader(path.open()))
    assert [r["class"] for r in read] == ["rest", "task"]
    assert float(read[1]["p_task"]) == pytest.approx(0.8)
    assert float(read[0]["confidence"]) == pytest.approx(0.7)


def test_events_tsv_is_bids_shaped(tmp_path: Path) -> None:
    path = reports.write_events_tsv(tmp_path / "sub-01_events.tsv", _hypnogram().as_events())
    lines = path.read_text().splitlines()
    assert lines[0].split("\t") == ["onset", "duration", "value", "trial_type"]
    assert len(lines) == 13


def test_edf_annotations_read_back_with_mne(tmp_path: Path) -> None:
    h = _hypnogram()
    path = reports.write_edf_annotations(tmp_path / "staging.edf", h.as_events())
    ann = mne.read_annotations(path)
    assert list(ann.description) == [f"Sleep stage {s}" for s in h.stages]
    assert np.allclose(ann.onset, h.onsets_s)


def test_json_writes_nan_as_null(tmp_path: Path) -> None:
    path = reports.write_json(tmp_path / "s.json", {"kappa": float("nan"), "n": np.int64(3)})
    assert json.loads(path.read_text()) == {"kappa": None, "n": 3}


@pytest.mark.parametrize("with_reference", [False, True])
def test_hypnogram_png(tmp_path: Path, with_reference: bool) -> None:
    h = _hypnogram()
    ref = Hypnogram(["N2"] * len(h)) if with_reference else None
    path = reports.plot_hypnogram(tmp_path / "h.png", h, reference=ref)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("fmt", "magic"), [("png", b"\x89PNG"), ("svg", b"<svg"), ("pdf", b"%PDF")])
def test_hypnogram_in_each_plot_format(tmp_path: Path, fmt: str, magic: bytes) -> None:
    path = reports.plot_hypnogram(tmp_path / f"h.{fmt}", _hypnogram(), stage_table=True)
    assert magic in path.read_bytes()[:400]


def test_a_plot_path_of_another_format_is_a_bug_not_a_silent_png(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\.png, \.svg, \.pdf"):
        reports.plot_hypnogram(tmp_path / "h.jpg", _hypnogram())


def test_confusion_png(tmp_path: Path) -> None:
    path = reports.plot_confusion(tmp_path / "c.png", [[3, 1], [0, 0]], ["A", "B"])
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_sweep_png(tmp_path: Path) -> None:
    path = reports.plot_sweep(tmp_path / "s.png", {"mlp": {1: [0.2, 0.3], 2: [0.4, 0.5]}}, metric="kappa")
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_table_fills_missing_columns(tmp_path: Path) -> None:
    path = reports.write_table(tmp_path / "t.csv", [{"a": 1}, {"a": 2, "b": 0.5}])
    assert path.read_text().splitlines() == ["a,b", "1,", "2,0.5"]


def test_failed_write_keeps_previous_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with reports.atomic_output(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("crash mid-write")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_history_png(tmp_path: Path) -> None:
    history = [{"step": 2, "train_loss": 1.2, "val_kappa": 0.1}, {"step": 4, "train_loss": 0.9, "val_kappa": 0.3}]
    assert reports.plot_history(tmp_path / "h.png", history).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(("delimiter", "digits", "expected"), [
    (",", 6, ["x,y", "3.14159,", "1,"]),
    ("\t", 4, ["x\ty", "3.142\tn/a", "1\tn/a"]),
    ("\t", 2, ["x\ty", "3.1\tn/a", "1\tn/a"]),
])
def test_table_digits_and_missing_values(tmp_path: Path, delimiter: str, digits: int, expected: list[str]) -> None:
    rows = [{"x": 3.14159265, "y": float("inf")}, {"x": 1, "y": None}]
    path = reports.write_table(tmp_path / "t.txt", rows, delimiter=delimiter, digits=digits)
    assert path.read_text().splitlines() == expected


def test_quality_tsv_uses_the_table_writer() -> None:
    from passport_kit.atomic_io import format_table
    from passport_kit.signals.quality import TABLE_DIGITS, format_tsv

    rows = [{"name": "ELA", "score": 0.123456, "std_uv": float("nan")}]
    assert format_tsv(rows) == format_table(rows, delimiter="\t", digits=TABLE_DIGITS) == "name\tscore\tstd_uv\nELA\t0.1235\tn/a\n"


def _drawn(monkeypatch: pytest.MonkeyPatch, hypnogram: Hypnogram, **kwargs):
    """Return the figure plot_hypnogram draws (captured instead of saved)."""
    figures = []
    monkeypatch.setattr(reports, "_save_figure", lambda fig, path, **kw: figures.append(fig) or Path(path))
    reports.plot_hypnogram(Path("h.png"), hypnogram, **kwargs)
    return figures[0]


def test_hypnogram_plot_uses_clock_time_when_the_start_is_known(monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import datetime, timezone

    h = _hypnogram()
    h.start = datetime(2020, 1, 1, 23, 7, tzinfo=timezone.utc)
    fig = _drawn(monkeypatch, h, title="night.edf", note="TST 5 min · SE 50 %")
    assert fig.axes[-1].get_xlabel() == "clock time (recording started 2020-01-01 23:07:00)"
    fig.canvas.draw()
    ticks = [t.get_text() for t in fig.axes[-1].get_xticklabels() if t.get_text()]
    assert ticks and all(len(t) == 5 and t[2] == ":" for t in ticks)  # HH:MM
    assert fig.axes[0].get_title() == "night.edf\nTST 5 min · SE 50 %"


def test_hypnogram_plot_without_a_start_counts_minutes_of_a_short_recording(monkeypatch: pytest.MonkeyPatch) -> None:
    fig = _drawn(monkeypatch, _hypnogram())  # 12 epochs: 6 min (hours: test_hypnogram_plot.py)
    assert fig.axes[-1].get_xlabel() == "time from recording start (min)"


def test_predict_puts_the_recording_and_its_statistics_on_the_plot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   night_of) -> None:
    from passport_kit.inference.predict import AdapterFacts, write_prediction

    titles = []
    real = reports.plot_hypnogram
    monkeypatch.setattr(reports, "plot_hypnogram", lambda path, hyp, **kw: titles.append(kw) or real(path, hyp, **kw))
    proba = np.tile([0.9, 0.05, 0.02, 0.02, 0.01], (4, 1))
    write_prediction(tmp_path, Path("data/night3.edf"), proba, night_of(np.arange(4) * 30.0, np.zeros((4, 1), np.uint8)),
                     adapter=AdapterFacts(classes=CLASSES, window_seconds=30.0, task="sleep-staging",
                                          adapter=Path("runs/ear"), base_name="b"))
    assert titles[0]["title"] == "night3.edf (adapter ear)"
    assert titles[0]["note"].startswith("TST 0 min · SE 0 %") and "mean confidence 0.90" in titles[0]["note"]
