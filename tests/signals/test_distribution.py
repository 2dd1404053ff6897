"""The training-distribution guard (issues 34 and 35): held-out data passes; amplitude, noise and other spectra do not."""

from __future__ import annotations

import numpy as np
import pytest

from passport_kit.signals.distribution import (
    AMPLITUDE_LIMIT,
    DistributionVerdict,
    distribution_profile,
    score_recording,
    spectral_features,
)

NAMES = [f"E{i}" for i in range(12)]


def _windows(seed: int, n: int = 40, *, channels: int = 12, alpha: float = 1.0) -> np.ndarray:
    """Return ``(n, C, 30, 200)`` windows: one shared 1/f-ish source with alpha, mixed into each channel, plus noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(30 * 200) / 200.0
    out = np.empty((n, channels, 30, 200), dtype=np.float32)
    gains = 0.6 + 0.4 * np.linspace(0, 1, channels)
    for k in range(n):
        brown = np.cumsum(rng.standard_normal(t.size))
        brown = (brown - brown.mean()) / brown.std()
        source = brown + alpha * np.sin(2 * np.pi * rng.uniform(9, 11) * t)
        mix = gains[:, None] * source[None] + 0.3 * rng.standard_normal((channels, t.size))
        out[k] = (0.2 * mix).reshape(channels, 30, 200)
    return out


class _Quality:
    """The part of a ChannelQuality the guard reads: per-window 1-40 Hz amplitude and SD (µV)."""

    class thresholds:  # noqa: N801 - mimics ChannelQuality.thresholds
        flat_std_uv = 0.1

    def __init__(self, band_uv: np.ndarray) -> None:
        self.window_statistics = {"band_uv": band_uv, "std_uv": band_uv}


def _quality(x: np.ndarray, gain: float = 1.0) -> _Quality:
    return _Quality(gain * 100 * x.reshape(len(x), x.shape[1], -1).std(axis=-1))


@pytest.fixture(scope="module")
def profile() -> dict:
    train = [_windows(s) for s in range(4)]
    groups = np.concatenate([np.full(len(w), f"s{s}") for s, w in enumerate(train)])
    x = np.concatenate(train)
    return distribution_profile(x, NAMES, top_hz=75.0, qualities=[_quality(w) for w in train], groups=groups)


def _score(profile: dict, x: np.ndarray, gain: float = 1.0) -> DistributionVerdict:
    verdict = score_recording(profile, x, _quality(x, gain), top_hz=75.0)
    assert verdict is not None
    return verdict


def test_a_held_out_recording_of_the_same_kind_passes(profile: dict) -> None:
    verdict = _score(profile, _windows(11))
    assert not verdict.outside, verdict.to_json()


@pytest.mark.parametrize("gain", [10.0, 0.1])
def test_ten_times_the_amplitude_either_way_is_outside(profile: dict, gain: float) -> None:
    # Issue 35: a night at 10x amplitude was staged "SE 98.3 %"; the unit check refused only 30x.
    verdict = _score(profile, _windows(11), gain)
    assert verdict.outside and "amplitude" in verdict.reason
    assert verdict.amplitude_ratio == pytest.approx(gain, rel=0.2)
    assert gain > AMPLITUDE_LIMIT or gain < 1 / AMPLITUDE_LIMIT


def test_half_the_channels_noise_is_outside(profile: dict) -> None:
    x = _windows(11)
    x[:, :6] = 0.2 * np.random.default_rng(5).standard_normal(x[:, :6].shape)
    verdict = _score(profile, x)
    assert verdict.outside and "correlations between its channels" in verdict.reason


def test_one_flat_channel_of_twelve_passes(profile: dict) -> None:
    x = _windows(11)
    x[:, 3] = 0.0
    verdict = _score(profile, x)
    assert not verdict.outside, verdict.to_json()
    assert "E3" not in verdict.channel_distance  # a flat channel has no spectrum: the contact policy's to handle


def test_another_spectrum_is_outside_and_names_it(profile: dict) -> None:
    # White noise on every channel: a flat spectrum, unlike the 1/f + alpha of the training windows.
    x = 0.2 * np.random.default_rng(9).standard_normal((30, 12, 30, 200)).astype(np.float32)
    verdict = _score(profile, x)
    assert verdict.outside
    assert verdict.to_json()["outside"] is True and verdict.to_json()["reason"] == verdict.reason


def test_a_recording_whose_band_cannot_carry_the_profiles_is_not_scored(profile: dict) -> None:
    # Its band check (predict.band_too_narrow) flags it; the spectra would not be comparable.
    assert score_recording(profile, _windows(11), None, top_hz=20.0) is None


def test_the_profile_is_compact_and_json_ready(profile: dict) -> None:
    import json

    text = json.dumps(profile)
    assert len(text) < 100_000
    assert profile["correlation"]["scale_from"] == "held-out subjects"
    assert np.asarray(profile["quantiles"]).shape == (12, 6, 5)


def test_flat_windows_have_no_spectral_features() -> None:
    x = _windows(1, n=3)
    x[:, 0] = 0.0
    features = spectral_features(x)
    assert np.isnan(features[:, 0]).all() and np.isfinite(features[:, 1:]).all()


def test_many_channels_store_a_diagonal_and_stay_compact() -> None:
    import json

    x = _windows(3, n=30, channels=30)
    profile = distribution_profile(x, [f"C{i}" for i in range(30)], top_hz=75.0,
                                   groups=np.repeat(["a", "b", "c"], 10))
    assert np.asarray(profile["correlation"]["inverse_covariance"]).ndim == 1    # 435 pairs
    assert len(json.dumps(profile)) < 100_000
    verdict = score_recording(profile, _windows(4, n=10, channels=30), None, top_hz=75.0)
    assert verdict is not None and verdict.correlation_distance is not None


def test_the_guards_features_are_their_definitions_to_round_off() -> None:
    """Issue 47 computes them with less work: the same numbers as the plain definitions, to ~1e-12."""
    from passport_kit.signals.distribution import correlation_features

    x = _windows(4, n=6, channels=5)
    x[2, 1] = 0.0  # a flat channel-window: NaN in both
    x[3, 2] += 3.0  # an offset: the patch means are not read
    signal = x.astype(np.float64).reshape(6, 5, -1)
    centred = signal - signal.mean(axis=-1, keepdims=True)
    sd = centred.std(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.einsum("nct,ndt->ncd", centred, centred) / centred.shape[-1] / (sd[:, :, None] * sd[:, None, :])
    upper = np.triu_indices(5, 1)
    r[(sd < 1e-6)[:, :, None] | (sd < 1e-6)[:, None, :]] = np.nan
    expected = np.arctanh(np.clip(r[:, upper[0], upper[1]], -0.999, 0.999))
    np.testing.assert_allclose(correlation_features(x), expected, rtol=1e-12, atol=1e-12)
    patches = x.astype(np.float64) - x.astype(np.float64).mean(axis=-1, keepdims=True)
    power = (np.abs(np.fft.rfft(patches, axis=-1)) ** 2).mean(axis=2)
    freqs = np.fft.rfftfreq(200, 1 / 200.0)
    bands = [(1.0, 4.0), (4.0, 8.0), (8.0, 12.0), (12.0, 16.0), (16.0, 30.0), (30.0, 40.0)]
    whole = power[..., (freqs >= 1.0) & (freqs < 40.0)].sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.log10(np.stack([power[..., (freqs >= lo) & (freqs < hi)].sum(-1) for lo, hi in bands], -1)
                       / whole[..., None] + 1e-9)
    rel[~(whole > 1e-12)] = np.nan
    np.testing.assert_allclose(spectral_features(x), rel, rtol=1e-12, atol=1e-12)


def test_the_chunk_of_windows_changes_no_number(monkeypatch: pytest.MonkeyPatch) -> None:
    import passport_kit.signals.distribution as distribution

    x = _windows(5, n=11)
    got = {}
    for chunk in (3, 256):
        monkeypatch.setattr(distribution, "_CHUNK", chunk)
        got[chunk] = (distribution.spectral_features(x), distribution.correlation_features(x))
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(got[3], got[256]))
