"""The guard's sleep checks (issue 45): transitions never seen in training, and sleep that does not look like it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from passport_kit.signals.distribution import (
    STAGE_FIT_LIMIT,
    distribution_profile,
    score_recording,
    sequence_check,
    sleep_transitions,
    transition_record,
)

STAGES = ["W", "N1", "N2", "N3", "REM"]
#: A stage's spectrum in this toy: (slow-wave amplitude, alpha amplitude) of its windows.
SHAPE = {0: (0.2, 1.0), 1: (0.5, 0.4), 2: (1.0, 0.2), 3: (2.5, 0.1), 4: (0.5, 0.3)}


def _windows(stages: list[int], seed: int) -> np.ndarray:
    """Return ``(N, 2, 30, 200)`` windows of the given stages (each stage its own slow-wave/alpha mix)."""
    rng = np.random.default_rng(seed)
    t = np.arange(30 * 200) / 200.0
    out = np.empty((len(stages), 2, 30, 200), dtype=np.float32)
    for k, stage in enumerate(stages):
        slow, alpha = SHAPE[stage]
        wave = (slow * np.sin(2 * np.pi * rng.uniform(0.8, 2) * t) + alpha * np.sin(2 * np.pi * 10 * t))
        out[k] = 0.3 * (wave + 0.2 * rng.standard_normal((2, t.size))).reshape(2, 30, 200)
    return out


def _night(seed: int) -> list[int]:
    """Return a toy night: W, N1, N2, N3, N2, REM, W runs (never W next to N3)."""
    return [0] * 6 + [1] * 3 + [2] * 8 + [3] * 8 + [2] * 5 + [4] * 5 + [0] * (2 + seed)


@pytest.fixture(scope="module")
def profile() -> dict:
    nights = [_night(s) for s in range(3)]
    x = np.concatenate([_windows(n, s) for s, n in enumerate(nights)])
    y = np.concatenate(nights)
    rec = np.concatenate([np.full(len(n), f"r{s}") for s, n in enumerate(nights)])
    onset = np.concatenate([np.arange(len(n)) * 30.0 for n in nights])
    return distribution_profile(x, ["A", "B"], top_hz=75.0, stages=STAGES, labels=y,
                                transitions=transition_record(STAGES, y, rec, onset, 30.0))


def test_transitions_count_only_epochs_one_window_apart_in_one_recording() -> None:
    block = transition_record(STAGES, np.array([0, 3, 3, 0]), np.array(["a", "a", "b", "b"]),
                              np.array([0.0, 30.0, 0.0, 90.0]), 30.0)
    counts = np.asarray(block["counts"])
    assert counts[0, 3] == 1 and counts.sum() == 1   # a->a at 30 s apart; b's two windows are 90 s apart


def test_a_held_out_night_passes_both_sleep_checks(profile: dict) -> None:
    night = _night(4)
    verdict = score_recording(profile, _windows(night, 9), top_hz=75.0, predicted=np.array(night),
                              onset_s=np.arange(len(night)) * 30.0)
    assert verdict.unseen_transitions == 0 and verdict.stage_fit < STAGE_FIT_LIMIT and not verdict.outside


def test_wake_and_n3_alternating_every_epoch_is_outside(profile: dict) -> None:
    # W->N3 is not sleep's; N3->W (an awakening from deep sleep) is, though the toy nights never show it.
    predicted = np.array([0, 3] * 4)
    unseen, total, examples = sequence_check(profile, predicted, np.arange(8) * 30.0, 30.0)
    assert (unseen, total) == (4, 7) and examples == ["W->N3"]
    verdict = score_recording(profile, _windows(list(predicted), 5), top_hz=75.0, predicted=predicted,
                              onset_s=np.arange(8) * 30.0)
    assert verdict.outside and "its stage sequence is unlike sleep: 4 of its 7" in verdict.reason


def test_sleeps_own_transitions_count_as_seen_after_training_nights_without_them() -> None:
    """Issue 58: training nights without REM made N2->REM and REM->REM 'unlike sleep'."""
    no_rem = [0] * 5 + [1] * 3 + [2] * 60 + [3] * 40 + [2] * 20 + [0] * 2
    block = transition_record(STAGES, np.array(no_rem), np.array(["a"] * len(no_rem)),
                              np.arange(len(no_rem)) * 30.0, 30.0)
    night = np.array([0] * 3 + [1] * 2 + [2] * 10 + [4] * 10 + [2] * 5 + [0] * 2)
    assert sequence_check({"transitions": block}, night, np.arange(len(night)) * 30.0, 30.0) == (0, 31, [])


def test_only_aasm_stage_names_have_sleeps_transitions() -> None:
    assert sleep_transitions(["rem", "n2"]).all()
    assert not sleep_transitions(["W", "N3"])[0, 1] and sleep_transitions(["W", "N3"])[1, 0]
    assert not sleep_transitions(["rest", "task"]).any()


def test_an_in_sample_recording_is_never_outside(profile: dict) -> None:
    predicted = np.array([0, 3] * 4)
    verdict = score_recording(profile, _windows(list(predicted), 5), top_hz=75.0, predicted=predicted,
                              onset_s=np.arange(8) * 30.0)
    same = dataclasses.replace(verdict, in_sample=True)
    assert verdict.outside and not same.outside and same.reason is None
    assert same.to_json()["in_sample"] is True and same.to_json()["unseen_transitions"] == 4


def test_an_awake_recording_staged_as_sleep_does_not_look_like_sleep(profile: dict) -> None:
    # Wake's spectra throughout, inside the training range (the training nights hold wake), staged N2 then N3: a
    # smooth sequence, so only the stages' own spectra can tell.
    predicted = np.array([2] * 10 + [3] * 10)
    verdict = score_recording(profile, _windows([0] * 20, 6), top_hz=75.0, predicted=predicted,
                              onset_s=np.arange(20) * 30.0)
    assert verdict.distance < verdict.distance_limit and verdict.unseen_transitions == 0
    assert verdict.stage_fit > STAGE_FIT_LIMIT and verdict.reason.startswith("it does not look like sleep")


def test_a_profile_without_the_sleep_blocks_scores_as_before(profile: dict) -> None:
    old = {k: v for k, v in profile.items() if k not in ("stages", "transitions")}
    predicted = np.array([0, 3] * 4)
    verdict = score_recording(old, _windows(list(predicted), 5), top_hz=75.0, predicted=predicted,
                              onset_s=np.arange(8) * 30.0)
    assert verdict.unseen_transitions is None and verdict.stage_fit is None
    assert verdict.to_json()["unseen_transitions"] is None
