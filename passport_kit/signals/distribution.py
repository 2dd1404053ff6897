"""The training-distribution guard: is a recording like the windows an adapter was trained on?

A model answers on anything, often confidently: an adapter trained on simulated Muse sleep
staged a real awake Muse recording as N2/N3 at p 0.94 (issue 34), and one trained on ear-EEG
staged the same night at 10× amplitude as "SE 98 %" (issue 35). Both recordings passed the unit
check (:mod:`passport_kit.signals.amplitude`, which refuses only ×30 and beyond). So the bundle
carries a compact description of its training windows, and ``predict`` scores each recording
against it — one mechanism for amplitude faults, channel faults and other devices:

- :func:`distribution_profile` (``adapt``; adapter.json → ``metrics.distribution``): per
  channel, the 1–40 Hz RMS amplitude of the raw training recordings (median, µV), and the
  quantiles (1, 25, 50, 75, 99 %) of six log relative band powers of the preprocessed training
  windows (:func:`spectral_features`; the shape of the spectrum, which instance normalisation
  keeps).
- :func:`score_recording` (``predict``): each window-channel's features are compared with the
  training range: the distance is how far a feature lies outside its 1–99 % range, in units of
  its interquartile spread (0 inside), averaged over features and channels; the recording's
  distance is the median over its windows. A channel is *far* where its median distance is
  over :data:`DISTANCE_LIMIT`; the recording is *outside* when its distance is over
  :data:`DISTANCE_LIMIT` or its median amplitude ratio to the training data is outside
  ×1/:data:`AMPLITUDE_LIMIT` … ×:data:`AMPLITUDE_LIMIT`. Predict then withholds the sleep
  statistics and says why in one line.

For sleep staging the guard also judges what the adapter *said* (issue 45: an adapter trained on
simulated Muse sleep staged a real awake Muse recording W, N3, W, N3 ... at p 0.99, and the
spectral distance of every awake recording was 0.00-0.29, because the training nights hold wake
windows too):

- *sequence*: the profile stores the stage transitions of the training nights (``transitions``:
  counts of stage i followed by stage j in the next epoch); a predicted night with more than
  :data:`UNSEEN_LIMIT` of its transitions among those that neither the training nights show nor
  scored human sleep has (:data:`SLEEP_TRANSITIONS`: W→N3 from one epoch to the next) is
  outside. Sleep's own transitions always count as seen (issue 58: N2→REM and REM→REM called
  "unlike sleep" because the two training excerpts held no REM).
- *sleep at all*: the profile stores each stage's mean spectrum and the within-stage spread
  (``stages``); a window staged as a sleep stage is compared with that stage's training spectrum
  (mean squared distance in units of the spread), and a recording whose median over its
  sleep-staged windows is above :data:`STAGE_FIT_LIMIT` is outside: what the adapter calls sleep
  does not look like the sleep it was trained on.

Both parts are optional in the stored profile: a bundle written before them is scored without
them.

Flat and NaN channel-windows carry no spectrum; they are left out here (the contact policy and
the window flags handle them), so one dead channel does not make a recording "unlike" its
training data. The thresholds were measured on real recordings (held-out eegmat subjects and
Muse subjects of the same device, DREAMS against eegmat, real Muse against simulated Muse):
``benchmarks/distribution_guard.py``, docs/reliability.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Bands (Hz) of the relative band powers: delta, theta, alpha, sigma, beta, low gamma.
BANDS: tuple[tuple[str, float, float], ...] = (("delta", 1.0, 4.0), ("theta", 4.0, 8.0), ("alpha", 8.0, 12.0),
                                                ("sigma", 12.0, 16.0), ("beta", 16.0, 30.0), ("gamma", 30.0, 40.0))
#: Quantile levels stored per channel and feature.
LEVELS = (0.01, 0.25, 0.5, 0.75, 0.99)
#: A recording (or a channel) whose median spectral window distance is above this is unlike the
#: training data (docs/reliability.md: held-out subjects of the same device stayed under 0.31).
DISTANCE_LIMIT = 0.5
#: A recording whose median correlation distance (between-channel correlations, Mahalanobis, in
#: units of how far training subjects lie from one another) is above this is unlike the training
#: data (held-out subjects of the same device stayed under 1.72; real Muse against simulated
#: Muse: 11 of 12 above it).
CORRELATION_LIMIT = 1.8
#: A recording whose median 1-40 Hz amplitude is more than this many times above or below the
#: training data's is outside it (held-out real Muse subjects reached 1/3.65 of the others).
AMPLITUDE_LIMIT = 4.0
#: A staged night is outside when more than this share of its epoch-to-epoch transitions (and at least
#: :data:`UNSEEN_MIN` of them) are ones the training nights never show (docs/RESULTS.md § guard).
UNSEEN_LIMIT = 0.1
UNSEEN_MIN = 2
#: The epoch-to-epoch transitions of scored human sleep (AASM stages, 30-s epochs): every pair except the five that
#: scored nights of healthy sleepers rarely show from one epoch to the next (W->N3, W->REM, N1->N3, N3->REM,
#: REM->N3; W->REM is the sleep-onset REM period of narcolepsy). The sequence check counts them as seen whatever the
#: training nights held: two 30-min excerpts without REM say nothing about whether REM follows N2.
SLEEP_TRANSITIONS: frozenset[tuple[str, str]] = frozenset(
    (a, b) for a in ("W", "N1", "N2", "N3", "REM") for b in ("W", "N1", "N2", "N3", "REM")) - {
    ("W", "N3"), ("W", "REM"), ("N1", "N3"), ("N3", "REM"), ("REM", "N3")}
#: Training nights with fewer epoch-to-epoch transitions than this say too little of which ones never happen: the
#: sequence check is not made.
MIN_TRAINING_TRANSITIONS = 100
#: A stage with fewer training windows than this has no spectrum to compare with: its windows are not judged.
MIN_STAGE_WINDOWS = 10
#: A staged recording is outside when the median over its sleep-staged windows of the mean squared distance of
#: their spectrum from their stage's training spectrum (in within-stage SDs) is above this: held-out simulated
#: nights stayed under 0.85, real awake Muse recordings staged as sleep reached 1.2-7.2 (docs/RESULTS.md § guard).
STAGE_FIT_LIMIT = 2.0
#: Shrinkage of the correlation features' covariance toward its diagonal: few training windows
#: and many channel pairs make the plain covariance singular.
_SHRINK = 0.2
#: Channel pairs above which only the correlations' variances are stored (a diagonal covariance):
#: the full matrix grows with the square of the pairs (300 pairs, 25 channels: 90,000 numbers).
_MAX_FULL_PAIRS = 300
#: Interquartile spread floor (log power): a feature that barely varied in training is not
#: made infinitely strict.
_MIN_SPREAD = 0.1
#: Power (in squared input units) under which a channel-window counts as flat and is left out.
_FLAT_POWER = 1e-12
#: Windows transformed at once: bounds memory for long recordings, small enough that the allocator reuses its
#: buffers instead of mapping fresh pages for every chunk (issue 47: the same numbers as 256, less CPU).
_CHUNK = 32
#: Version of the stored description; another version is not compared.
VERSION = 1


def correlation_features(x: np.ndarray) -> np.ndarray:
    """Return ``(N, K)`` Fisher-z correlations between every channel pair of windows ``x`` ``(N, C, P, S)``.

    ``K = C (C - 1) / 2`` (upper triangle, row by row); NaN for a pair with a flat channel.
    """
    n, c = x.shape[:2]
    upper = np.triu_indices(c, 1)
    out = np.full((n, len(upper[0])), np.nan)
    for start in range(0, n, _CHUNK):
        chunk = np.array(x[start:start + _CHUNK], dtype=np.float64).reshape(-1, c, x.shape[2] * x.shape[3])
        chunk -= chunk.mean(axis=-1, keepdims=True)
        # One BLAS product per window, the SDs from its diagonal (issue 47: a third of the guard's CPU went to an
        # einsum and a second pass for the SDs; the same float64 numbers to round-off, ~1e-15 relative).
        cov = chunk @ chunk.transpose(0, 2, 1) / chunk.shape[-1]
        sd = np.sqrt(np.einsum("ncc->nc", cov))
        with np.errstate(divide="ignore", invalid="ignore"):
            r = cov / (sd[:, :, None] * sd[:, None, :])
        flat = sd < np.sqrt(_FLAT_POWER)
        r[flat[:, :, None] | flat[:, None, :]] = np.nan
        out[start:start + len(chunk)] = np.arctanh(np.clip(r[:, upper[0], upper[1]], -0.999, 0.999))
    return out


def _fit_correlations(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the mean and the shrunk inverse covariance of correlation features ``z`` ``(N, K)``.

    Above :data:`_MAX_FULL_PAIRS` pairs the inverse is of the diagonal only, returned as ``(K,)``.
    """
    mean = z.mean(axis=0)
    if z.shape[1] > _MAX_FULL_PAIRS:
        return mean, 1.0 / (z.var(axis=0) + 1e-4)
    cov = np.atleast_2d(np.cov(z.T))
    cov = (1 - _SHRINK) * cov + _SHRINK * np.diag(np.diag(cov)) + 1e-4 * np.eye(len(mean))
    return mean, np.linalg.inv(cov)


