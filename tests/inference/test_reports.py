"""Prediction's report writers (passport_kit.inference.reports): files exist and parse back; the hypnogram plot."""

from __future__ import annotations

import csv
from pathlib import Path

import mne
import numpy as np
import pytest

from passport_kit.sleep.hypnogram import Hypnogram
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


def _drawn(monkeypatch: pytest.MonkeyPatch, hypnogram: Hypnogram, **kwargs):
    """Return the figure plot_hypnogram draws (captured instead of saved)."""
    figures = []
    monkeypatch.setattr(reports, "save_figure", lambda fig, path, **kw: figures.append(fig) or Path(path))
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
    from passport_kit.inference.night_report import AdapterFacts, write_prediction

    titles = []
    real = reports.plot_hypnogram
    monkeypatch.setattr(reports, "plot_hypnogram", lambda path, hyp, **kw: titles.append(kw) or real(path, hyp, **kw))
    proba = np.tile([0.9, 0.05, 0.02, 0.02, 0.01], (4, 1))
    write_prediction(tmp_path, Path("data/night3.edf"), proba, night_of(np.arange(4) * 30.0, np.zeros((4, 1), np.uint8)),
                     adapter=AdapterFacts(classes=CLASSES, window_seconds=30.0, task="sleep-staging",
                                          adapter=Path("runs/ear"), base_name="b"))
    assert titles[0]["title"] == "night3.edf (adapter ear)"
    assert titles[0]["note"].startswith("TST 0 min · SE 0 %") and "mean confidence 0.90" in titles[0]["note"]
