"""One simulated night: reproducible, the same brain through any montage, plausible amplitudes."""

from __future__ import annotations

import numpy as np
import pytest
from simulator_helpers import POS, make_montage
from scipy.signal import butter, sosfiltfilt

from passport_kit.montage import Montage
from passport_kit.signals.simulator import simulate_recording

_EPOCHS = 16  # 8 minutes


def _band(x: np.ndarray, sfreq: float = 200.0) -> np.ndarray:
    """Return x band-passed to 0.5-35 Hz (the EEG band: no drift, EMG tail or mains)."""
    return sosfiltfilt(butter(4, [0.5, 35.0], "bandpass", fs=sfreq, output="sos"), x, axis=-1)


def test_same_seed_gives_identical_data(ear_montage: Montage) -> None:
    a = simulate_recording(ear_montage, seed=4, subject=1, n_epochs=4)
    b = simulate_recording(ear_montage, seed=4, subject=1, n_epochs=4)
    np.testing.assert_array_equal(a.data, b.data)
    np.testing.assert_array_equal(a.stages, b.stages)


@pytest.mark.parametrize(("seed", "subject"), [(5, 1), (4, 2)])
def test_other_seed_or_subject_gives_other_data(ear_montage: Montage, seed: int, subject: int) -> None:
    a = simulate_recording(ear_montage, seed=4, subject=1, n_epochs=4)
    b = simulate_recording(ear_montage, seed=seed, subject=subject, n_epochs=4)
    assert not np.allclose(a.data, b.data)


def test_a_montage_subset_sees_the_same_brain(ear_montage: Montage) -> None:
    names = ["ERA", "ELA-ELE", "ELA"]
    full = simulate_recording(ear_montage, seed=2, subject=0, n_epochs=4)
    part = simulate_recording(ear_montage.subset(names, name="sim-ear-part"), seed=2, subject=0, n_epochs=4)
    for i, name in enumerate(names):
        np.testing.assert_allclose(part.data[i], full.data[ear_montage.ch_names.index(name)],
                                   rtol=1e-5, atol=1e-3)


def test_bipolar_channel_is_the_difference_of_its_two_contacts(ear_montage: Montage) -> None:
    bipolar = Montage.from_dict({"name": "sim-bip", "units": "mm", "reference": "Cz", "channels": [
        {"name": "ELA-ERA", "position": POS["ELA"], "reference_position": POS["ERA"]}]})
    mono = simulate_recording(ear_montage, seed=1, subject=0, n_epochs=4)
    bip = simulate_recording(bipolar, seed=1, subject=0, n_epochs=4)
    # ELA - Cz minus ERA - Cz: the common reference cancels exactly.
    expected = mono.data[ear_montage.ch_names.index("ELA")] - mono.data[ear_montage.ch_names.index("ERA")]
    np.testing.assert_allclose(bip.data[0], expected, rtol=1e-4, atol=1e-3)


@pytest.fixture(scope="module")
def psg_night() -> tuple[Montage, np.ndarray]:
    """Return the PSG montage and 8 minutes of its band-passed data (µV)."""
    montage = make_montage("sim-psg2", [
        {"name": "Fz-M2", "position": POS["Fz"], "reference_position": POS["M2"]},
        {"name": "C4-M1", "position": POS["C4"], "reference_position": POS["M1"]},
        {"name": "ELA-ELE", "position": POS["ELA"], "reference_position": POS["ELE"]},
        {"name": "ELB-ELI", "position": POS["ELB"], "reference_position": POS["ELI"]},
        {"name": "ELA-ERA", "position": POS["ELA"], "reference_position": POS["ERA"]},
    ])
    rec = simulate_recording(montage, seed=0, subject=0, n_epochs=_EPOCHS)
    return montage, _band(rec.data)


@pytest.mark.parametrize(("channel", "low", "high"), [
    ("Fz-M2", 8.0, 80.0),      # scalp: tens of µV
    ("C4-M1", 8.0, 80.0),
    ("ELA-ERA", 5.0, 60.0),    # across the head, ear to ear
    ("ELA-ELE", 0.5, 20.0),    # within one ear: a few µV
    ("ELB-ELI", 0.5, 20.0),
])
def test_channel_amplitudes_are_physiological(psg_night: tuple[Montage, np.ndarray], channel: str,
                                              low: float, high: float) -> None:
    montage, data = psg_night
    rms = float(np.sqrt(np.mean(data[montage.ch_names.index(channel)] ** 2)))
    assert low <= rms <= high


def test_within_ear_signals_are_smaller_than_scalp_signals(psg_night: tuple[Montage, np.ndarray]) -> None:
    montage, data = psg_night
    rms = dict(zip(montage.ch_names, np.sqrt(np.mean(data**2, axis=1))))
    assert rms["ELA-ELE"] < rms["ELA-ERA"] / 2 and rms["ELA-ELE"] < rms["C4-M1"] / 2


@pytest.mark.parametrize("kind", ["noise", "drift", "flat"])
def test_poor_contacts_are_visibly_bad(ear_montage: Montage, kind: str) -> None:
    rec = simulate_recording(ear_montage, seed=3, subject=0, n_epochs=8, bad_channels={"ELB": kind})
    bad = ear_montage.ch_names.index("ELB")
    good = [ear_montage.ch_names.index(n) for n in ("ELA", "ELE", "ERA")]
    if kind == "flat":
        assert np.std(rec.data[bad]) < 0.01
    elif kind == "noise":   # broadband: even the EEG band is several times larger
        assert np.std(_band(rec.data[bad])) > 2 * max(np.std(_band(rec.data[g])) for g in good)
    else:                   # drift: large slow excursions
        slow = rec.data - _band(rec.data)
        assert np.std(slow[bad]) > 3 * max(np.std(slow[g]) for g in good)
    assert rec.bad == {"ELB": kind}
