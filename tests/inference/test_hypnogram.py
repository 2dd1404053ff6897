"""Hypnogram sleep statistics on hand-built hypnograms."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest

from passport_kit.errors import LabelError
from passport_kit.inference.hypnogram import Hypnogram, is_sleep_staging

# 10 epochs of 30 s: 2 W before sleep, then N1 N2 N2, 1 W, N3 REM REM, final W.
NIGHT = ["W", "W", "N1", "N2", "N2", "W", "N3", "REM", "REM", "W"]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("TIB", 5.0),
        ("SOL", 1.0),
        ("SPT", 3.5),  # epochs 2..8
        ("TST", 3.0),  # 6 sleep epochs
        ("WASO", 0.5),  # epoch 5
        ("SE", 60.0),
        ("REM_latency", 2.5),  # epoch 7 - epoch 2, from sleep onset
        ("N2_min", 1.0),
        ("W_min", 2.0),
        ("REM_pct", 100 * 1.0 / 3.0),
    ],
)
def test_sleep_statistics_of_a_hand_built_night(key: str, expected: float) -> None:
    assert Hypnogram(NIGHT).sleep_statistics()[key] == pytest.approx(expected)


def test_unscored_epochs_count_in_tib_not_tst() -> None:
    stats = Hypnogram(["W", "N2", "UNS", "N2"]).sleep_statistics()
    assert (stats["TIB"], stats["TST"], stats["UNS_min"], stats["WASO"]) == (2.0, 1.0, 0.5, 0.0)


def test_all_wake_leaves_latencies_undefined() -> None:
    stats = Hypnogram(["W"] * 4).sleep_statistics()
    assert stats["SOL"] is None and stats["REM_latency"] is None and stats["TST"] == 0.0


def test_no_rem_leaves_rem_latency_undefined() -> None:
    assert Hypnogram(["W", "N2", "N3"]).sleep_statistics()["REM_latency"] is None


def test_epoch_length_scales_minutes() -> None:
    assert Hypnogram(["N2"] * 4, epoch_seconds=20).sleep_statistics()["TST"] == pytest.approx(4 / 3)


@pytest.mark.parametrize(("raw", "aasm"), [("Wake", "W"), ("R", "REM"), ("S4", "N3"), ("s1", "N1")])
def test_stage_spellings_are_normalised(raw: str, aasm: str) -> None:
    assert Hypnogram([raw]).stages == (aasm,)


def test_unknown_stage_is_a_label_error() -> None:
    with pytest.raises(LabelError, match="unknown sleep stage 'N5'"):
        Hypnogram(["W", "N5"])


def test_as_events_gives_one_bids_row_per_epoch() -> None:
    events = Hypnogram(["W", "REM"], offset_s=60).as_events()
    assert events == [
        {"onset": 60.0, "duration": 30.0, "value": 0, "trial_type": "Sleep stage W"},
        {"onset": 90.0, "duration": 30.0, "value": 4, "trial_type": "Sleep stage REM"},
    ]


def test_json_round_trip_keeps_stages_start_and_proba() -> None:
    proba = np.tile([0.6, 0.1, 0.1, 0.1, 0.1], (3, 1))
    h = Hypnogram(["W", "N1", "N2"], start=datetime(2024, 1, 1, 23, 0), proba=proba)
    back = Hypnogram.from_json(h.to_json())
    assert back == h and np.allclose(back.proba, proba)


def test_bad_json_is_a_label_error() -> None:
    with pytest.raises(LabelError, match="not a hypnogram JSON"):
        Hypnogram.from_json('{"epochs": []}')


@pytest.mark.parametrize(("classes", "expected"), [(["W", "N1", "N2", "N3", "REM"], True), (["rest", "task"], False)])
def test_is_sleep_staging(classes: list[str], expected: bool) -> None:
    assert is_sleep_staging(classes) is expected