def _correlation_profile(x: np.ndarray, groups: np.ndarray | None) -> dict[str, Any] | None:
    """Return mean, shrunk inverse covariance and the distance scale of the training windows' correlations.

    The scale is how far training subjects lie from one another: the largest median distance of
    one group's windows (``groups``: subject per window) from the others' fit; with fewer than
    three groups, the training windows' own 99th-percentile distance.
    """
    if x.shape[1] < 2:
        return None
    z = correlation_features(x)
    finite = np.isfinite(z).all(axis=1)
    z = z[finite]
    if len(z) < 2:
        return None
    mean, inverse = _fit_correlations(z)
    scale = float(np.quantile(_mahalanobis(z, mean, inverse), 0.99))
    labels = None if groups is None else np.asarray(groups)[finite]
    if labels is not None and len(set(labels.tolist())) >= 3:
        held_out = []
        for g in dict.fromkeys(labels.tolist()):
            inside = labels == g
            if inside.all() or (~inside).sum() < 2:
                continue
            m, inv = _fit_correlations(z[~inside])
            held_out.append(float(np.median(_mahalanobis(z[inside], m, inv))))
        scale = max(held_out, default=scale)
    return {"mean": np.round(mean, 5).tolist(), "inverse_covariance": np.round(inverse, 5).tolist(),
            "scale": scale, "scale_from": "held-out subjects" if labels is not None and
            len(set(labels.tolist())) >= 3 else "training windows (p99)"}


