"""Dead channel-windows (issue 46, item 1): flat and NaN flags, and channels near-dead against the others."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from passport_kit.signals.dead_channels import NEAR_DEAD_BELOW, DeadChannels, dead_channel_windows
from passport_kit.signals.windows import FLAG_CLIPPED, FLAG_FLAT, FLAG_NAN


def _quality(band_uv: np.ndarray) -> SimpleNamespace:
    return SimpleNamespace(window_statistics={"band_uv": band_uv})


@pytest.mark.parametrize(("flag", "dead"), [(FLAG_NAN, True), (FLAG_FLAT, True), (FLAG_CLIPPED, False)])
def test_nan_and_flat_flags_make_a_channel_window_dead(flag: np.uint8, dead: bool) -> None:
    flags = np.zeros((2, 3), dtype=np.uint8)
    flags[1, 2] = flag
    found = dead_channel_windows(flags, None, np.array([0.0, 30.0]), 30.0).windows
    assert found[1, 2] == dead and found.sum() == int(dead)


def test_a_channel_at_one_percent_gain_is_near_dead_and_a_quiet_recording_is_not() -> None:
    # Issue 46: a channel at 1 % gain was not even named bad, and its band powers staged the night.
    band = np.full((3, 4), 20.0)
    band[:, 1] = 0.2
    flags = np.zeros((3, 4), dtype=np.uint8)
    found = dead_channel_windows(flags, _quality(band), np.arange(3) * 30.0, 30.0)
    assert found.windows[:, 1].all() and found.windows.sum() == 3
    assert found.counts(["a", "b", "c", "d"]) == {"b": 3}
    # A recording quiet as a whole is the amplitude check's business: nothing here is dead.
    assert not dead_channel_windows(flags, _quality(band * 0 + 0.2), np.arange(3) * 30.0, 30.0).windows.any()


def test_a_channel_quiet_by_design_is_judged_against_its_training_amplitude() -> None:
    band = np.array([[20.0, 1.5, 20.0]])  # channel 1 was 1 µV in the training data too
    flags = np.zeros((1, 3), dtype=np.uint8)
    alike = dead_channel_windows(flags, _quality(band), np.zeros(1), 30.0).windows
    trained = dead_channel_windows(flags, _quality(band), np.zeros(1), 30.0, expected_uv=[20.0, 1.0, 20.0]).windows
    assert alike[0, 1] and not trained.any()
    assert 1.5 / 20.0 < NEAR_DEAD_BELOW


def test_predicted_windows_are_placed_on_the_quality_windows_by_onset() -> None:
    band = np.full((4, 2), 20.0)
    band[3, 0] = 0.01
    flags = np.zeros((2, 2), dtype=np.uint8)
    found = dead_channel_windows(flags, _quality(band), np.array([60.0, 90.0]), 30.0).windows
    assert found.tolist() == [[False, False], [True, False]]


def test_a_channel_dead_in_most_windows_is_named_with_its_reason() -> None:
    windows = np.zeros((4, 3), dtype=bool)
    windows[:3, 1] = True   # 3 of 4: named
    windows[:2, 2] = True   # 2 of 4: not most
    named = DeadChannels(windows).mostly_dead(["a", "b", "c"])
    assert list(named) == ["b"] and named["b"].startswith("near-dead or flat in 3 of 4 windows")


@pytest.mark.parametrize(("names", "dead_at_once", "limit"), [
    (list("abcdefghijkl"), 2, None), (list("abcdefghijkl"), 3, 2), (list("abcdef"), 2, None), (list("abcdef"), 3, 2),
    (list("abc"), 1, None), (list("abc"), 2, 1)])
def test_a_night_beyond_the_measured_imputation_is_not_vouched_for(names: list[str], dead_at_once: int,
                                                                  limit: int | None) -> None:
    # Issue 57: measured with one or two dead channels, at most a third of a montage's; more is said, not vouched for.
    windows = np.zeros((5, len(names)), dtype=bool)
    windows[2, :dead_at_once] = True
    dead = DeadChannels(windows)
    assert dead.most_in_one_window() == dead_at_once
    why = dead.unvouched(names)
    if limit is None:
        assert why is None
    else:
        assert why.startswith(f"{dead_at_once} channels dead in one window ({', '.join(names[:dead_at_once])}), more "
                              f"than the {limit} of {len(names)} ") and "in 1 of 5 windows" in why
