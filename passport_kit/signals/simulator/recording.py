"""One simulated night of one subject, seen through one montage.

The pipeline (docs/simulator.md has the physics):

1. hypnogram, subject profile and dipole layout, from seeds that depend only on
   ``(seed, subject)``;
2. source time courses (nAm) from :mod:`~passport_kit.signals.simulator.dynamics`;
3. contact potentials = lead field (four-shell sphere) @ patterns @ sources, plus muscles,
   heart, mains and each contact's own noise, times each contact's skin gain;
4. channels = active contact minus reference contact(s) (:mod:`.electrodes`);
5. poor contacts, if asked for.

Because steps 1-2 never look at the montage, and every per-contact quantity is keyed by the
contact's position, the same ``(seed, subject)`` through two montages is the same brain: a
channel that both montages define (same contacts, same reference) is the same signal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from passport_kit.montage.schema import Montage
from passport_kit.signals.simulator import artifacts
from passport_kit.signals.simulator.dynamics import EPOCH_SECONDS, generator_blocks
from passport_kit.signals.simulator.electrodes import ContactPlan, plan_contacts
from passport_kit.signals.simulator.head_model import DEFAULT_HEAD, lead_field
from passport_kit.signals.simulator.hypnogram import simulate_hypnogram
from passport_kit.signals.simulator.profile import SubjectProfile, draw_profile
from passport_kit.signals.simulator.sources import SourceLayout, build_layout

# Independent random streams per (seed, subject): changing one part of the model does not
# reshuffle the others.
_STREAM_HYPNOGRAM, _STREAM_PROFILE, _STREAM_LAYOUT, _STREAM_SOURCES = 1, 2, 3, 4
_STREAM_MUSCLES, _STREAM_HEART, _STREAM_MAINS, _STREAM_CONTACT, _STREAM_BAD = 5, 6, 7, 8, 9
_NAM_TO_UV = 1e-9 * 1e6     # lead field is V per A·m; sources are nAm; output is µV
_MIX_BYTES = 60e6           # source time courses gathered before one mixing pass
_CHUNK = 1 << 15            # samples per chunk of a mixing pass (a few MB of temporaries)


def _rng(seed: int, subject: int, stream: int, *extra: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), int(subject), stream, *extra])


@dataclass
class SimulatedRecording:
    """Return-value object of :func:`simulate_recording`.

    ``data`` (C, n_samples) float32 in µV, channels in montage order; ``stages`` (n_epochs,)
    int64 indices into the AASM stage names; ``sfreq`` in Hz.
    """

    data: np.ndarray
    stages: np.ndarray
    sfreq: float
    ch_names: list[str]
    profile: SubjectProfile
    reference: str
    bad: dict[str, str] = field(default_factory=dict)


def simulate_recording(
    montage: Montage,
    *,
    seed: int,
    subject: int,
    n_epochs: int,
    sfreq: float = 200.0,
    bad_channels: dict[str, str] | None = None,
) -> SimulatedRecording:
    """Return one night of ``n_epochs`` 30-s epochs for subject number ``subject`` (0-based).

    ``bad_channels`` maps montage channel names to a poor-contact kind
    (``'noise'``, ``'drift'`` or ``'flat'``).
    """
    stages = simulate_hypnogram(n_epochs, _rng(seed, subject, _STREAM_HYPNOGRAM))
    profile = draw_profile(_rng(seed, subject, _STREAM_PROFILE))
    layout = build_layout(_rng(seed, subject, _STREAM_LAYOUT))
    contacts = plan_contacts(montage)
    n = n_epochs * int(round(EPOCH_SECONDS * sfreq))

    potentials = _brain_potentials(contacts, layout, profile, stages, sfreq,
                                   _rng(seed, subject, _STREAM_SOURCES), n)
    contact_rngs = [_rng(seed, subject, _STREAM_CONTACT, *key) for key in contacts.keys]
    muscles = artifacts.muscle_signals(profile, stages, sfreq, _rng(seed, subject, _STREAM_MUSCLES))
    weights = artifacts.muscle_weights(contacts.positions, contact_rngs).astype(np.float32)
    heart = artifacts.ecg_signal(n, sfreq, _rng(seed, subject, _STREAM_HEART))
    ecg_weights = artifacts.ecg_weights(contacts.positions).astype(np.float32)[:, None]
    _mix_into(potentials, [(weights, muscles), (ecg_weights, heart[None])])
    chin = muscles[list(artifacts.MUSCLES).index("chin")].copy() if "emg" in montage.kinds else None
    del muscles
    hum = artifacts.mains(n, sfreq, float(_rng(seed, subject, _STREAM_MAINS).uniform(0, 2 * np.pi)))
    for k, rng in enumerate(contact_rngs):
        # Per contact, always in this order, so a contact's draws do not depend on the montage.
        mains_uv = float(np.exp(rng.normal(0.0, 0.5))) * profile.mains_gain
        gain = float(rng.normal(1.0, profile.skin_gain_spread))
        potentials[k] += artifacts.contact_noise(rng, n, sfreq, profile.electrode_noise_uv)
        if hum is not None:
            potentials[k] += mains_uv * hum
        potentials[k] *= gain

    # Channel = active contact - reference contact(s): one product with a (C, K) matrix.
    derivation = -contacts.reference.astype(np.float32)
    derivation[np.arange(len(contacts.active)), contacts.active] += 1.0
    data = _derive(potentials, derivation)
    del potentials
    for c, ch in enumerate(montage.channels):
        if ch.kind == "emg":
            # An EMG derivation (chin) records the muscle itself, not a distant pick-up.
            data[c] += chin
        elif ch.kind == "ecg":
            data[c] = 800.0 * heart + data[c] * 0.05
    bad = dict(bad_channels or {})
    for name, kind in bad.items():
        c = montage.ch_names.index(name)
        data[c] = artifacts.corrupt_channel(data[c], kind, sfreq,  # type: ignore[arg-type]
                                            _rng(seed, subject, _STREAM_BAD, c))
    return SimulatedRecording(data, stages, float(sfreq), montage.ch_names, profile,
                              contacts.reference_description, bad)


def _mix_into(out: np.ndarray, pairs: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """Add ``sum(matrix @ signals)`` into ``out`` (R, n), in time chunks; matrices (R, G_i).

    Chunking keeps the temporaries small (R x chunk instead of R x n, which is hundreds of MB
    for a night) and the working set in cache, and reads ``out`` once for all the pairs.
    """
    n = out.shape[1]
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        acc = pairs[0][0] @ pairs[0][1][:, start:stop]
        for matrix, signals in pairs[1:]:
            acc += matrix @ signals[:, start:stop]
        out[:, start:stop] += acc


def _derive(potentials: np.ndarray, derivation: np.ndarray) -> np.ndarray:
    """Return ``derivation @ potentials``, shape (C, n), reusing the (K, n) buffer when C <= K.

    Each time chunk is read in full before its first C rows are overwritten, so the product
    can be written in place: a night then needs no second array of its size.
    """
    n_channels, n = derivation.shape[0], potentials.shape[1]
    if n_channels > potentials.shape[0]:
        data = np.zeros((n_channels, n), dtype=np.float32)
        _mix_into(data, [(derivation, potentials)])
        return data
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        potentials[:n_channels, start:stop] = derivation @ potentials[:, start:stop]
    return potentials[:n_channels]


def _brain_potentials(contacts: ContactPlan, layout: SourceLayout, profile: SubjectProfile,
                      stages: np.ndarray, sfreq: float, rng: np.random.Generator, n: int) -> np.ndarray:
    """Return the cortical and ocular potential at every contact, shape (K, n) float32, µV."""
    gains = lead_field(contacts.positions, layout.positions, layout.orientations, head=DEFAULT_HEAD)
    out = np.zeros((len(contacts.keys), n), dtype=np.float32)
    # Gather blocks up to a memory budget, then mix them in one chunked pass over `out`.
    pending: list[tuple[np.ndarray, np.ndarray]] = []
    for names, block in generator_blocks(profile, stages, sfreq, rng):
        mixing = (gains @ layout.pattern_matrix(names) * _NAM_TO_UV).astype(np.float32)
        pending.append((mixing, block))
        if sum(b.nbytes for _, b in pending) >= _MIX_BYTES:
            _mix_into(out, pending)
            pending.clear()
    if pending:
        _mix_into(out, pending)
    return out