def _mahalanobis(z: np.ndarray, mean: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """Return ``(N,)`` Mahalanobis distances of rows ``z`` from ``mean`` under ``inverse`` (or its diagonal, (K,))."""
    d = z - mean
    if inverse.ndim == 1:
        return np.sqrt(np.maximum((d * d * inverse).sum(axis=1), 0.0))
    return np.sqrt(np.maximum(np.einsum("ni,ij,nj->n", d, inverse, d), 0.0))


class _Rows:
    """``x[rows]`` read a chunk at a time: the training windows are often a memmap larger than memory."""

    def __init__(self, x: np.ndarray, rows: np.ndarray) -> None:
        self.x, self.rows = x, np.asarray(rows)
        self.shape = (len(self.rows), *x.shape[1:])

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, part: slice) -> np.ndarray:
        return np.asarray(self.x[np.sort(self.rows[part])])


def carried_bands(top_hz: float) -> list[tuple[str, float, float]]:
    """Return the :data:`BANDS` a recording filtered up to ``top_hz`` carries (their top within it)."""
    return [b for b in BANDS if b[2] <= top_hz + 1e-9]


def spectral_features(x: np.ndarray, *, sfreq: float = 200.0, top_hz: float = 40.0) -> np.ndarray:
    """Return ``(N, C, F)`` log10 relative band powers of windows ``x`` ``(N, C, P, S)``; NaN where flat.

    Each one-second patch of S samples is Fourier transformed; power is averaged over a
    window's patches; each band's power is divided by the power of 1 Hz to the top carried
    band's edge (the 0-Hz bin, a patch's mean, is never read). Flat or non-finite channel-windows are NaN.
    """
    bands = carried_bands(top_hz)
    n, c, p, s = x.shape
    freqs = np.fft.rfftfreq(s, d=1.0 / sfreq)
    masks = np.stack([(freqs >= lo) & (freqs < hi) for _, lo, hi in bands]) if bands else np.zeros((0, len(freqs)),
                                                                                                   bool)
    total = (freqs >= 1.0) & (freqs < max((hi for _, _, hi in bands), default=top_hz))
    out = np.full((n, c, len(bands)), np.nan)
    for start in range(0, n, _CHUNK):
        # Each patch's mean is not removed: it lies in the 0-Hz bin alone, which no band and no total reads (removing
        # it changed the other bins by round-off only, ~1e-16 relative, and took a third of these features' CPU).
        chunk = np.asarray(x[start:start + _CHUNK], dtype=np.float64)
        power = (np.abs(np.fft.rfft(chunk, axis=-1)) ** 2).mean(axis=2)     # (n, C, freqs)
        whole = power[..., total].sum(-1)
        band = power @ masks.T.astype(np.float64)                          # (n, C, F)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.log10(band / whole[..., None] + 1e-9)
        bad = ~(np.isfinite(whole) & (whole > _FLAT_POWER))
        rel[bad] = np.nan
        out[start:start + len(chunk)] = rel
    return out


