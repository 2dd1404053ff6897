"""The spectral block (issue 24): log absolute and relative band power by scipy's Welch estimate."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from passport_kit.model.spectral import STANDARD_BANDS, band_power_features, carried_bands, welch_density


def _pink(n: int, sfreq: float, seed: int = 0) -> np.ndarray:
    """Return ``n`` samples of 1/f noise with a 10-Hz rhythm (µV-sized), at ``sfreq`` Hz."""
    rng = np.random.default_rng(seed)
    spec = np.fft.rfft(rng.normal(size=n))
    f = np.fft.rfftfreq(n, 1 / sfreq)
    spec[1:] /= np.sqrt(f[1:])
    x = np.fft.irfft(spec, n)
    x = 20 * x / x.std()
    return x + 8 * np.sin(2 * np.pi * 10 * np.arange(n) / sfreq)


@pytest.mark.parametrize(("top", "expected"), [(75.0, 6), (45.0, 6), (40.0, 6), (31.0, 5), (22.0, 5), (17.0, 4),
                                                (13.0, 3)])
def test_carried_bands_clip_to_the_top_and_drop_slivers(top: float, expected: int) -> None:
    bands = carried_bands(top)
    assert len(bands) == expected and bands[-1][1] <= top
    assert all(hi - lo >= 2 for lo, hi in bands)


def test_relative_powers_sum_to_one_and_absolute_is_welch() -> None:
    from scipy.signal import welch

    x = np.stack([_pink(6000, 200.0, s) for s in range(2)])[None]  # (1, 2, 6000): one 30-s window
    feats = band_power_features(torch.from_numpy(x), STANDARD_BANDS).numpy().reshape(2, 2, 6)
    assert np.allclose((10 ** feats[:, 1]).sum(-1), 1.0, atol=1e-5)
    freqs, psd = welch(x[0], fs=200.0, nperseg=800)
    alpha = psd[:, (freqs >= 8) & (freqs < 12)].sum(-1) * (freqs[1] - freqs[0])
    assert np.allclose(feats[:, 0, 2], np.log10(alpha), atol=1e-5)
    assert int(feats[0, 1].argmax()) in (0, 2)  # delta (1/f) or alpha (the rhythm) carries most power


@pytest.mark.parametrize(("n_samples", "nperseg", "sfreq"), [(6000, 800, 200.0), (2000, 400, 100.0), (801, 800, 200.0),
                                                          (1999, 333, 83.3), (200, 200, 200.0)])
def test_welch_density_is_scipys_welch(n_samples: int, nperseg: int, sfreq: float) -> None:
    from scipy.signal import welch

    x = np.random.default_rng(nperseg).standard_normal((3, 2, n_samples)) * 5 + 2  # an offset: detrend matters
    freqs, psd = welch_density(x, sfreq, nperseg)
    ref_freqs, ref = welch(x, fs=sfreq, nperseg=nperseg, noverlap=nperseg // 2, axis=-1)
    assert np.array_equal(freqs, ref_freqs)
    np.testing.assert_allclose(psd, ref, rtol=1e-12, atol=0)


def test_the_models_200_hz_input_gives_the_recordings_own_band_powers() -> None:
    """Welch on the resampled, band-passed model input equals Welch at the recording's own rate (100 Hz)."""
    from passport_kit.signals.preprocess import PreprocessConfig, fit_band_to_rate, preprocess_array

    sfreq, seconds = 100.0, 30
    data = np.stack([_pink(int(sfreq * 240), sfreq, s) for s in range(2)])  # µV
    config = fit_band_to_rate(PreprocessConfig(), sfreq)
    bands = carried_bands(config.h_freq)
    model_in = preprocess_array(data * 1e-6, sfreq, config)  # (2, T') at 200 Hz, units of 100 µV
    n_win = data.shape[1] // int(sfreq * seconds)
    native = data[:, : n_win * int(sfreq * seconds)].reshape(2, n_win, -1).transpose(1, 0, 2)
    resampled = model_in[:, : n_win * 200 * seconds].reshape(2, n_win, -1).transpose(1, 0, 2)
    a = band_power_features(torch.from_numpy(native), bands, sfreq=sfreq).numpy().reshape(n_win, 2, 2, -1)
    b = band_power_features(torch.from_numpy(resampled.copy()), bands).numpy().reshape(n_win, 2, 2, -1)
    # Absolute power: the same up to the unit (100 µV -> 10^4 in power); relative power: the same.
    # The first and last bands touch the band-pass edges (0.3 Hz, h_freq): a looser bound there.
    assert np.abs(a[:, :, 0, 1:-1] - (b[:, :, 0, 1:-1] + 4)).max() < 0.02
    assert np.abs(a[:, :, 1, 1:-1] - b[:, :, 1, 1:-1]).max() < 0.02
    assert np.abs(a[..., [0, -1]] - b[..., [0, -1]] - np.array([4, 0])[None, None, :, None]).max() < 0.1


def test_a_flat_channel_gives_finite_features() -> None:
    x = torch.zeros(2, 1, 10, 200)
    assert torch.isfinite(band_power_features(x, STANDARD_BANDS)).all()
