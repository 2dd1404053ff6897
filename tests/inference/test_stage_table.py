"""The stage-minutes row under the hypnogram (issue 27 item 5)."""

from __future__ import annotations

from pathlib import Path

from passport_kit.sleep.hypnogram import Hypnogram
from passport_kit.inference.reports import plot_hypnogram, stage_table_text


def test_stage_row_gives_minutes_and_share_of_sleep() -> None:
    hyp = Hypnogram(["W", "W", "N1", "N2", "N2", "N2", "N3", "REM"], epoch_seconds=30)
    assert stage_table_text(hyp) == ("W 1.0 min | N1 0.5 min (17 %) | N2 1.5 min (50 %) | N3 0.5 min (17 %) | "
                                     "REM 0.5 min (17 %) | TST 3.0 min")


def test_no_sleep_has_no_shares() -> None:
    assert stage_table_text(Hypnogram(["W", "W"], epoch_seconds=30)).startswith("W 1.0 min | N1 0.0 min | N2")


def test_the_plot_grows_to_hold_the_row(tmp_path: Path) -> None:
    from matplotlib.image import imread

    hyp = Hypnogram(["W", "N1", "N2", "N3", "REM"] * 4, epoch_seconds=30)
    plain = imread(plot_hypnogram(tmp_path / "a.png", hyp))
    with_row = imread(plot_hypnogram(tmp_path / "b.png", hyp, stage_table=True))
    assert with_row.shape[0] > plain.shape[0]
