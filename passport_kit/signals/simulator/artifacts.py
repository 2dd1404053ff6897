"""What else electrodes pick up: muscles, heart, mains, their own noise, and poor contact.

All amplitudes are in µV at the contact (before re-referencing):

- **EMG**: seven muscle generators (temporalis, masseter and the ear-adjacent jaw muscles on
  each side, frontalis, neck, chin) emit 20-100 Hz noise with a stage-dependent tone
  (W > N1 > N2 > N3 > REM, REM atonia with brief twitches, movement bursts in wake). A contact
  sees each muscle with weight ``exp(-d / 2 cm)`` times a per-contact factor (fibre geometry
  under the skin), so nearby contacts see similar but not identical EMG.
- **ECG**: a heartbeat train (55-75 bpm with variability) projected as a uniform field
  pointing down and left, a few µV across the head.
- **Mains**: 50 Hz at a per-contact amplitude (skin impedance), only if the sampling rate
  can represent it.
- **Contact noise**: each contact's own noise (white plus 1/f), about 1 µV RMS.
- **Poor contact** (:func:`corrupt_channel`): ``noise`` (40 µV RMS white plus 40 µV RMS of
  1/f noise, 100 µV of mains, pops), ``drift`` (slow wandering of hundreds of µV plus
  electrode pops), ``flat`` (a disconnected channel: a constant).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from passport_kit.signals.simulator.dynamics import EPOCH_SECONDS, epoch_envelope, slow_noise, spectral_noise
from passport_kit.signals.simulator.profile import SubjectProfile

BadKind = Literal["noise", "drift", "flat"]
BAD_KINDS: tuple[str, ...] = ("noise", "drift", "flat")

MAINS_HZ = 50.0
#: Muscle positions (head frame, metres) and their EMG amplitude (µV RMS at 0 mm, tone 1.0).
MUSCLES: dict[str, tuple[tuple[float, float, float], float]] = {
    "temporalis_l": ((-0.075, 0.030, 0.050), 18.0),
    "temporalis_r": ((0.075, 0.030, 0.050), 18.0),
    "masseter_l": ((-0.070, 0.040, -0.040), 15.0),
    "masseter_r": ((0.070, 0.040, -0.040), 15.0),
    "frontalis": ((0.0, 0.105, 0.060), 12.0),
    "neck": ((0.0, -0.085, -0.030), 14.0),
    "chin": ((0.0, 0.085, -0.100), 40.0),
}
#: Muscle tone per stage (W, N1, N2, N3, REM).
EMG_TONE = (1.0, 0.7, 0.4, 0.35, 0.1)
_EMG_LAMBDA_M = 0.02
_ECG_GRADIENT_UV_PER_M = np.array([-60.0, 10.0, -120.0])   # toward the heart: down and left


def muscle_signals(profile: SubjectProfile, stages: np.ndarray, sfreq: float,
                   rng: np.random.Generator) -> np.ndarray:
    """Return each muscle's EMG at unit distance weight, shape (M, n) float32, µV."""
    stages = np.asarray(stages)
    spe = int(round(EPOCH_SECONDS * sfreq))
    n = len(stages) * spe
    tone = np.asarray(EMG_TONE)[stages] * np.exp(rng.normal(0.0, 0.45, len(stages)))
    env = epoch_envelope(tone * profile.emg_gain, sfreq, 2.0)
    # Movement bursts in wake (0.5/min, 1-4 s, large) and REM twitches (3/min, 0.1-0.3 s).
    bursts = np.zeros(n, dtype=np.float32)
    for stage, rate, (lo, hi), size in ((0, 0.5, (1.0, 4.0), 4.0), (4, 3.0, (0.1, 0.3), 3.0)):
        epochs = np.flatnonzero(stages == stage)
        count = rng.poisson(rate * EPOCH_SECONDS / 60.0 * len(epochs))
        for _ in range(count):  # a few per minute of that stage
            start = int(rng.choice(epochs) * spe + rng.uniform(0, spe))
            length = int(rng.uniform(lo, hi) * sfreq)
            bursts[start:start + length] = np.maximum(bursts[start:start + length], size)
    env = env + bursts * profile.emg_gain
    out = spectral_noise(rng, n, sfreq, 20.0, 100.0, exponent=0.5, count=len(MUSCLES))
    out *= env
    out *= np.array([a for _, a in MUSCLES.values()], dtype=np.float32)[:, None]
    return out


def muscle_weights(positions: np.ndarray, keys_rngs: list[np.random.Generator]) -> np.ndarray:
    """Return how strongly each contact sees each muscle, shape (K, M)."""
    centres = np.array([p for p, _ in MUSCLES.values()])
    d = np.linalg.norm(np.asarray(positions)[:, None, :] - centres[None], axis=-1)
    local = np.array([r.uniform(0.5, 1.5, len(MUSCLES)) for r in keys_rngs]).reshape(d.shape)
    return np.exp(-d / _EMG_LAMBDA_M) * local


