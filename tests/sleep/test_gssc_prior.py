"""The GSSC plugin: says why it cannot run without the user's own ``gssc``; where installed, scores every 30-s epoch.

GSSC is AGPL-3.0 and never a dependency, so CI runs only the first tests; the others skip
cleanly unless ``pip install gssc==0.0.9`` was done by hand.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from passport_kit.errors import ConfigError
from passport_kit.sleep.stagers.gssc import GsscPrior
from passport_kit.sleep.priors import STAGES, available_priors, get_prior

needs_gssc = pytest.mark.skipif(GsscPrior.unavailable() is not None, reason="gssc (AGPL-3.0) is not installed")


@pytest.fixture
def no_gssc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import gssc`` fail as it does where the package is not installed."""
    for module in [m for m in sys.modules if m == "gssc" or m.startswith("gssc.")] + ["gssc", "gssc.networks"]:
        monkeypatch.setitem(sys.modules, module, None)


def test_unavailable_gives_one_line_reason_without_gssc(no_gssc: None) -> None:
    reason = GsscPrior.unavailable()
    assert reason == ("GSSC is AGPL-3.0 and never a dependency of passport-kit: install it yourself "
                      "(pip install gssc==0.0.9) to use it")
    assert "\n" not in reason


def test_registered_with_its_licence_and_refused_without_gssc(no_gssc: None) -> None:
    assert available_priors()["gssc"] == GsscPrior.unavailable()
    assert (GsscPrior.name, GsscPrior.licence) == ("gssc", "AGPL-3.0")
    with pytest.raises(ConfigError, match=r"sleep prior 'gssc' cannot run here: GSSC is AGPL-3.0"):
        get_prior("gssc")


def _night(seconds: float, sfreq: float, seed: int = 0) -> np.ndarray:
    """Return a simulated night in µV: brown-ish noise whose slow and alpha content drift over the night."""
    rng = np.random.default_rng(seed)
    n = int(round(seconds * sfreq))
    t = np.arange(n) / sfreq
    slow = np.cumsum(rng.standard_normal(n))
    slow -= np.convolve(slow, np.ones(int(sfreq)) / sfreq, mode="same")  # no drift below ~1 Hz
    depth = 0.5 + 0.5 * np.sin(2 * np.pi * t / 600.0)
    return 8.0 * depth * slow + 10.0 * (1 - depth) * np.sin(2 * np.pi * 10.0 * t) + 5.0 * rng.standard_normal(n)


@needs_gssc
@pytest.mark.parametrize(("seconds", "sfreq", "with_eog"), [
    (300.0, 200.0, False),  # an exact multiple of 30 s: mne_infer would drop the last epoch
    (317.5, 100.0, False),  # a partial last epoch is not scored
    (240.0, 50.0, True),  # slower than GSSC's 85.33 Hz, with an EOG channel (GSSC's loudest vote)
])
def test_scores_every_whole_epoch_as_log_probabilities(seconds: float, sfreq: float, with_eog: bool) -> None:
    eeg = _night(seconds, sfreq)
    eog = _night(seconds, sfreq, seed=1) if with_eog else None
    logp = GsscPrior().night_log_proba(eeg, sfreq, eog_uv=eog)
    assert logp.shape == (int(seconds // 30), len(STAGES))
    assert np.isfinite(logp).all()
    np.testing.assert_allclose(np.exp(logp).sum(axis=1), 1.0, atol=1e-9)


@needs_gssc
def test_loads_networks_only_with_weights_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    import passport_kit.sleep.stagers.gssc as plugin

    real_load = torch.load
    seen: list[object] = []

    def checked_load(*args: object, **kwargs: object) -> object:
        seen.append(kwargs.get("weights_only"))
        assert kwargs.get("weights_only") is True, "GSSC's pickled modules must load with weights_only=True"
        return real_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", checked_load)
    plugin._networks.cache_clear()  # load again under the patched torch.load
    try:
        logp = GsscPrior().night_log_proba(_night(60.0, 100.0), 100.0)
    finally:
        plugin._networks.cache_clear()  # later tests load with the real torch.load
    assert seen == [True, True]  # the signal network and the GRU
    assert logp.shape == (2, len(STAGES))


@needs_gssc
def test_shorter_than_one_epoch_gives_no_rows() -> None:
    assert GsscPrior().night_log_proba(_night(20.0, 100.0), 100.0).shape == (0, len(STAGES))
