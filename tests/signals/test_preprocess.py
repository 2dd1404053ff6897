"""Preprocessing: the CBraMod contract (200 Hz, 0.3-75 Hz, notch, µV/100), equal to MNE's filters."""

from __future__ import annotations

import mne
import numpy as np
import pytest
from scipy.signal import welch

from passport_kit.errors import ConfigError, DataError
from passport_kit.signals.preprocess import (
    PreprocessConfig,
    fit_band_to_rate,
    preprocess,
    preprocess_array,
    resample_ratio,
)


def _tone(freq: float, sfreq: float, seconds: float, amp_uv: float) -> np.ndarray:
    """Return one channel, shape (1, T), of a sine in volts."""
    t = np.arange(int(seconds * sfreq)) / sfreq
    return (amp_uv * 1e-6 * np.sin(2 * np.pi * freq * t))[None, :]


def _power_at(x: np.ndarray, freq: float, sfreq: float = 200.0) -> float:
    """Return the Welch power of x (1, T) at the bin nearest ``freq``."""
    f, p = welch(x[0], fs=sfreq, nperseg=int(4 * sfreq))
    return float(p[np.argmin(np.abs(f - freq))])


@pytest.mark.parametrize("sfreq", [200.0, 256.0, 500.0, 512.0, 250.0, 1000.0])
def test_output_is_200_hz_float32(sfreq: float) -> None:
    out = preprocess_array(_tone(10, sfreq, 20, 50), sfreq, PreprocessConfig())
    assert out.dtype == np.float32
    assert out.shape == (1, 20 * 200)


def test_amplitude_is_in_units_of_100_uv() -> None:
    out = preprocess_array(_tone(10, 256.0, 30, 150.0), 256.0, PreprocessConfig())
    # 150 µV sine → peak 1.5 in 100-µV units (away from the edges)
    assert np.abs(out[0, 1000:-1000]).max() == pytest.approx(1.5, rel=0.01)


def test_matches_mne_filter_then_notch() -> None:
    rng = np.random.default_rng(0)
    data = rng.standard_normal((2, 200 * 60)) * 20e-6 + 30e-6  # with a DC offset, which the edges must handle
    ours = preprocess_array(data, 200.0, PreprocessConfig())
    raw = mne.io.RawArray(data, mne.create_info(2, 200.0, "eeg"), verbose="error")
    raw.filter(0.3, 75.0, fir_design="firwin", verbose="error").notch_filter(50.0, verbose="error")
    ref = (raw.get_data() * 1e6 / 100).astype(np.float32)
    np.testing.assert_allclose(ours, ref, atol=2e-5)  # float32 rounding; signal std is about 0.2


@pytest.mark.parametrize(("notch", "ratio_max"), [(50.0, 0.01), (None, None)])
def test_notch_removes_mains_or_is_skipped(notch: float | None, ratio_max: float | None) -> None:
    data = _tone(50, 200.0, 60, 50) + _tone(10, 200.0, 60, 50)
    out = preprocess_array(data, 200.0, PreprocessConfig(notch_freq=notch))
    ratio = _power_at(out, 50) / _power_at(out, 10)
    if ratio_max is None:
        assert ratio == pytest.approx(1.0, rel=0.1)
    else:
        assert ratio < ratio_max


def test_band_pass_removes_drift_and_high_frequencies() -> None:
    t = np.arange(60 * 1000) / 1000.0
    data = (100e-6 * t / 60 + 50e-6 * np.sin(2 * np.pi * 97 * t) + 50e-6 * np.sin(2 * np.pi * 10 * t))[None, :]
    out = preprocess_array(data, 1000.0, PreprocessConfig())
    mid = out[:, 2000:-2000]
    assert abs(float(mid.mean())) < 0.02          # the 100 µV ramp is gone
    assert _power_at(out, 97) < 1e-3 * _power_at(out, 10)  # 97 Hz: past the 75 Hz edge + 18.75 Hz transition


def test_nan_samples_do_not_spread() -> None:
    data = _tone(10, 200.0, 60, 50)
    data[0, 6000:6010] = np.nan
    out = preprocess_array(data, 200.0, PreprocessConfig())
    assert np.isfinite(out).all()