def channel_amplitudes(qualities: Iterable[Any]) -> np.ndarray | None:
    """Return ``(C,)`` the median 1–40 Hz RMS amplitude (µV) of each channel's live windows in ``qualities``.

    ``qualities``: :class:`~passport_kit.signals.quality.ChannelQuality` of recordings of one
    montage. NaN for a channel flat everywhere; None without any quality.
    """
    per: list[np.ndarray] = []
    for q in qualities:
        band = np.asarray(q.window_statistics["band_uv"], dtype=np.float64)
        live = np.asarray(q.window_statistics["std_uv"]) >= q.thresholds.flat_std_uv
        per.append(np.where(live & np.isfinite(band), band, np.nan))
    if not per:
        return None
    stacked = np.concatenate(per, axis=0)
    if not stacked.size:
        return None
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN channel: NaN is the answer
            return np.nanmedian(stacked, axis=0)


def transition_record(stages: Sequence[str], y: np.ndarray, recording: np.ndarray, onset_s: np.ndarray,
                      window_seconds: float) -> dict[str, Any]:
    """Return the profile's ``transitions`` block: ``(K, K)`` counts of stage i followed by stage j one epoch later.

    ``y``, ``recording``, ``onset_s`` ``(N,)``: each window's class index (negative: unlabeled), recording and onset
    in seconds; only windows exactly one ``window_seconds`` apart in the same recording count as a transition.
    """
    order = np.lexsort((np.asarray(onset_s, dtype=np.float64), np.asarray(recording).astype(str)))
    y, rec, t = np.asarray(y)[order], np.asarray(recording).astype(str)[order], np.asarray(onset_s)[order]
    nxt = (rec[1:] == rec[:-1]) & np.isclose(np.diff(t), window_seconds) & (y[1:] >= 0) & (y[:-1] >= 0)
    counts = np.zeros((len(stages), len(stages)), dtype=np.int64)
    np.add.at(counts, (y[:-1][nxt], y[1:][nxt]), 1)
    return {"classes": list(stages), "counts": counts.tolist()}


def _stage_spectra(features: np.ndarray, y: np.ndarray, stages: Sequence[str]) -> dict[str, Any] | None:
    """Return the profile's ``stages`` block: each class's mean window spectrum ``(K, C, F)`` and the pooled
    within-class SD ``(C, F)`` of windows' ``features`` ``(N, C, F)`` with class indices ``y`` (None: too few)."""
    import warnings

    y = np.asarray(y)
    means = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a channel flat in every window of a class
        for k in range(len(stages)):
            means.append(np.nanmean(features[y == k], axis=0) if (y == k).any() else
                         np.full(features.shape[1:], np.nan))
        centred = features - np.stack(means)[np.clip(y, 0, None)]
        sd = np.nanstd(centred[y >= 0], axis=0)
    if not (y >= 0).any() or not np.isfinite(sd).any():
        return None
    return {"classes": list(stages), "windows": [int((y == k).sum()) for k in range(len(stages))],
            "mean": np.round(np.stack(means), 5).tolist(),
            "sd": np.round(np.maximum(np.nan_to_num(sd, nan=_MIN_SPREAD), 1e-3), 5).tolist()}


