"""Sleep priors (issue 33): the plugin interface, YASA built in, the night's smoothing and calibration."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from passport_kit.errors import ConfigError
from passport_kit.model.night import (expected_calibration_error, fit_temperature, smooth, temper, transition_counts,
                                      transition_matrix)
from passport_kit.sleep import STAGES, available_priors, classes_to_stages, get_prior, pick_channels, prior_log_proba
from passport_kit.sleep.priors import SleepPrior, night_signal


def test_classes_map_onto_the_five_stages_by_name_or_not_at_all() -> None:
    assert classes_to_stages(["Wake", "N1", "N2", "N3", "R"]) == [0, 1, 2, 3, 4]
    assert classes_to_stages(["W", "N2", "REM"]) == [0, 2, 4]
    assert classes_to_stages(["rest", "task"]) is None
    assert classes_to_stages(["W", "wake"]) is None  # two classes on one stage


def test_the_stager_reads_the_eeg_channel_nearest_a_central_site_and_the_first_eog_and_emg() -> None:
    names = ["Fp1", "C4", "O1", "LOC", "Chin"]
    pos = np.array([[-0.03, 0.08, 0.03], [0.065, 0.0, 0.06], [-0.03, -0.08, 0.03], [-0.05, 0.07, 0.0],
                    [0.0, 0.05, -0.08]])
    spec = pick_channels(names, pos, ["eeg", "eeg", "eeg", "eog", "emg"])
    assert (spec.eeg, spec.eog, spec.emg) == ("C4", "LOC", "Chin")
    assert pick_channels(["X"], np.array([[np.nan] * 3]), ["eeg"]) is None


class _Echo(SleepPrior):
    """A test prior: stage = epoch index mod 5 (so the mapping of epochs onto windows can be read off)."""

    name = "echo-test"
    licence = "none"

    def night_log_proba(self, eeg_uv, sfreq, *, eog_uv=None, emg_uv=None):  # noqa: ANN001, ANN201
        n = int(len(eeg_uv) // (30 * sfreq))
        p = np.full((n, 5), 1e-3)
        p[np.arange(n), np.arange(n) % 5] = 1.0
        return np.log(p / p.sum(1, keepdims=True))


def test_prior_log_proba_gives_each_window_its_own_epoch_whatever_the_window_order() -> None:
    x = np.zeros((6, 1, 30, 200), dtype=np.float32)
    onsets = np.array([150.0, 0.0, 30.0, 60.0, 90.0, 120.0])  # shuffled rows
    from passport_kit.sleep.priors import StagerChoice

    out = prior_log_proba(_Echo(), x, onsets, ["C3"], StagerChoice("echo-test", "C3"), window_seconds=30)
    assert out.argmax(1).tolist() == [0, 0, 1, 2, 3, 4]  # epoch 5 -> stage 0; epoch 0 -> 0; ...
    with pytest.raises(ConfigError, match="30-s epochs"):
        prior_log_proba(_Echo(), x, onsets, ["C3"], StagerChoice("echo-test", "C3"), window_seconds=10)
    with pytest.raises(ConfigError, match="lacks"):
        prior_log_proba(_Echo(), x, onsets, ["C3"], StagerChoice("echo-test", "Cz"), window_seconds=30)


def test_night_signal_lays_windows_at_their_onsets_in_microvolts() -> None:
    x = np.ones((2, 1, 1, 200), dtype=np.float32)
    sig = night_signal(x, np.array([0.0, 2.0]), 0)
    assert sig.shape == (600,) and sig[:200].tolist() == [100.0] * 200 and not sig[200:400].any()


def test_unknown_priors_name_the_known_ones() -> None:
    assert available_priors()["yasa"] is None
    with pytest.raises(ConfigError, match="unknown sleep prior 'nope'.*yasa"):
        get_prior("nope")


def test_a_second_prior_of_a_taken_name_is_refused() -> None:
    from passport_kit.sleep import PRIORS

    with pytest.raises(ValueError, match="a sleep prior named 'echo-test' is already registered"):
        type("AnotherEcho", (SleepPrior,), {"name": "echo-test"})
    assert PRIORS["echo-test"] is _Echo


def test_yasa_scores_a_simulated_night_with_finite_log_probabilities(tmp_path: Path) -> None:
    from passport_kit.montage import resolve_montage
    from passport_kit.signals.simulator.simulate import simulate_dataset

    montage = resolve_montage("tuh-standard")
    ds = simulate_dataset(montage, tmp_path / "sim", n_subjects=1, hours=0.25, seed=2)  # 30 epochs
    import mne

    raw = mne.io.read_raw_edf(next(Path(ds).glob("*.edf")), preload=True, verbose=False)
    spec = pick_channels(list(montage.ch_names), montage.positions, list(montage.kinds))
    data = raw.get_data(picks=[spec.eeg])[0] * 1e6
    logp = get_prior("yasa").night_log_proba(data, raw.info["sfreq"])
    assert logp.shape == (int(len(data) // (30 * raw.info["sfreq"])), len(STAGES))
    assert np.isfinite(logp).all() and np.allclose(np.exp(logp).sum(1), 1.0)


def test_smoothing_removes_an_isolated_flip_that_the_transitions_call_unlikely() -> None:
    y = np.array([0] * 30 + [2] * 30)
    a = transition_matrix(transition_counts(y, ["n"] * 60, 3))
    assert a[0, 0] > 0.9 and np.allclose(a.sum(1), 1)
    proba = np.tile([0.7, 0.1, 0.2], (20, 1))
    proba[10] = [0.3, 0.1, 0.6]  # one epoch says stage 2
    out = smooth(proba, a)
    assert out.argmax(1).tolist() == [0] * 20 and np.allclose(out.sum(1), 1)
    # nights are smoothed apart: a second night starts afresh
    two = smooth(np.vstack([proba, proba[::-1]]), a, groups=["a"] * 20 + ["b"] * 20)
    assert np.allclose(two[:20], out)


def test_temperature_scaling_makes_overconfident_probabilities_honest() -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 2000)
    logits = np.eye(3)[y] * 1.0 + rng.normal(0, 1.0, (2000, 3))
    proba = np.exp(4 * logits)  # overconfident
    proba /= proba.sum(1, keepdims=True)
    t = fit_temperature(proba, y)
    assert t > 2
    assert expected_calibration_error(temper(proba, t), y) < expected_calibration_error(proba, y) / 2
    assert np.allclose(temper(proba, 1.0), proba)


def test_antropy_is_imported_with_numbas_cache_so_a_process_does_not_recompile_it() -> None:
    """YASA's features (antropy) compiled ~9 s of numba in every process that staged a night (issue 43)."""
    import subprocess
    import sys

    code = ("from passport_kit.sleep.stagers.yasa import import_antropy_cached as f; f(); import antropy.fractal as a; "
            "from numba.core.caching import NullCache; print(type(a._higuchi_fd._cache).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() != "NullCache"


@pytest.mark.parametrize("with_eog", [False, True])
def test_yasa_prior_gives_the_probabilities_of_yasas_own_predict_to_the_byte(with_eog: bool) -> None:
    """The classifier loaded once and asked for probabilities alone (issue 47) reads what predict() would have."""
    import warnings

    import mne
    import yasa

    from passport_kit.sleep.priors import floored_log
    from passport_kit.sleep.stagers.yasa import _YASA_COLUMNS

    rng = np.random.default_rng(3)
    t = np.arange(20 * 60 * 200) / 200.0
    eeg = 20 * rng.standard_normal(len(t)) + 30 * np.sin(2 * np.pi * 1.5 * t) * (t > 600)  # slow waves later
    eog = 30 * rng.standard_normal(len(t)) if with_eog else None
    prior = get_prior("yasa")
    got = [prior.night_log_proba(eeg, 200.0, eog_uv=eog) for _ in range(2)]  # the second with the kept classifier
    names = ["EEG", "EOG"] if with_eog else ["EEG"]
    data = np.vstack([eeg, eog] if with_eog else [eeg]) * 1e-6
    raw = mne.io.RawArray(data, mne.create_info(names, 200.0, ["eeg", "eog"][:len(names)]), verbose=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = yasa.SleepStaging(raw, eeg_name="EEG", eog_name="EOG" if with_eog else None).predict().proba
    expected = floored_log(table[[next(c for c in _YASA_COLUMNS[s] if c in table.columns) for s in STAGES]].to_numpy())
    assert all(g.tobytes() == expected.tobytes() for g in got)