def test_sampling_rate_below_twice_h_freq_suggests_a_lower_h_freq() -> None:
    with pytest.raises(DataError, match=r"sampling rate 100 Hz cannot carry the band-pass up to 75 Hz "
                                         r"\(needs at least 150 Hz\); lower h_freq to 45 Hz or less"):
        preprocess_array(_tone(10, 100.0, 30, 50), 100.0, PreprocessConfig())


def test_lower_h_freq_accepts_low_rates() -> None:
    out = preprocess_array(_tone(10, 100.0, 30, 50), 100.0, PreprocessConfig(h_freq=45.0))
    assert out.shape == (1, 6000)


@pytest.mark.parametrize(("sfreq", "ratio"), [(256.0, (25, 32)), (500.0, (2, 5)), (100.0, (2, 1)), (200.0, (1, 1))])
def test_resample_ratio(sfreq: float, ratio: tuple[int, int]) -> None:
    assert resample_ratio(sfreq, 200.0) == ratio


def test_preprocess_reads_a_raw(make_raw) -> None:
    raw = make_raw(["C3", "C4"], sfreq=256.0, seconds=30.0)
    assert preprocess(raw, PreprocessConfig()).shape == (2, 6000)


@pytest.mark.parametrize(("data", "message"), [
    ({"h_freq": 120}, r"invalid preprocessing config: h_freq \(120.0\) must be below the Nyquist frequency"),
    ({"l_freq": 80}, r"l_freq \(80.0\) must be below h_freq"),
    ({"window_seconds": 2.5}, r"window_seconds must be a whole number"),
    ({"notch": 50}, r"notch: Extra inputs are not permitted"),
    ({"scale_uv": -1}, r"scale_uv: Input should be greater than 0"),
])
def test_invalid_config_is_a_one_line_config_error(data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PreprocessConfig.from_dict(data)


def test_config_round_trips_through_json() -> None:
    config = PreprocessConfig(notch_freq=None, instance_norm=True, window_seconds=10, amplitude_limit_uv=100)
    assert PreprocessConfig.model_validate_json(config.model_dump_json()) == config


@pytest.mark.parametrize(("sfreq", "h_freq"), [(100.0, 45.0), (50.0, 22.0), (128.0, 57.0)])
def test_fit_band_to_rate_lowers_the_top_below_nyquist_and_keeps_200_hz(sfreq: float, h_freq: float) -> None:
    config = fit_band_to_rate(PreprocessConfig(), sfreq, source="recording 'n1.edf'")
    assert (config.h_freq, config.sfreq, config.l_freq) == (h_freq, 200.0, 0.3)
    assert config.h_freq_note.startswith(f"recording 'n1.edf' is sampled at {sfreq:g} Hz")
    out = preprocess_array(_tone(10, sfreq, 30, 50), sfreq, config)  # the old code refused these rates
    assert out.shape == (1, 6000)


def test_every_recording_at_the_lowest_rate_is_named_in_the_warning() -> None:
    """Issue 58: eight nights at 50 Hz, and the warning named only the first."""
    import warnings

    from passport_kit.signals.recording import fit_preprocessing

    names = [f"n{k}.edf" for k in range(1, 11)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = fit_preprocessing(PreprocessConfig(), rate=lambda: (50.0, names))
    assert config.h_freq == 22.0 and len(caught) == 1
    assert str(caught[0].message).startswith("each of 10 recordings ('n1.edf', 'n2.edf', 'n3.edf', 'n4.edf', "
                                             "'n5.edf', 'n6.edf', 'n7.edf', 'n8.edf' and 2 more) is sampled at 50 Hz")
    with warnings.catch_warnings(record=True):
        assert fit_preprocessing(PreprocessConfig(), rate=lambda: (50.0, ["a.edf"])).h_freq_note.startswith(
            "recording 'a.edf' is sampled")


def test_fit_band_to_rate_leaves_a_rate_that_carries_the_band_alone() -> None:
    config = PreprocessConfig()
    assert fit_band_to_rate(config, 150.0) is config


def test_fit_band_to_rate_refuses_a_rate_below_the_band() -> None:
    with pytest.raises(DataError, match="too low to carry any EEG"):
        fit_band_to_rate(PreprocessConfig(l_freq=2.0), 4.0)


def test_filter_threads_give_the_same_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    # predict's outputs must not depend on how many processors preprocessed the recording.
    import importlib

    module = importlib.import_module("passport_kit.signals.preprocess")
    data = np.random.default_rng(0).standard_normal((6, 20_000)) * 20e-6
    monkeypatch.setattr(module, "FFT_WORKERS", 1)
    one = preprocess_array(data, 250.0, PreprocessConfig())
    monkeypatch.setattr(module, "FFT_WORKERS", 3)
    np.testing.assert_array_equal(preprocess_array(data, 250.0, PreprocessConfig()), one)


@pytest.mark.parametrize("n", [400, 3000, 6001, 20_000, 100_003, 250_000])
@pytest.mark.parametrize(("sfreq", "l_freq", "notch"), [(200.0, 0.3, 50.0), (200.0, 1.0, None), (200.0, 0.5, 60.0)])
def test_the_filter_gives_scipys_overlap_add_to_the_byte(n: int, sfreq: float, l_freq: float,
                                                          notch: float | None) -> None:
    """fir_filter lays the blocks out once (issue 47) and still computes what oaconvolve computed before."""
    from scipy.signal import oaconvolve

    from passport_kit.signals.preprocess import _odd_reflect_pad, filter_kernel, fir_filter

    kernel = filter_kernel(sfreq, l_freq, 75.0, notch).astype(np.float32)
    x = (np.random.default_rng(n).standard_normal((3, n)) * 0.4).astype(np.float32)
    x[1] += np.linspace(0.0, 2.0, n, dtype=np.float32)  # a drift: the reflection's edges matter
    ours = fir_filter(x, kernel)
    scipys = oaconvolve(_odd_reflect_pad(x, len(kernel) // 2), kernel[None, :], mode="valid", axes=-1)
    assert ours.shape == x.shape and ours.dtype == np.float32
    assert ours.tobytes() == scipys.astype(np.float32, copy=False).tobytes()


def test_a_channel_of_infinities_is_zeroed_like_nan() -> None:
    data = _tone(10, 200.0, 60, 50)
    data[0, 100:105] = np.inf
    out = preprocess_array(data, 200.0, PreprocessConfig())
    assert np.isfinite(out).all()
    clean = _tone(10, 200.0, 60, 50)
    clean[0, 100:105] = 0.0
    np.testing.assert_array_equal(out, preprocess_array(clean, 200.0, PreprocessConfig()))


@pytest.mark.parametrize(("sfreq", "seconds"), [(200.0, 3 * 3600), (200.0, 95), (256.0, 1800), (1000.0, 150),
                                                (200.0, 61), (100.0, 600)])
def test_windows_written_once_are_the_windows_of_the_signal(sfreq: float, seconds: int) -> None:
    """windows_from_data (issue 47: no (C, T) signal between) gives make_windows' windows to the byte."""
    from passport_kit.signals.recording import windows_from_data
    from passport_kit.signals.windows import make_windows

    data = np.random.default_rng(int(sfreq + seconds)).standard_normal((3, int(sfreq * seconds))) * 30e-6
    data[1, 100:120] = np.nan
    config = PreprocessConfig(h_freq=45.0 if sfreq < 150 else 75.0, instance_norm=True)
    windows, _ = windows_from_data(data, sfreq, config.model_copy(update={"instance_norm": False}))
    expected = make_windows(preprocess_array(data, sfreq, config), config.model_copy(update={"instance_norm": False}))
    assert windows.shape == expected.shape and windows.tobytes() == expected.tobytes()
    normalised, _ = windows_from_data(data, sfreq, config)
    assert normalised.tobytes() == make_windows(preprocess_array(data, sfreq, config), config).tobytes()


def test_preprocess_array_is_the_scaled_samples_through_scipys_filter_to_the_byte() -> None:
    from scipy.signal import oaconvolve

    from passport_kit.signals.preprocess import _odd_reflect_pad, filter_kernel

    data = np.random.default_rng(7).standard_normal((2, 200 * 1200)) * 30e-6
    data[0, 50:60] = np.nan
    x = np.array(data, dtype=np.float32)
    x *= np.float32(1e6 / 100.0)
    x[~np.isfinite(x)] = 0.0
    kernel = filter_kernel(200.0, 0.3, 75.0, 50.0).astype(np.float32)
    expected = oaconvolve(_odd_reflect_pad(x, len(kernel) // 2), kernel[None, :], mode="valid", axes=-1)
    assert preprocess_array(data, 200.0, PreprocessConfig()).tobytes() == expected.astype(np.float32).tobytes()