def distribution_profile(x: np.ndarray, ch_names: Sequence[str], *, top_hz: float, sfreq: float = 200.0,
                         qualities: Iterable[Any] | None = None, groups: np.ndarray | None = None,
                         rows: np.ndarray | None = None, stages: Sequence[str] | None = None,
                         labels: np.ndarray | None = None,
                         transitions: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Return the compact description of training windows ``x`` ``(N, C, P, S)`` stored in the bundle.

    ``top_hz``: the band-pass top the windows were filtered with; ``qualities``: the raw
    training recordings' ChannelQuality (their per-channel amplitude; None: no amplitude part,
    as for instance-normalised windows without raw scores); ``groups`` ``(N,)``: each window's
    subject, to scale the correlation distance by how far training subjects lie from one
    another; ``rows``: the windows of ``x`` to describe (default all; read a chunk at a time).
    Sleep staging: ``stages`` (the classes, AASM names) with ``labels`` ``(N,)`` (class index per
    window) add each stage's mean spectrum, and ``transitions`` (:func:`transition_record`) the
    training nights' stage transitions. None when no window has a spectrum.
    """
    if rows is not None:
        groups = None if groups is None else np.asarray(groups)[np.sort(np.asarray(rows))]
        labels = None if labels is None else np.asarray(labels)[np.sort(np.asarray(rows))]
        x = _Rows(x, np.sort(np.asarray(rows)))  # type: ignore[assignment]
    features = spectral_features(x, sfreq=sfreq, top_hz=min(top_hz, 40.0))
    if not features.size or not np.isfinite(features).any():
        return None
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-flat channel: NaN quantiles
        q = np.nanquantile(features, LEVELS, axis=0)        # (L, C, F)
    amplitude = channel_amplitudes(qualities) if qualities is not None else None
    return {
        "version": VERSION,
        "channels": list(ch_names),
        "bands": [name for name, _, _ in carried_bands(min(top_hz, 40.0))],
        "top_hz": min(float(top_hz), 40.0),
        "levels": list(LEVELS),
        "quantiles": np.round(np.moveaxis(q, 0, -1), 5).tolist(),          # (C, F, L)
        "amplitude_uv": None if amplitude is None else [None if not np.isfinite(a) else round(float(a), 4)
                                                         for a in amplitude],
        "correlation": _correlation_profile(x, groups),
        "windows": int(len(x)),
        "distance_limit": DISTANCE_LIMIT,
        "correlation_limit": CORRELATION_LIMIT,
        "amplitude_limit": AMPLITUDE_LIMIT,
    } | ({} if stages is None or labels is None else {"stages": _stage_spectra(features, labels, stages)}) | (
        {} if transitions is None else {"transitions": transitions})


@dataclass(frozen=True)
class DistributionVerdict:
    """How far one recording lies from an adapter's training data (:func:`score_recording`)."""

    distance: float                         # median window distance (0: inside the training range)
    channel_distance: dict[str, float]      # per channel, median over windows
    amplitude_ratio: float | None           # the recording's median amplitude over the training data's
    correlation_distance: float | None = None   # median over windows, in units of the training subjects' spread
    distance_limit: float = DISTANCE_LIMIT
    correlation_limit: float = CORRELATION_LIMIT
    amplitude_limit: float = AMPLITUDE_LIMIT
    far_channels: list[str] = field(default_factory=list)
    #: Sleep staging: the predicted transitions the training nights never show, of all the night's transitions.
    unseen_transitions: int | None = None
    transitions: int | None = None
    unseen_examples: list[str] = field(default_factory=list)
    #: Sleep staging: the median distance of the sleep-staged windows' spectra from their stage's in training.
    stage_fit: float | None = None
    staged_sleep: int | None = None
    #: The recording is among the adapter's training data: it cannot be unlike it (issue 58), so it is never outside;
    #: the measures stay, for the record.
    in_sample: bool = False

    @property
    def outside(self) -> bool:
        """Return whether the recording is unlike the training data (distance or amplitude beyond its limit)."""
        return self.reason is not None

    @property
    def reason(self) -> str | None:
        """Return the one line saying why the recording is unlike the training data, or None (always for an in-sample
        recording: it is the training data)."""
        if self.in_sample:
            return None
        ratio = self.amplitude_ratio
        if ratio is not None and not 1.0 / self.amplitude_limit <= ratio <= self.amplitude_limit:
            return (f"its amplitude is {ratio:.2g}x that of the recordings the adapter was trained on (beyond "
                    f"x{self.amplitude_limit:g} either way, more than people differ): a wrong unit or scale "
                    "(--units, --scale), or another device; its results would mislead")
        corr = self.correlation_distance
        if corr is not None and corr > self.correlation_limit:
            return (f"the correlations between its channels are unlike those of the recordings the adapter was "
                    f"trained on (distance {corr:.2f}, held-out recordings of the training device stay under "
                    f"{self.correlation_limit:g}): another device or montage, swapped channels, or several noisy "
                    "channels; its results would mislead")
        if self.distance > self.distance_limit:
            far = (f"; channels most unlike: {', '.join(self.far_channels[:4])}" if self.far_channels and
                   len(self.far_channels) < len(self.channel_distance) else "")
            return (f"its spectrum is unlike the recordings the adapter was trained on (distance {self.distance:.2f}, "
                    f"held-out recordings of the training device stay under {self.distance_limit:g}){far}: another "
                    "device, state or noise; adapt on recordings like it for predictions you can trust")
        if self.stage_fit is not None and self.stage_fit > STAGE_FIT_LIMIT:
            return (f"it does not look like sleep: the spectra of its {self.staged_sleep} windows staged as sleep are "
                    f"unlike the training nights' windows of those stages (distance {self.stage_fit:.2f}, held-out "
                    f"nights stay under {STAGE_FIT_LIMIT:g}); an awake or other recording: its staging would mislead")
        if self.unseen_transitions is not None and _too_many_unseen(self.unseen_transitions, self.transitions or 0):
            return (f"its stage sequence is unlike sleep: {self.unseen_transitions} of its {self.transitions} "
                    f"epoch-to-epoch transitions are ones that neither scored sleep nor the training nights show "
                    f"({', '.join(self.unseen_examples[:3])}); an awake or other recording, or noise: its staging "
                    "would mislead")
        return None

    def to_json(self) -> dict[str, Any]:
        """Return the summary JSON's ``distribution`` block."""
        corr = self.correlation_distance
        return {"outside": self.outside, "distance": round(self.distance, 4), "distance_limit": self.distance_limit,
                "amplitude_ratio": None if self.amplitude_ratio is None else round(self.amplitude_ratio, 4),
                "amplitude_limit": self.amplitude_limit,
                "correlation_distance": None if corr is None else round(corr, 4),
                "correlation_limit": self.correlation_limit, "far_channels": self.far_channels,
                "channel_distance": {k: round(v, 4) for k, v in self.channel_distance.items()},
                "unseen_transitions": self.unseen_transitions, "transitions": self.transitions,
                "unseen_transition_limit": UNSEEN_LIMIT,
                "stage_fit": None if self.stage_fit is None else round(self.stage_fit, 4),
                "staged_sleep": self.staged_sleep, "stage_fit_limit": STAGE_FIT_LIMIT,
                "in_sample": self.in_sample, "reason": self.reason}


