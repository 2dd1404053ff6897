"""Hypnogram sleep statistics on hand-built hypnograms."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest

from passport_kit.errors import LabelError
from passport_kit.sleep.hypnogram import Hypnogram, is_sleep_staging

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


# YASA (optional): a hypnogram handed to yasa.Hypnogram keeps its epochs, and the statistics agree key by key.
YASA_NIGHTS = {
    "night": (NIGHT, 30.0),
    "unscored and artefact": (["W", "N2", "UNS", "N2", "ART", "REM", "W"], 30.0),
    "no REM, 15-s epochs": (["W", "N1", "N2", "N3", "W", "N2"], 15.0),
    "all wake": (["W", "W", "W"], 30.0),
}


@pytest.mark.parametrize("name", list(YASA_NIGHTS))
def test_sleep_statistics_match_yasa_key_by_key(name: str) -> None:
    pytest.importorskip("yasa")
    from passport_kit.sleep.hypnogram import YASA_STATISTICS

    stages, epoch_seconds = YASA_NIGHTS[name]
    h = Hypnogram(stages, epoch_seconds=epoch_seconds)
    ours, theirs = h.sleep_statistics(), h.to_yasa().sleep_statistics()
    for key, yasa_key in YASA_STATISTICS.items():
        if ours[key] is None or yasa_key not in theirs:  # undefined here / UNS, ART minutes YASA omits at 0
            assert yasa_key not in theirs or np.isnan(theirs[yasa_key]) or theirs[yasa_key] == 0, key
            continue
        assert ours[key] == pytest.approx(theirs[yasa_key], abs=1e-4), key
    if ours["REM_latency"] is not None:  # ours from sleep onset (AASM), YASA's from the record's start
        assert ours["REM_latency"] + ours["SOL"] == pytest.approx(theirs["Lat_REM"], abs=1e-4)


def test_to_yasa_keeps_stages_epoch_length_start_and_hypnodensity() -> None:
    pytest.importorskip("yasa")
    proba = np.full((3, 5), 0.2)
    h = Hypnogram(["W", "N2", "REM"], epoch_seconds=20.0, offset_s=60.0, start=datetime(2024, 1, 1, 22, 0),
                  proba=proba)
    y = h.to_yasa(scorer="passport-kit")
    assert list(y.hypno) == ["WAKE", "N2", "REM"] and y.freq == "20s" and y.scorer == "passport-kit"
    assert y.start == datetime(2024, 1, 1, 22, 1)  # the first epoch's onset
    assert y.proba.shape == (3, 5) and np.allclose(y.proba.to_numpy(), 0.2)


def test_to_yasa_leaves_out_a_hypnodensity_with_unscored_gaps() -> None:
    pytest.importorskip("yasa")
    proba = np.array([[1.0, 0, 0, 0, 0], [0, 0, 0, 0, 0]])  # the second epoch: no prediction (all zeros)
    assert Hypnogram(["W", "UNS"], proba=proba).to_yasa().proba is None


def test_to_yasa_without_yasa_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from passport_kit.errors import OptionalDependencyError, PassportError

    monkeypatch.setitem(sys.modules, "yasa", None)  # import yasa -> ImportError
    with pytest.raises(OptionalDependencyError, match=r"pip install yasa") as info:
        Hypnogram(NIGHT).to_yasa()
    assert isinstance(info.value, PassportError) and isinstance(info.value, ImportError)


def test_docs_list_every_yasa_key() -> None:
    from pathlib import Path

    from passport_kit.sleep.hypnogram import YASA_STATISTICS

    text = (Path(__file__).parents[2] / "docs" / "onboarding.md").read_text(encoding="utf-8")
    assert all(f"| `{ours}` | `{theirs}` |" in text for ours, theirs in YASA_STATISTICS.items())
    assert "`Lat_REM` = `REM_latency` + `SOL`" in text
