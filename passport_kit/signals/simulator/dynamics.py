"""What the sources do: stage-dependent rhythms and sleep graphoelements as time courses.

Every generator of :data:`~passport_kit.signals.simulator.sources.PATTERNS` gets a time
course in nanoampere-metres (nAm), built without per-sample Python loops:

- **rhythms** (background, delta, theta, alpha, beta) are Gaussian noise with a prescribed
  spectrum, synthesised in the frequency domain (random complex coefficients in the band,
  one inverse FFT), then multiplied by a smooth stage envelope: a per-epoch gain from
  :data:`RHYTHM_GAINS` (times a log-normal epoch-to-epoch jitter), repeated to samples and
  smoothed over 4 s so that stage changes are not steps;
- **events** (spindles, K-complexes, vertex sharp waves, sawtooth bursts, blinks, saccades)
  are Poisson trains with stage-dependent rates (:data:`EVENT_RATES`); each event adds a short
  template (a Hann-windowed 11-16 Hz burst, a biphasic K-complex, ...). The loop runs over
  events (a few thousand per night), never over samples.

Stage indices follow :data:`~passport_kit.signals.simulator.hypnogram.STAGES` (W, N1, N2,
N3, REM). Physiology in brief (AASM manual, Iber 2007; Rechtschaffen & Kales 1968):
wake has posterior alpha (eyes closed) or blinks and saccades (eyes open), beta and high EMG;
N1 loses alpha, gains theta, vertex sharp waves and slow rolling eye movements; N2 has
spindles and K-complexes; N3 has high-amplitude frontal slow waves; REM has low-voltage
mixed theta, sawtooth waves, rapid eye movements and atonia.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
from scipy.fft import irfft, next_fast_len
from scipy.ndimage import uniform_filter1d
from scipy.signal import lfilter

from passport_kit.signals.simulator.hypnogram import EPOCH_SECONDS, N2, W
from passport_kit.signals.simulator.profile import SubjectProfile
from passport_kit.signals.simulator.sources import BACKGROUND_SITES

#: Per-stage amplitude multipliers (W, N1, N2, N3, REM) of each rhythm.
RHYTHM_GAINS: dict[str, tuple[float, float, float, float, float]] = {
    "bg": (1.0, 1.0, 1.1, 1.3, 0.9),
    "delta": (0.15, 0.5, 0.85, 2.7, 0.35),
    "theta": (0.45, 1.0, 0.75, 0.7, 0.9),
    "alpha": (1.0, 0.4, 0.12, 0.1, 0.25),   # wake value: eyes closed; eyes open is 0.25
    "beta": (1.0, 0.55, 0.35, 0.25, 0.55),
    "slow_eye": (0.0, 1.0, 0.15, 0.0, 0.0),  # slow rolling eye movements
}
#: RMS moment (nAm) of each rhythm's generator at stage gain 1.0.
RHYTHM_NAM: dict[str, float] = {
    "bg": 22.0, "delta": 34.0, "theta": 30.0, "alpha": 70.0, "beta": 14.0, "slow_eye": 120.0,
}
#: Events per minute in each stage (W, N1, N2, N3, REM); spindles and K-complexes in N2 come
#: from the subject's profile instead.
EVENT_RATES: dict[str, tuple[float, float, float, float, float]] = {
    "spindle": (0.0, 0.3, -1.0, 1.0, 0.0),
    "kcomplex": (0.0, 0.1, -1.0, 0.4, 0.0),
    "vertex": (0.0, 3.0, 0.4, 0.0, 0.0),
    "sawtooth": (0.0, 0.1, 0.0, 0.0, 1.5),
    "blink": (12.0, 1.5, 0.0, 0.0, 0.0),     # wake value: eyes open; eyes closed is 2
    "saccade": (20.0, 0.5, 0.0, 0.0, 0.0),   # wake value: eyes open; eyes closed is 2
    "rem_burst": (0.0, 0.0, 0.0, 0.0, 2.0),  # bursts of 2-8 rapid eye movements
}
#: Peak moment (nAm) of one event of each kind.
EVENT_NAM: dict[str, float] = {
    "spindle": 140.0, "kcomplex": 450.0, "vertex": 200.0, "sawtooth": 160.0,
    "blink": 1000.0, "saccade": 500.0,
}
_ENVELOPE_SMOOTH_S = 15.0
_EPOCH_JITTER_SD = 0.35    # log-normal SD of the per-epoch amplitude of each rhythm
#: Largest block of generator time courses held at once (bytes); bounds memory for long nights.
_BLOCK_BYTES = 60e6


def spectral_noise(
    rng: np.random.Generator, n: int, sfreq: float, lo: float, hi: float, *,
    exponent: float = 0.0, peak: float | None = None, width: float = 1.0, white: float = 0.0,
    count: int | None = None,
) -> np.ndarray:
    """Return unit-RMS Gaussian noise with power in ``lo``-``hi`` Hz, float32.

    Shape (n,), or (count, n) independent series when ``count`` is given. The power spectrum
    is ``f**-exponent`` in the band (0: flat, 1: pink) plus a flat part of relative power
    ``white``, or a Gaussian bump at ``peak`` Hz with SD ``width`` when ``peak`` is given;
    band edges taper over 10% of the band so the noise does not ring. The RMS is exact in
    expectation (Parseval), not renormalised per draw, which saves a pass over the data.
    """
    k = 1 if count is None else count
    # Synthesise on a length with small prime factors (a prime length makes the FFT ~10x
    # slower) and keep the first n samples: a stretch of stationary noise is still that noise.
    n_out, n = n, next_fast_len(n, real=True)
    freqs = np.fft.rfftfreq(n, d=1.0 / sfreq)
    hi = min(hi, sfreq / 2.0)
    band = np.flatnonzero((freqs >= lo) & (freqs <= hi) & (freqs > 0) & (freqs < sfreq / 2.0))
    if len(band) == 0:
        out = np.zeros((k, n_out), dtype=np.float32)
        return out if count is not None else out[0]
    f = freqs[band]
    if peak is not None:
        power = np.exp(-0.5 * ((f - peak) / width) ** 2)
    else:
        power = f ** (-exponent)
        power = power / power.mean() + white
    edge = 0.1 * (hi - lo)
    power = power * np.clip((f - lo) / edge, 0, 1) * np.clip((hi - f) / edge, 0, 1)
    # A bin with complex coefficient of variance 2*P adds 4*P/n**2 to the variance of irfft.
    amplitude = np.sqrt(power / (4.0 * power.sum() / n**2)).astype(np.float32)
    out = np.empty((k, n_out), dtype=np.float32)
    spectrum = np.zeros(len(freqs), dtype=np.complex64)
    # One series at a time: the temporaries stay one series long however many are asked for,
    # and the draws are the same as for one (k, bins) array.
    for i in range(k):
        # Pairs of float32 normals are laid out exactly like complex64: view them, do not copy.
        coeffs = rng.standard_normal((len(band), 2), dtype=np.float32).view(np.complex64)[:, 0]
        coeffs *= amplitude
        spectrum[band[0]:band[-1] + 1] = coeffs
        out[i] = irfft(spectrum, n=n)[:n_out]
    return out if count is not None else out[0]


def slow_noise(
    rng: np.random.Generator, n: int, sfreq: float, lo: float, hi: float, *, rate: float,
    count: int | None = None, **shape: float,
) -> np.ndarray:
    """Return :func:`spectral_noise` for a band far below ``sfreq``, float32, shape as there.

    The noise is synthesised at ``rate`` Hz (which should be at least ten times ``hi``) and
    linearly interpolated to ``sfreq``: an inverse FFT of n * rate / sfreq points instead of
    n, and the interpolation error of a band that far below the synthesis rate is under 2%.
    """
    if rate >= sfreq:
        return spectral_noise(rng, n, sfreq, lo, hi, count=count, **shape)
    m = int(np.ceil(n * rate / sfreq)) + 1
    low = spectral_noise(rng, m, rate, lo, hi, count=1 if count is None else count, **shape)
    t = np.arange(n, dtype=np.float64) * (rate / sfreq)
    grid = np.arange(m, dtype=np.float64)
    out = np.empty((len(low), n), dtype=np.float32)
    for i, row in enumerate(low):
        out[i] = np.interp(t, grid, row)
    return out if count is not None else out[0]


def epoch_envelope(per_epoch: np.ndarray, sfreq: float, smooth_seconds: float) -> np.ndarray:
    """Return per-epoch values as a per-sample envelope, shape (n_epochs * 30 * sfreq,) float32.

    The values are spread to one-second steps and box-smoothed over ``smooth_seconds`` there,
    then held for each second's samples: smoothing on the coarse grid costs 1/sfreq of
    smoothing the samples, and a gain that moves in one-second steps is inaudible to a model.
    """
    per_second = np.repeat(np.asarray(per_epoch, dtype=np.float32), int(EPOCH_SECONDS))
    if smooth_seconds > 1:
        per_second = uniform_filter1d(per_second, int(smooth_seconds), mode="nearest")
    spe = int(round(EPOCH_SECONDS * sfreq))
    if spe % int(EPOCH_SECONDS) == 0:
        return np.repeat(per_second, spe // int(EPOCH_SECONDS))
    # Rates that do not divide into whole samples per second: interpolate instead.
    t = (np.arange(len(per_epoch) * spe) + 0.5) / sfreq - 0.5
    return np.interp(t, np.arange(len(per_second)), per_second).astype(np.float32)


class _Events:
    """Poisson event times per stage, for one recording (helper of :func:`generator_blocks`)."""

    def __init__(self, stages: np.ndarray, sfreq: float, rng: np.random.Generator) -> None:
        self.stages, self.sfreq, self.rng = stages, sfreq, rng
        self.spe = int(round(EPOCH_SECONDS * sfreq))
        self.n = len(stages) * self.spe

    def onsets(self, rate_per_epoch: np.ndarray) -> np.ndarray:
        """Return sorted event onsets in samples for per-epoch rates (events per minute)."""
        counts = self.rng.poisson(np.asarray(rate_per_epoch) * EPOCH_SECONDS / 60.0)
        epochs = np.repeat(np.arange(len(self.stages)), counts)
        offsets = self.rng.uniform(0.0, self.spe, len(epochs))
        return np.sort((epochs * self.spe + offsets).astype(np.int64))

    def add(self, trace: np.ndarray, onset: int, template: np.ndarray) -> None:
        """Add ``template`` into ``trace`` at ``onset`` samples, clipped to the recording."""
        stop = min(onset + len(template), self.n)
        if onset < stop:
            trace[onset:stop] += template[: stop - onset]


def _hann(n: int) -> np.ndarray:
    return np.hanning(max(n, 3)).astype(np.float32)


def generator_blocks(
    profile: SubjectProfile, stages: np.ndarray, sfreq: float, rng: np.random.Generator,
) -> Iterator[tuple[tuple[str, ...], np.ndarray]]:
    """Yield ``(generator names, time courses)`` blocks, time courses (K, n_samples) float32 nAm.

    ``stages`` (n_epochs,) are stage indices; the recording has ``n_epochs * 30 * sfreq``
    samples. Blocks are yielded one rhythm at a time so that a full night never holds every
    generator in memory at once.
    """
    stages = np.asarray(stages, dtype=np.int64)
    spe = int(round(EPOCH_SECONDS * sfreq))
    n = len(stages) * spe
    t_epoch = np.arange(len(stages))

    # Eyes open or closed in each wake epoch: a persistent two-state chain.
    eyes_closed = np.zeros(len(stages), dtype=bool)
    state = rng.random() < profile.eyes_closed
    flips = rng.random(len(stages))
    for k in t_epoch:  # one step per epoch (cheap), not per sample
        if flips[k] < 0.2:
            state = rng.random() < profile.eyes_closed
        eyes_closed[k] = state
    eyes_closed &= stages == W

    def envelope(rhythm: str, extra: np.ndarray | None = None) -> np.ndarray:
        gains = np.asarray(RHYTHM_GAINS[rhythm], dtype=np.float64)[stages]
        if extra is not None:
            gains = gains * extra
        gains = gains * np.exp(rng.normal(0.0, _EPOCH_JITTER_SD, len(stages)))
        return epoch_envelope(gains * RHYTHM_NAM[rhythm], sfreq, _ENVELOPE_SMOOTH_S)

    brain = profile.brain_gain

    # Background: one pink-ish (1/f^1.3) generator per background site, a few at a time.
    env = envelope("bg") * brain
    step = int(np.clip(_BLOCK_BYTES // (4 * n), 1, len(BACKGROUND_SITES)))
    for start in range(0, len(BACKGROUND_SITES), step):
        names = tuple(f"bg_{s}" for s in BACKGROUND_SITES[start:start + step])
        block = spectral_noise(rng, n, sfreq, 0.3, 45.0, exponent=1.3, count=len(names))
        block *= env
        yield names, block
        del block

    # Delta / slow oscillation: frontal-dominant, strongest in N3.
    env = envelope("delta") * brain * profile.delta_gain
    names = ("delta_global", "delta_left", "delta_right")
    block = slow_noise(rng, n, sfreq, 0.4, 4.0, rate=40.0, peak=0.9, width=0.45, count=3)
    block *= env
    yield names, block

    env = envelope("theta") * brain
    names = ("theta_mid", "theta_left", "theta_right")
    block = spectral_noise(rng, n, sfreq, 3.5, 8.0, peak=5.5, width=1.0, count=3)
    block *= env
    yield names, block

    open_factor = np.where(stages == W, np.where(eyes_closed, 1.0, 0.25), 1.0)
    env = envelope("alpha", open_factor) * brain * profile.alpha_gain
    # REM alpha is 1-2 Hz slower than wake alpha; the small difference is ignored here.
    names = ("alpha_common", "alpha_left", "alpha_right")
    block = spectral_noise(rng, n, sfreq, profile.alpha_freq - 2.5, profile.alpha_freq + 2.5,
                           peak=profile.alpha_freq, width=0.45, count=3)
    block *= env
    yield names, block

    env = envelope("beta") * brain
    names = ("beta_left", "beta_right", "beta_mid")
    block = spectral_noise(rng, n, sfreq, 14.0, 30.0, exponent=1.0, count=3)
    block *= env
    yield names, block
    del block

    events = _Events(stages, sfreq, rng)
    yield ("spindle_fast", "spindle_slow"), _spindles(events, profile, brain)
    yield ("kcomplex", "vertex", "sawtooth"), _transients(events, profile, brain)
    yield ("eye_h", "eye_v"), _eyes(events, profile, eyes_closed, envelope, n)


def _stage_rates(kind: str, stages: np.ndarray, n2_rate: float | None = None) -> np.ndarray:
    rates = np.asarray(EVENT_RATES[kind], dtype=np.float64)
    if n2_rate is not None:
        rates = rates.copy()
        rates[N2] = n2_rate
    return rates[stages]


def _spindles(events: _Events, profile: SubjectProfile, brain: float) -> np.ndarray:
    """Return fast and slow spindle traces, shape (2, n) nAm."""
    out = np.zeros((2, events.n), dtype=np.float32)
    rng, sfreq = events.rng, events.sfreq
    onsets = events.onsets(_stage_rates("spindle", events.stages, profile.spindle_density))
    slow = rng.random(len(onsets)) < 0.3          # a third are slow frontal spindles
    durations = rng.uniform(0.5, 2.0, len(onsets))
    freqs = profile.spindle_freq + rng.normal(0.0, 0.4, len(onsets)) - 1.5 * slow
    amps = EVENT_NAM["spindle"] * brain * np.exp(rng.normal(0.0, 0.3, len(onsets)))
    phases = rng.uniform(0, 2 * np.pi, len(onsets))
    for onset, dur, f, a, ph, is_slow in zip(onsets, durations, freqs, amps, phases, slow):
        t = np.arange(int(dur * sfreq), dtype=np.float32) / sfreq
        template = a * _hann(len(t)) * np.sin(2 * np.pi * f * t + ph).astype(np.float32)
        events.add(out[int(is_slow)], int(onset), template)
    return out


def _transients(events: _Events, profile: SubjectProfile, brain: float) -> np.ndarray:
    """Return K-complex, vertex-sharp-wave and sawtooth traces, shape (3, n) nAm."""
    out = np.zeros((3, events.n), dtype=np.float32)
    rng, sfreq = events.rng, events.sfreq
    t = np.arange(int(1.5 * sfreq), dtype=np.float32) / sfreq
    # K-complex: a sharp negative wave (~0.5 s) then a slower positive one; negative moment
    # means surface-negative under a radial source. About a third carry a spindle after them.
    kc = (-np.exp(-0.5 * ((t - 0.3) / 0.09) ** 2) + 0.55 * np.exp(-0.5 * ((t - 0.75) / 0.17) ** 2))
    for onset in events.onsets(_stage_rates("kcomplex", events.stages, profile.kcomplex_rate)):
        a = EVENT_NAM["kcomplex"] * brain * np.exp(rng.normal(0.0, 0.3))
        events.add(out[0], int(onset), (a * kc).astype(np.float32))
    # Vertex sharp wave: a negative transient of about 150 ms, maximal at Cz.
    tv = np.arange(int(0.4 * sfreq), dtype=np.float32) / sfreq
    vsw = -np.exp(-0.5 * ((tv - 0.12) / 0.035) ** 2) + 0.3 * np.exp(-0.5 * ((tv - 0.24) / 0.05) ** 2)
    for onset in events.onsets(_stage_rates("vertex", events.stages)):
        a = EVENT_NAM["vertex"] * brain * np.exp(rng.normal(0.0, 0.3))
        events.add(out[1], int(onset), (a * vsw).astype(np.float32))
    # Sawtooth waves: bursts of 2-5 Hz triangular waves with a slow rise and a fast fall.
    for onset in events.onsets(_stage_rates("sawtooth", events.stages)):
        f, dur = rng.uniform(2.0, 5.0), rng.uniform(1.5, 5.0)
        ts = np.arange(int(dur * sfreq), dtype=np.float32) / sfreq
        phase = (f * ts) % 1.0
        saw = np.where(phase < 0.75, phase / 0.75, (1.0 - phase) / 0.25) - 0.5
        a = EVENT_NAM["sawtooth"] * brain * np.exp(rng.normal(0.0, 0.25))
        events.add(out[2], int(onset), (a * _hann(len(ts)) * saw).astype(np.float32))
    return out


def _eyes(events: _Events, profile: SubjectProfile, eyes_closed: np.ndarray,
          envelope: Callable[[str], np.ndarray], n: int) -> np.ndarray:
    """Return horizontal and vertical eye-rotation traces, shape (2, n) nAm."""
    rng, sfreq, stages = events.rng, events.sfreq, events.stages
    gain = profile.eye_gain
    # Saccades: jumps of the eye position; the position then relaxes toward straight ahead
    # (time constant 1.5 s, also what an AC-coupled EOG shows). Leaky integration = lfilter.
    jumps = np.zeros(n, dtype=np.float32)
    rates = _stage_rates("saccade", stages)
    rates = np.where(eyes_closed, 2.0, rates)
    onsets = list(events.onsets(rates))
    # REM: bursts of 2-8 rapid eye movements 0.3-1 s apart (phasic REM).
    for burst in events.onsets(_stage_rates("rem_burst", stages)):
        gaps = rng.uniform(0.3, 1.0, rng.integers(2, 9)) * sfreq
        onsets.extend((burst + np.cumsum(gaps)).astype(np.int64))
    onsets = np.asarray(onsets, dtype=np.int64)
    onsets = onsets[onsets < n]
    sizes = (EVENT_NAM["saccade"] * gain * rng.choice([-1.0, 1.0], len(onsets))
             * rng.uniform(0.4, 1.2, len(onsets)))
    np.add.at(jumps, onsets, sizes.astype(np.float32))
    leak = np.exp(-1.0 / (1.5 * sfreq))
    horizontal = lfilter([1.0], [1.0, -leak], jumps).astype(np.float32)
    horizontal = uniform_filter1d(horizontal, max(int(0.04 * sfreq), 1))   # ~40 ms saccade
    # Slow rolling eye movements of drowsiness (0.1-0.6 Hz).
    horizontal += slow_noise(rng, n, sfreq, 0.1, 0.6, rate=10.0) * envelope("slow_eye") * gain

    vertical = np.zeros(n, dtype=np.float32)
    rates = np.where(eyes_closed, 2.0, _stage_rates("blink", stages))
    blink = _hann(int(0.3 * sfreq))
    for onset in events.onsets(rates):
        a = EVENT_NAM["blink"] * gain * np.exp(rng.normal(0.0, 0.2))
        events.add(vertical, int(onset), a * blink)
    return np.stack([horizontal, vertical])