def _too_many_unseen(unseen: int, total: int) -> bool:
    """Return whether ``unseen`` of ``total`` transitions are too many to be staging errors of a real night."""
    return unseen >= UNSEEN_MIN and unseen > UNSEEN_LIMIT * total


def sequence_check(profile: dict[str, Any], predicted: np.ndarray, onset_s: np.ndarray,
                   window_seconds: float) -> tuple[int, int, list[str]] | None:
    """Return ``(unseen, total, examples)``: the predicted epoch-to-epoch transitions that neither the training nights
    show nor scored sleep has (:data:`SLEEP_TRANSITIONS`).

    ``predicted`` ``(N,)``: class indices in the profile's ``transitions`` classes; ``onset_s``: their onsets (a gap
    breaks the chain). None without a stored ``transitions`` block.
    """
    block = profile.get("transitions")
    if not block or int(np.sum(block["counts"])) < MIN_TRAINING_TRANSITIONS:
        return None
    seen = np.asarray(block["counts"]) > 0
    names = list(block["classes"])
    seen |= sleep_transitions(names)
    p = np.asarray(predicted)
    nxt = np.isclose(np.diff(np.asarray(onset_s, dtype=np.float64)), window_seconds)
    pairs = [(int(a), int(b)) for a, b, ok in zip(p[:-1], p[1:], nxt) if ok]
    unseen = [(a, b) for a, b in pairs if not seen[a, b]]
    examples = list(dict.fromkeys(f"{names[a]}->{names[b]}" for a, b in unseen))
    return len(unseen), len(pairs), examples


