"""Windowing into (N, C, P, 200) and per-window quality flags."""

from __future__ import annotations

import numpy as np
import pytest

from passport_kit.errors import DataError
from passport_kit.signals.preprocess import PreprocessConfig, preprocess_array
from passport_kit.signals.windows import (
    FLAG_CLIPPED,
    FLAG_FLAT,
    FLAG_NAN,
    FLAG_OVER_LIMIT,
    make_windows,
    window_flags,
)


@pytest.mark.parametrize(("seconds", "window", "n"), [(60, 30, 2), (75, 30, 2), (30, 30, 1), (25, 5, 5), (9.9, 1, 9)])
def test_windows_shape_and_partial_window_dropped(seconds: float, window: int, n: int) -> None:
    data = np.random.default_rng(0).standard_normal((3, int(seconds * 200))).astype(np.float32)
    x = make_windows(data, PreprocessConfig(window_seconds=window))
    assert x.shape == (n, 3, window, 200)
    assert x.dtype == np.float32
    # window k, channel c, patch p, sample s is sample (k·P + p)·200 + s of channel c
    np.testing.assert_array_equal(x[n - 1, 2, window - 1], data[2, (n * window - 1) * 200 : n * window * 200])


def test_instance_norm_zscores_each_window_and_channel() -> None:
    data = np.random.default_rng(1).standard_normal((2, 200 * 60)).astype(np.float32) * 7 + 3
    x = make_windows(data, PreprocessConfig(instance_norm=True))
    flat = x.reshape(2, 2, -1)
    np.testing.assert_allclose(flat.mean(axis=-1), 0, atol=1e-4)
    np.testing.assert_allclose(flat.std(axis=-1), 1, atol=1e-3)


def test_recording_shorter_than_one_window_is_refused() -> None:
    with pytest.raises(DataError, match=r"recording is 20\.0 s long, shorter than one window of 30 s; "
                                         r"use a longer recording or a shorter window_seconds"):
        make_windows(np.zeros((2, 200 * 20), dtype=np.float32), PreprocessConfig())


def _flags(raw_data: np.ndarray, config: PreprocessConfig, sfreq: float = 250.0) -> np.ndarray:
    """Return the flags of raw data (C, T) in volts, run through the real pipeline."""
    x = make_windows(preprocess_array(raw_data, sfreq, config), config)
    return window_flags(raw_data, sfreq, x, config)


def _clean(n_windows: int = 3, sfreq: float = 250.0) -> np.ndarray:
    rng = np.random.default_rng(2)
    return rng.standard_normal((3, int(n_windows * 30 * sfreq))) * 10e-6


def test_clean_data_has_no_flags() -> None:
    assert not _flags(_clean(), PreprocessConfig(amplitude_limit_uv=200)).any()


@pytest.mark.parametrize(("corrupt", "window", "channel", "flag"), [
    (lambda d: d.__setitem__((1, slice(7600, 7610)), np.nan), 1, 1, FLAG_NAN),
    (lambda d: d.__setitem__((2, slice(0, 7500)), 4e-6), 0, 2, FLAG_FLAT),
    (lambda d: d.__setitem__((0, slice(15000, 15100)), d[0].max() + 1e-5), 2, 0, FLAG_CLIPPED),
    (lambda d: d.__setitem__((0, slice(16000, 16100)), d[0].min() - 1e-5), 2, 0, FLAG_CLIPPED),
    (lambda d: d.__setitem__((1, slice(8000, 8400)), 500e-6), 1, 1, FLAG_OVER_LIMIT),
])
def test_each_problem_flags_its_window_and_channel(corrupt, window: int, channel: int, flag: np.uint8) -> None:
    data = _clean()
    corrupt(data)
    flags = _flags(data, PreprocessConfig(amplitude_limit_uv=200))
    assert flags[window, channel] & flag
    others = flags.copy()
    others[window, channel] &= ~flag
    assert not (others & flag).any()


def test_amplitude_limit_none_never_flags() -> None:
    data = _clean()
    data[1, 8000:8400] = 500e-6
    assert not (_flags(data, PreprocessConfig()) & FLAG_OVER_LIMIT).any()


@pytest.mark.parametrize(("before", "after", "flagged"), [(3, 3, []), (5, 2, [0]), (2, 5, [1]), (5, 5, [0, 1])])
def test_clipped_samples_count_in_the_window_they_fall_in(before: int, after: int, flagged: list[int]) -> None:
    # Samples pinned at the maximum either side of the edge between windows 0 and 1 (7500 at 250 Hz).
    data = _clean()
    data[0, 7500 - before : 7500 + after] = data[0].max() + 1e-5
    data[0, 100] = np.nan  # the NaN branch counts the same way
    flags = _flags(data, PreprocessConfig())
    assert [w for w in range(3) if flags[w, 0] & FLAG_CLIPPED] == flagged
    assert flags[0, 0] & FLAG_NAN and not (flags[1:, 0] & FLAG_NAN).any()


def test_window_sums_taken_a_few_windows_at_a_time_are_those_of_the_whole_channel(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import passport_kit.signals.windows as windows

    sig = np.random.default_rng(0).standard_normal(50_000) * 3e-5
    bounds = np.round(np.arange(17) * 30.0 * 100.3).astype(np.int64)  # irregular: 3009 samples, then 3009 or 3008
    expected = (np.add.reduceat(sig[:bounds[-1]], bounds[:-1]), np.add.reduceat(sig[:bounds[-1]] ** 2, bounds[:-1]))
    for chunk in (1, 5, 64):
        monkeypatch.setattr(windows, "_SUM_WINDOWS", chunk)
        got = windows._window_sums(sig, bounds)
        assert all(g.tobytes() == e.tobytes() for g, e in zip(got, expected))
