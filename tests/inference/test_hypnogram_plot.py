"""The hypnogram plot shows what it says (issue 34, finding 5): tests on the figure's artists."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from passport_kit.inference import reports
from passport_kit.sleep.hypnogram import Hypnogram

CLASSES = ["W", "N1", "N2", "N3", "REM"]


def _drawn(monkeypatch: pytest.MonkeyPatch, hypnogram: Hypnogram, **kwargs):
    figures = []
    monkeypatch.setattr(reports, "save_figure", lambda fig, path, **kw: figures.append(fig) or Path(path))
    reports.plot_hypnogram(Path("h.png"), hypnogram, **kwargs)
    fig = figures[0]
    fig.canvas.draw()
    return fig


def _night(stages: list[str], confident: list[bool], n_hours: float | None = None) -> Hypnogram:
    proba = np.array([[0.96 if c == s else 0.01 for c in CLASSES] if ok else [0.24, 0.2, 0.2, 0.16, 0.2]
                      for s, ok in zip(stages, confident)])
    return Hypnogram(stages, proba=proba, classes=CLASSES)


def _spans(ax) -> list[float]:
    return sorted(p.get_width() for p in ax.patches if p.get_gid() == "low-confidence")


def test_a_lone_low_confidence_epoch_is_shaded_one_epoch_wide(monkeypatch: pytest.MonkeyPatch) -> None:
    stages = ["W", "N1", "N2", "N2", "N3", "N2", "REM", "W"] * 4   # 16 min: minutes on the axis
    confident = [True] * len(stages)
    confident[3] = confident[10] = confident[11] = False          # a lone epoch and a run of two
    fig = _drawn(monkeypatch, _night(stages, confident))
    assert _spans(fig.axes[0]) == pytest.approx([0.5, 1.0])        # minutes: 1 and 2 epochs of 30 s


def test_the_stage_axis_keeps_every_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    fig = _drawn(monkeypatch, _night(["N2", "N3"] * 8, [True] * 16))
    low, high = fig.axes[0].get_ylim()
    assert low <= 0 - 0.4 and high >= 4 + 0.4                      # N3 (0) up to W (4)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["N3", "N2", "N1", "REM", "W"]


def test_the_legends_sit_outside_the_axes(monkeypatch: pytest.MonkeyPatch) -> None:
    stages = ["W", "N2", "N3", "REM"] * 4
    fig = _drawn(monkeypatch, _night(stages, [True, False] * 8), reference=_night(stages, [True] * 16))
    for ax in fig.axes:
        legend = ax.get_legend()
        assert legend is not None
        assert legend.get_window_extent().x0 >= ax.get_window_extent().x1 - 1
        assert legend.get_window_extent().x1 <= fig.bbox.x1 + 1   # and inside the figure


@pytest.mark.parametrize(("epochs", "label"), [(8, "time from recording start (min)"),
                                               (240, "time from recording start (h)")])
def test_a_short_recording_is_in_minutes(monkeypatch: pytest.MonkeyPatch, epochs: int, label: str) -> None:
    fig = _drawn(monkeypatch, _night(["N2"] * epochs, [True] * epochs))
    assert fig.axes[-1].get_xlabel() == label
    assert fig.axes[-1].get_xlim()[1] == pytest.approx(epochs * 0.5 if "min" in label else epochs / 120)


def test_a_long_title_is_wrapped_inside_the_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 58: the second title line was clipped on both sides ('tatistics withheld: ...', 'TST 1.5 min' cut)."""
    note = ("sleep statistics withheld: its stage sequence is unlike sleep: 6 of its 59 epoch-to-epoch transitions "
            "are ones that neither scored sleep nor the training nights show · TST 1.5 min · SE 38 % · SOL 12 min · "
            "WASO 2 min (not meaningful: the recording is 4 min long) · mean confidence 0.71 · kappa vs scorer 0.56 "
            "(in-sample) · 5 low-confidence epochs (shaded)")
    fig = _drawn(monkeypatch, _night(["W", "N2"] * 8, [True] * 16), title="excerpt1.txt (adapter runs/a)", note=note)
    title = fig.axes[0].title
    box, frame = title.get_window_extent(), fig.bbox
    assert box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y1 <= frame.y1
    assert box.y0 >= fig.axes[0].get_window_extent().y1                     # above the axes, not over the data
    assert "TST 1.5 min" in title.get_text() and title.get_text().count("\n") >= 2