def sleep_transitions(classes: Sequence[str]) -> np.ndarray:
    """Return ``(K, K)`` bool: which transitions between ``classes`` scored human sleep has (:data:`SLEEP_TRANSITIONS`;
    classes that are not AASM stage names have none)."""
    names = [str(c).upper() for c in classes]
    return np.array([[(a, b) in SLEEP_TRANSITIONS for b in names] for a in names], dtype=bool).reshape(len(names),
                                                                                                      len(names))


def stage_fit(profile: dict[str, Any], features: np.ndarray, predicted: np.ndarray) -> tuple[float, int] | None:
    """Return ``(distance, n)``: over the ``n`` windows predicted as a sleep stage, the median of each one's mean
    squared distance from its stage's training spectrum, in units of the within-stage SD.

    ``features`` ``(N, C, F)``: the windows' :func:`spectral_features`; ``predicted`` ``(N,)`` class indices in the
    profile's ``stages`` classes. None without a ``stages`` block, a wake class, or a window staged as a sleep stage
    with at least :data:`MIN_STAGE_WINDOWS` training windows.
    """
    import warnings

    block = profile.get("stages")
    if not block:
        return None
    names = [str(c).upper() for c in block["classes"]]
    wake = [k for k, c in enumerate(names) if c in ("W", "WAKE")]
    mean = np.asarray(block["mean"], dtype=np.float64)
    # A feature that barely varied within a stage in training is not made infinitely strict (as window_distances).
    sd = np.maximum(np.asarray(block["sd"], dtype=np.float64), _MIN_SPREAD)
    f = min(mean.shape[2], features.shape[2])
    predicted = np.asarray(predicted)
    judged = [k for k, n in enumerate(block.get("windows") or [MIN_STAGE_WINDOWS] * len(names))
              if n >= MIN_STAGE_WINDOWS and k not in wake]
    asleep = np.flatnonzero(np.isin(predicted, judged))
    if not wake or not len(asleep):
        return None
    z = (features[asleep, :, :f] - mean[predicted[asleep], :, :f]) / sd[None, :, :f]     # (n, C, F)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a flat window: NaN, left out
        d = np.nanmean(z * z, axis=(1, 2))
    d = d[np.isfinite(d)]
    return (float(np.median(d)), int(len(asleep))) if len(d) else None


def window_distances(profile: dict[str, Any], features: np.ndarray) -> np.ndarray:
    """Return ``(N, C)`` distances of window-channel ``features`` ``(N, C, F)`` from the profile (NaN: flat).

    A feature inside its training 1–99 % range counts 0; outside, its distance from the range
    in units of the training interquartile spread (at least :data:`_MIN_SPREAD`); averaged over
    the features.
    """
    q = np.asarray(profile["quantiles"], dtype=np.float64)              # (C, F, L)
    f = min(q.shape[1], features.shape[2])
    q, features = q[:, :f], features[:, :, :f]
    low, q25, q75, high = q[..., 0], q[..., 1], q[..., 3], q[..., 4]
    spread = np.maximum(np.nan_to_num(q75 - q25, nan=_MIN_SPREAD), _MIN_SPREAD)
    with np.errstate(invalid="ignore"):
        outside = np.maximum(np.maximum(features - high, low - features), 0.0) / spread
    # A channel flat throughout training has NaN quantiles: nothing to compare with, distance 0.
    outside = np.where(np.isnan(high) & np.isfinite(features), 0.0, outside)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(outside, axis=2)