def ecg_signal(n: int, sfreq: float, rng: np.random.Generator) -> np.ndarray:
    """Return a unit-amplitude ECG (R peak = 1), shape (n,) float32."""
    rate_hz = rng.uniform(55.0, 75.0) / 60.0
    beats = []
    t = rng.uniform(0, 1 / rate_hz)
    duration = n / sfreq
    # One interval per beat (about one per second), with 5% beat-to-beat variability.
    intervals = rng.normal(1.0 / rate_hz, 0.05 / rate_hz, int(duration * rate_hz * 1.3) + 2)
    for dt in intervals:
        t += max(dt, 0.3)
        if t >= duration:
            break
        beats.append(t)
    impulses = np.zeros(n, dtype=np.float32)
    np.add.at(impulses, (np.asarray(beats) * sfreq).astype(np.int64), 1.0)
    tt = np.arange(int(0.7 * sfreq)) / sfreq
    template = (0.15 * np.exp(-0.5 * ((tt - 0.1) / 0.025) ** 2)        # P
                - 0.1 * np.exp(-0.5 * ((tt - 0.2) / 0.008) ** 2)       # Q
                + 1.0 * np.exp(-0.5 * ((tt - 0.22) / 0.01) ** 2)       # R
                - 0.2 * np.exp(-0.5 * ((tt - 0.24) / 0.01) ** 2)       # S
                + 0.3 * np.exp(-0.5 * ((tt - 0.45) / 0.05) ** 2))      # T
    from scipy.signal import oaconvolve

    return oaconvolve(impulses, template.astype(np.float32))[:n].astype(np.float32)


def ecg_weights(positions: np.ndarray) -> np.ndarray:
    """Return the ECG pick-up of each contact (µV per unit ECG), shape (K,)."""
    return np.asarray(positions) @ _ECG_GRADIENT_UV_PER_M


def contact_noise(rng: np.random.Generator, n: int, sfreq: float, rms_uv: float) -> np.ndarray:
    """Return one contact's own noise, shape (n,) float32, µV: white plus 1/f, ``rms_uv`` RMS."""
    # White (thermal) noise plus a 1/f electrode drift below 5 Hz, 0.8 and 0.6 of the RMS.
    noise = rng.standard_normal(n, dtype=np.float32)
    noise *= 0.8 * rms_uv
    noise += slow_noise(rng, n, sfreq, 0.1, 5.0, rate=50.0, exponent=1.0) * (0.6 * rms_uv)
    return noise


def mains(n: int, sfreq: float, phase: float) -> np.ndarray | None:
    """Return a unit 50-Hz sinusoid, shape (n,) float32, or None if ``sfreq`` cannot carry it."""
    if sfreq <= 2.2 * MAINS_HZ:
        return None
    t = np.arange(n, dtype=np.float64) / sfreq
    return np.sin(2 * np.pi * MAINS_HZ * t + phase).astype(np.float32)


def corrupt_channel(x: np.ndarray, kind: BadKind, sfreq: float, rng: np.random.Generator) -> np.ndarray:
    """Return channel ``x`` (n,) µV as a poor contact of ``kind`` would record it, float32."""
    n = len(x)
    if kind == "flat":
        # A disconnected input: the amplifier holds one value.
        return np.full(n, float(rng.uniform(-5.0, 5.0)), dtype=np.float32)
    pops = np.zeros(n, dtype=np.float32)
    # Electrode pops: abrupt steps that decay over about a second.
    for start in rng.integers(0, n, max(1, int(n / sfreq / 60.0))):
        length = min(int(sfreq * 2), n - int(start))
        decay = np.exp(-np.arange(length) / sfreq).astype(np.float32)
        pops[start:start + length] += float(rng.choice([-1, 1]) * rng.uniform(100, 400)) * decay
    if kind == "noise":
        hum = mains(n, sfreq, float(rng.uniform(0, 2 * np.pi)))
        # A loose contact: thermal noise of a high impedance, 1/f contact noise, mains, pops.
        noisy = (x + 40.0 * rng.standard_normal(n, dtype=np.float32)
                 + 40.0 * spectral_noise(rng, n, sfreq, 0.3, 40.0, exponent=1.0) + 0.5 * pops)
        if hum is not None:
            noisy += 100.0 * hum
        return noisy.astype(np.float32)
    # drift: a slow random walk (below 0.1 Hz) of a few hundred µV
    wander = slow_noise(rng, n, sfreq, 0.005, 0.1, rate=2.0, exponent=2.0) * 250.0
    return (x + wander + pops).astype(np.float32)
