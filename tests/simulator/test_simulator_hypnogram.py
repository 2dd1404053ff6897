"""The Markov-chain hypnogram: AASM stage proportions and the NREM-REM cycle structure."""

from __future__ import annotations

import numpy as np
import pytest

from passport_kit.signals.simulator.hypnogram import N3, REM, STAGES, W, simulate_hypnogram

_NIGHT = 960  # 8 h of 30-s epochs


@pytest.fixture(scope="module")
def nights() -> np.ndarray:
    """Return 30 simulated 8-hour nights, shape (30, 960)."""
    return np.stack([simulate_hypnogram(_NIGHT, np.random.default_rng(s)) for s in range(30)])


@pytest.mark.parametrize(("stage", "low", "high"), [
    ("W", 0.04, 0.15), ("N1", 0.03, 0.10), ("N2", 0.42, 0.60), ("N3", 0.12, 0.22), ("REM", 0.15, 0.26),
])
def test_mean_stage_proportions_are_those_of_healthy_adults(nights: np.ndarray, stage: str,
                                                             low: float, high: float) -> None:
    share = float(np.mean(nights == STAGES.index(stage)))
    assert low <= share <= high


@pytest.mark.parametrize(("stage", "more_in"), [(N3, "first"), (REM, "second")])
def test_deep_sleep_comes_early_and_rem_late(nights: np.ndarray, stage: int, more_in: str) -> None:
    first = np.mean(nights[:, :_NIGHT // 2] == stage)
    second = np.mean(nights[:, _NIGHT // 2:] == stage)
    assert (first > 2 * second) if more_in == "first" else (second > 2 * first)


def test_rem_recurs_in_about_ninety_minute_cycles(nights: np.ndarray) -> None:
    # Count REM periods (runs separated by at least 15 min without REM) per 8-h night: 3-6.
    periods = []
    for night in nights:
        rem = np.flatnonzero(night == REM)
        periods.append(1 + int(np.sum(np.diff(rem) > 30)) if len(rem) else 0)
    assert 3 <= np.median(periods) <= 6


def test_night_starts_awake_and_is_reproducible() -> None:
    a = simulate_hypnogram(200, np.random.default_rng(7))
    b = simulate_hypnogram(200, np.random.default_rng(7))
    assert a[0] == W
    np.testing.assert_array_equal(a, b)