def score_recording(profile: dict[str, Any], x: np.ndarray, quality: Any = None, *, top_hz: float,
                    sfreq: float = 200.0, predicted: np.ndarray | None = None, onset_s: np.ndarray | None = None,
                    window_seconds: float = 30.0) -> DistributionVerdict | None:
    """Return how far the windows ``x`` ``(N, C, P, S)`` of one recording lie from ``profile``.

    ``quality``: the raw recording's ChannelQuality, for the amplitude ratio (None: not
    compared); ``top_hz``: the band-pass top the windows were filtered with; ``predicted``
    ``(N,)`` and ``onset_s`` ``(N,)``: the adapter's classes of the windows and their onsets, for
    the sleep checks (:func:`sequence_check`, :func:`stage_fit`). None when the
    profile is of another version or montage size, the recording's band does not carry the
    profile's bands (the band check of predict flags such recordings), or nothing in the
    recording has a spectrum.
    """
    import warnings

    if profile.get("version") != VERSION or len(profile.get("channels", [])) != x.shape[1] or not len(x):
        return None
    trained_top = float(profile.get("top_hz", 40.0))
    if len(carried_bands(top_hz)) < len(carried_bands(trained_top)):
        return None
    names = list(profile["channels"])
    features = spectral_features(x, sfreq=sfreq, top_hz=trained_top)
    dist = window_distances(profile, features)                           # (N, C)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        per_window = np.nanmean(dist, axis=1)
        channel = np.nanmedian(dist, axis=0)
    live = np.isfinite(per_window)
    if not live.any():
        return None
    distance = float(np.median(per_window[live]))
    channel_distance = {n: float(d) for n, d in zip(names, channel) if np.isfinite(d)}
    far = sorted((n for n, d in channel_distance.items() if d > DISTANCE_LIMIT), key=lambda n: -channel_distance[n])
    ratio = None
    trained = profile.get("amplitude_uv")
    if quality is not None and trained is not None:
        now = channel_amplitudes([quality])
        ref = np.array([np.nan if a is None else a for a in trained], dtype=np.float64)
        if now is not None and len(now) == len(ref):
            with np.errstate(all="ignore"):
                ratios = now / ref
            ratios = ratios[np.isfinite(ratios) & (ratios > 0)]
            # The median over channels: one dead or noisy channel does not move it.
            ratio = float(np.exp(np.median(np.log(ratios)))) if len(ratios) else None
    corr = None
    stored = profile.get("correlation")
    if stored is not None and x.shape[1] >= 2:
        mean = np.asarray(stored["mean"], dtype=np.float64)
        z = correlation_features(x)
        # A pair with a flat channel counts as typical: flat channels are the contact policy's to handle.
        z = np.where(np.isfinite(z), z, mean)
        d = _mahalanobis(z, mean, np.asarray(stored["inverse_covariance"], dtype=np.float64))
        corr = float(np.median(d) / max(float(stored["scale"]), 1e-9))
    sequence = sleep = None
    if predicted is not None:
        sequence = sequence_check(profile, predicted, onset_s if onset_s is not None else
                                  np.arange(len(predicted)) * window_seconds, window_seconds)
        sleep = stage_fit(profile, features, predicted)
    return DistributionVerdict(distance=distance, channel_distance=channel_distance, amplitude_ratio=ratio,
                               correlation_distance=corr,
                               unseen_transitions=None if sequence is None else sequence[0],
                               transitions=None if sequence is None else sequence[1],
                               unseen_examples=[] if sequence is None else sequence[2],
                               stage_fit=None if sleep is None else sleep[0],
                               staged_sleep=None if sleep is None else sleep[1],
                               distance_limit=float(profile.get("distance_limit", DISTANCE_LIMIT)),
                               correlation_limit=float(profile.get("correlation_limit", CORRELATION_LIMIT)),
                               amplitude_limit=float(profile.get("amplitude_limit", AMPLITUDE_LIMIT)),
                               far_channels=far)


__all__ = ["AMPLITUDE_LIMIT", "BANDS", "CORRELATION_LIMIT", "DISTANCE_LIMIT", "DistributionVerdict",
           "SLEEP_TRANSITIONS", "STAGE_FIT_LIMIT", "UNSEEN_LIMIT", "channel_amplitudes", "correlation_features",
           "distribution_profile", "score_recording", "sequence_check", "sleep_transitions", "stage_fit",
           "spectral_features", "transition_record", "window_distances"]
