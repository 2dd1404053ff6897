"""Channel quality scores: :class:`ChannelQuality` per recording and per window, from signal statistics.

A poor electrode contact (a loose ear-EEG plug, a dry electrode that lifted) shows up in a few
statistics of the signal. Each is computed per window and channel, turned into a sub-score in
[0, 1] (1 = good, 0.5 = exactly at its threshold), and the channel's score is the lowest of
its sub-scores, so one clear fault makes a channel bad:

=================  ============================================================  ==============
statistic          what it measures                                              needs raw?
=================  ============================================================  ==============
``std_uv``         standard deviation (µV); under 0.1 µV the channel is flat      no
``var_z_channels`` robust z of the 1–40 Hz log-power against the other channels  no
``var_z_time``     robust z of the same against the channel's own median window  no
``line_ratio``     power at mains ±1 Hz over the 2–6 Hz-away bands (per Hz)       yes
``line_uv``        the hum itself: line-band power above that floor (µV RMS)      yes
``line_rel``       hum power over the median of the other channels'               yes
``drift_uv``       RMS below 0.3 Hz (µV)                                          yes
``drift_rel``      power below 0.3 Hz over the median of the other channels'      yes
``neighbour_corr`` distance-weighted mean 1–40 Hz |correlation| with neighbours   no
=================  ============================================================  ==============

The band-pass (0.3 Hz) and notch of :func:`~passport_kit.signals.preprocess.preprocess` remove
drift and line noise, so those statistics come from the *mapped raw recording*
(:func:`channel_quality`, :func:`recording_quality`); from preprocessed windows
(:func:`windows_quality`) they are NaN and do not count. Channels are compared with peers of
the same kind (EEG with EEG), so an ECG channel is never "bad" for looking unlike the EEG.
Thresholds, and how they were chosen: ``docs/quality.md``.

Example::

    >>> from passport_kit.signals.quality import recording_quality
    >>> q = recording_quality("sim/s02.edf", "eesm23-ear")       # doctest: +SKIP
    >>> q.bad_channels, q.reasons[0]                             # doctest: +SKIP
    (['LB'], ['high variance (z 6.5 against other channels)', 'line noise 57644× other channels',
              'low correlation with neighbours (r 0.20)'])
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.fft
from pydantic import BaseModel, ConfigDict, Field

from passport_kit.errors import DataError
from passport_kit.signals.windows import FLAT_STD_V, n_windows

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from passport_kit.montage import Montage
    from passport_kit.signals.dataset import WindowSet

#: Band (Hz) of the variance and correlation statistics: EEG, without drift and mains.
BAND_HZ = (1.0, 40.0)
#: Drift is the power below this frequency (Hz): what the 0.3 Hz high-pass removes.
DRIFT_HZ = 0.3
#: Half-width (Hz) of the mains band, and the inner/outer distance (Hz) of its comparison band.
_LINE_HALF_WIDTH, _LINE_GAP, _LINE_OUTER = 1.0, 2.0, 6.0
#: Windows transformed at once: bounds memory to a few MB for any recording length. Small enough that the
#: allocator reuses its buffers instead of mapping fresh pages for every chunk (issue 47: 64 cost a third more CPU).
_CHUNK_WINDOWS = 8
#: Guards logs and ratios of zero power (µV², far below any real signal).
_TINY = 1e-12
_MAD_TO_SD = 1.4826
#: Hum power (µV², 0.1 µV RMS) added to both sides of ``line_rel``: below it, hum is irrelevant.
_LINE_FLOOR_UV2 = 0.01

#: The statistics of every result, in table order; scored: std_uv (as flat), var_z_*, line_rel,
#: drift_rel, neighbour_corr; the others are context.
STATISTICS = ("std_uv", "var_z_channels", "var_z_time", "line_ratio", "line_uv", "line_rel", "drift_uv", "drift_rel",
              "neighbour_corr")


class QualityThresholds(BaseModel):
    """Thresholds of the quality statistics (pydantic; stored with every result).

    Each scored statistic gives 0.5 exactly at its threshold and ramps linearly to 1 and 0
    over ``±width`` (ratios: over a factor ``ratio_width`` either side, on a log scale). A
    channel is bad when its score is below ``bad_below``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    flat_std_uv: float = Field(round(FLAT_STD_V * 1e6, 9), gt=0)
    var_z: float = Field(6.0, gt=0)
    var_z_width: float = Field(2.0, gt=0)
    var_z_floor: float = Field(0.5, gt=0, description="smallest robust SD of log-power (natural log)")
    line_rel: float = Field(300.0, gt=1)
    drift_rel: float = Field(60.0, gt=1)
    ratio_width: float = Field(2.0, gt=1)
    min_corr: float = Field(0.3, ge=0, lt=1)
    corr_width: float = Field(0.1, gt=0)
    neighbour_radius_m: float = Field(0.08, gt=0)
    neighbour_scale_m: float = Field(0.03, gt=0)
    bad_below: float = Field(0.5, gt=0, lt=1)


@dataclass
class ChannelQuality:
    """Return-value object: quality of each channel of one recording, overall and per window.

    ``statistics`` and ``subscores`` map names (module docstring) to ``(C,)`` arrays, the
    recording-level values (median over windows); ``window_statistics`` and ``window_subscores``
    hold the ``(N, C)`` values per window. ``score`` ``(C,)`` and ``window_score`` ``(N, C)``
    are in [0, 1] (1 = good); ``bad`` is ``score < thresholds.bad_below``. ``reasons`` lists,
    per channel, why it scored below the threshold (empty for good channels). ``inputs`` is
    ``'raw'`` or ``'windows'`` (then line noise and drift are NaN: filtered away).
    ``window_statistics`` also holds ``band_uv``, the 1–40 Hz RMS amplitude in µV (NaN after
    instance normalisation), which is not scored.
    ``corr_scored`` ``(C,)`` marks the channels whose neighbour correlation is scored (a
    monopolar channel with a near peer; :func:`neighbour_weights`).
    """

    ch_names: list[str]
    statistics: dict[str, np.ndarray]
    subscores: dict[str, np.ndarray]
    score: np.ndarray
    bad: np.ndarray
    reasons: list[list[str]]
    window_statistics: dict[str, np.ndarray]
    window_subscores: dict[str, np.ndarray]
    window_score: np.ndarray
    thresholds: QualityThresholds
    window_seconds: float
    inputs: str
    source: str = "recording"
    info: dict[str, Any] = field(default_factory=dict)
    corr_scored: np.ndarray | None = None

    @property
    def window_neighbour_corr(self) -> np.ndarray:
        """Return ``(N, C)`` neighbour correlation per window where it is scored, NaN elsewhere.

        A bipolar channel's correlation with monopolar ones, or a lone channel's with a distant
        peer, says nothing about its contact; those are NaN here.
        """
        corr = self.window_statistics["neighbour_corr"]
        return corr if self.corr_scored is None else np.where(self.corr_scored[None, :], corr, np.nan)

    def __repr__(self) -> str:
        bad = ", ".join(self.bad_channels) or "none"
        return (f"<ChannelQuality | {self.source}: {len(self.ch_names)} ch × {self.window_score.shape[0]} windows "
                f"({self.inputs}), bad: {bad}>")

    @property
    def bad_channels(self) -> list[str]:
        """Return the names of the bad channels, in montage order."""
        return [n for n, b in zip(self.ch_names, self.bad) if b]

    @property
    def window_bad(self) -> np.ndarray:
        """Return ``(N, C)`` bool: the channel scored below the threshold in that window."""
        return self.window_score < self.thresholds.bad_below

    @property
    def bad_window_fraction(self) -> np.ndarray:
        """Return ``(C,)`` the fraction of windows in which each channel is bad."""
        return self.window_bad.mean(axis=0) if self.window_score.size else np.zeros(len(self.ch_names))

    def rows(self) -> list[dict[str, Any]]:
        """Return one dict per channel: name, status, status_description, score, statistics."""
        out = []
        fraction = self.bad_window_fraction
        for c, name in enumerate(self.ch_names):
            row: dict[str, Any] = {
                "name": name,
                "status": "bad" if self.bad[c] else "good",
                "status_description": "; ".join(self.reasons[c]) if self.reasons[c] else "n/a",
                "score": float(self.score[c]),
                "bad_window_fraction": float(fraction[c]),
            }
            row.update({k: float(v[c]) for k, v in self.statistics.items()})
            out.append(row)
        return out

    def to_frame(self) -> pd.DataFrame:
        """Return the per-channel table (:meth:`rows`) as a pandas DataFrame (pandas needed)."""
        import pandas as pd

        return pd.DataFrame(self.rows())

    def to_tsv(self, path: str | Path) -> Path:
        """Write a BIDS-like ``channels.tsv`` (name, status, status_description, score, …) atomically; return the path.

        Missing values are ``n/a`` as BIDS asks; scores and statistics have 4 significant digits.
        """
        from passport_kit.atomic_io import write_table

        return write_table(Path(path), self.rows(), delimiter="\t", digits=TABLE_DIGITS)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict: source, thresholds, per-channel rows (NaN → None)."""
        from passport_kit.atomic_io import strict_json_value

        return strict_json_value({
            "source": self.source,
            "inputs": self.inputs,
            "window_seconds": self.window_seconds,
            "n_windows": int(self.window_score.shape[0]),
            "thresholds": self.thresholds.model_dump(),
            "bad_channels": self.bad_channels,
            "channels": self.rows(),
        })

    def to_json(self, path: str | Path | None = None) -> str:
        """Return the :meth:`to_dict` content as strict JSON; also write it atomically to ``path`` if given."""
        text = json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"
        if path is not None:
            from passport_kit.atomic_io import atomic_write_text

            atomic_write_text(Path(path), text)
        return text


#: Significant digits of quality tables: the statistics are estimates, more digits would be noise.
TABLE_DIGITS = 4


def format_tsv(rows: list[dict[str, Any]]) -> str:
    """Return ``rows`` as TSV text with a header (floats to :data:`TABLE_DIGITS` significant digits, missing as ``n/a``)."""
    from passport_kit.atomic_io import format_table

    return format_table(rows, delimiter="\t", digits=TABLE_DIGITS)


# ------------------------------------------------------------------------- public entry points

def channel_quality(
    data: np.ndarray, sfreq: float, montage: Montage, *, window_seconds: float = 30.0,
    notch_freq: float | None = 50.0, thresholds: QualityThresholds | None = None, source: str = "recording",
) -> ChannelQuality:
    """Return the quality of each channel of a mapped raw recording, overall and per window.

    ``data`` is ``(C, T)`` in **volts** at ``sfreq`` Hz, channels in montage order, before any
    filtering: ``map_channels(raw, montage).get_data()``. Windows are ``window_seconds`` long
    from the first sample, as in :func:`~passport_kit.signals.windows.make_windows`, so the
    per-window scores line up with a :class:`WindowSet` of the same recording. ``notch_freq``
    None skips the line-noise statistic. NaN/inf samples count as 0 (the data layer flags them).
    """
    data = np.asarray(data)
    _check_channels(data.shape[0], montage, source)
    n = n_windows(data.shape[1], sfreq, window_seconds)
    if n < 1:
        raise DataError(f"{source}: {data.shape[1] / sfreq:.1f} s is shorter than one {window_seconds:g}-s quality "
                        f"window; use a shorter --window-seconds or a longer recording")
    length = int(round(window_seconds * sfreq))

    def segments(start: int, stop: int) -> np.ndarray:
        block = np.asarray(data[:, start * length: stop * length], dtype=np.float64)
        windows = block.reshape(block.shape[0], stop - start, length).transpose(1, 0, 2)
        out = np.multiply(windows, 1e6)  # (n, C, L) µV in one pass; non-finite samples (rare) become 0 after
        if not np.isfinite(out.sum()):
            out[~np.isfinite(windows)] = 0.0
        return out

    stats = _window_statistics(segments, n, length, float(sfreq), montage, notch_freq=notch_freq, raw=True)
    return _assemble(stats, montage, thresholds or QualityThresholds(), window_seconds, "raw", source)


def windows_quality(
    x: np.ndarray, montage: Montage, *, sfreq: float = 200.0, scale_uv: float = 100.0,
    instance_norm: bool = False, thresholds: QualityThresholds | None = None, source: str = "windows",
) -> ChannelQuality:
    """Return the quality of each channel from preprocessed windows of ONE recording.

    ``x`` is ``(N, C, P, S)`` in units of ``scale_uv`` µV at ``sfreq`` Hz (a
    :class:`WindowSet`'s ``x`` for one recording). Line noise and drift were filtered away, so
    they are NaN here; with ``instance_norm`` every window has variance 1, so the variance
    statistics are NaN too and only flatness and neighbour correlation remain.
    """
    x = np.asarray(x)
    if x.ndim != 4:
        raise ValueError(f"windows must be (N, C, P, S), got shape {x.shape}")
    _check_channels(x.shape[1], montage, source)
    n, length = x.shape[0], x.shape[2] * x.shape[3]

    def segments(start: int, stop: int) -> np.ndarray:
        return np.asarray(x[start:stop], dtype=np.float32).reshape(stop - start, x.shape[1], length) * np.float32(scale_uv)

    stats = _window_statistics(segments, n, length, float(sfreq), montage, notch_freq=None, raw=False)
    if instance_norm:
        stats["log_power"][:] = np.nan      # every window has variance 1: nothing to compare
    return _assemble(stats, montage, thresholds or QualityThresholds(), length / sfreq, "windows", source)


def windowset_quality(ws: WindowSet, *, thresholds: QualityThresholds | None = None) -> dict[str, ChannelQuality]:
    """Return ``{recording: ChannelQuality}`` from a :class:`WindowSet`'s windows, one per recording."""
    out: dict[str, ChannelQuality] = {}
    for rec in dict.fromkeys(ws.recording.tolist()):
        index = np.flatnonzero(ws.recording == rec)
        out[rec] = windows_quality(ws.x[index], ws.montage, sfreq=ws.config.sfreq, scale_uv=ws.config.scale_uv,
                                   instance_norm=ws.config.instance_norm, thresholds=thresholds, source=rec)
    return out


def recording_quality(
    path: str | Path, montage: Montage | str, *, renames: dict[str, str] | None = None, sfreq: float | None = None,
    window_seconds: float = 30.0, notch_freq: float | None = 50.0, thresholds: QualityThresholds | None = None,
    bids: bool = False, units: str | None = None, scale: float | None = None,
) -> ChannelQuality:
    """Return the quality of each channel of the recording file at ``path`` (read, mapped, unfiltered).

    ``montage`` is a Montage, registry name or YAML path; ``renames``, ``sfreq``, ``units`` and
    ``scale`` as in :func:`~passport_kit.signals.load_recording`; ``bids`` reads through MNE-BIDS.
    """
    from passport_kit.montage import resolve_montage
    from passport_kit.signals.channels import map_channels
    from passport_kit.signals.readers import read_recording

    path = Path(path)
    montage = resolve_montage(montage) if isinstance(montage, (str, Path)) else montage
    if not path.is_file():
        raise DataError(f"recording '{path}' does not exist; check the path")
    source = f"recording '{path}'"
    if bids:
        from passport_kit.signals.bids import read_bids_recording

        raw = read_bids_recording(path)
    else:
        raw = read_recording(path, sfreq=sfreq, units=units, scale=scale)
    mapped = map_channels(raw, montage, renames, source=source)
    return channel_quality(mapped.get_data(), mapped.info["sfreq"], montage, window_seconds=window_seconds,
                           notch_freq=notch_freq, thresholds=thresholds, source=str(path))


@dataclass(frozen=True)
class ChannelLayout:
    """The part of a Montage the quality statistics read: names, kinds and positions (metres).

    Lets a model score a batch from its channel metadata alone (:func:`window_scores`).
    """

    name: str
    ch_names: list[str]
    kinds: list[str]
    positions: np.ndarray

    @property
    def n_channels(self) -> int:
        """Return the number of channels C."""
        return len(self.ch_names)

    @property
    def reference_positions(self) -> np.ndarray:
        """Return ``(C, 3)`` NaN rows: a batch layout carries no reference electrodes (all monopolar)."""
        return np.full((self.n_channels, 3), np.nan)


#: The per-window sub-scores that do not depend on which other windows are scored with it.
WINDOW_SUBSCORES = ("flat", "var_z_channels", "line_rel", "drift_rel", "neighbour_corr")


def window_scores(
    x: np.ndarray, names: list[str], positions: np.ndarray, *, sfreq: float = 200.0, scale_uv: float = 100.0,
    thresholds: QualityThresholds | None = None,
) -> np.ndarray:
    """Return ``(N, C)`` quality scores in [0, 1] of each window on its own (1 = good).

    ``x`` ``(N, C, P, S)`` are preprocessed windows in ``scale_uv`` µV of channels ``names`` at
    ``positions`` ``(C, 3)`` metres (all treated as EEG), e.g. a training batch from any mix
    of recordings. The score is the lowest of the sub-scores that need no other window
    (flat, variance against the other channels, neighbour correlation): the comparison with the
    channel's own typical window (``var_z_time``) is left out, since a batch is no recording.
    """
    layout = ChannelLayout("batch", list(names), ["eeg"] * len(names), np.asarray(positions, dtype=np.float64))
    q = windows_quality(x, layout, sfreq=sfreq, scale_uv=scale_uv, thresholds=thresholds,  # type: ignore[arg-type]
                        source="batch")
    return _combine({k: q.window_subscores[k] for k in WINDOW_SUBSCORES})


def quality_summary(qualities: Mapping[str, ChannelQuality], subjects: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Return a compact JSON-ready summary of several recordings' quality (what bundles and reports store).

    Per recording: its subject (when ``subjects`` maps recordings to them), the bad channels
    with their reasons, and each channel's score and fraction of bad windows (4 digits).
    """
    out: dict[str, Any] = {}
    for rec, q in qualities.items():
        fraction = q.bad_window_fraction
        entry: dict[str, Any] = {}
        if subjects is not None and rec in subjects:
            entry["subject"] = str(subjects[rec])
        entry |= {
            "inputs": q.inputs,
            "bad_channels": q.bad_channels,
            "reasons": {n: r for n, r in zip(q.ch_names, q.reasons) if r},
            "score": {n: round(float(v), 4) for n, v in zip(q.ch_names, q.score)},
            "bad_window_fraction": {n: round(float(v), 4) for n, v in zip(q.ch_names, fraction)},
        }
        out[rec] = entry
    return out


def quality_line(summary: Mapping[str, Any]) -> str:
    """Return one line for a :func:`quality_summary`: which recordings have bad channels, and which channels."""
    bad = {rec: entry["bad_channels"] for rec, entry in summary.items() if entry["bad_channels"]}
    if not bad:
        return f"channel quality: no bad channels in {len(summary)} recording(s)"
    listed = "; ".join(f"{rec}: {', '.join(chs)}" for rec, chs in list(bad.items())[:8])
    more = f"; ... {len(bad) - 8} more" if len(bad) > 8 else ""
    return f"channel quality: {len(bad)} of {len(summary)} recording(s) have bad channels ({listed}{more})"


# ------------------------------------------------------------------------------ statistics

def _check_channels(n_channels: int, montage: Montage, source: str) -> None:
    """Raise when the data's channel count does not match the montage (a caller's mix-up)."""
    if n_channels != montage.n_channels:
        raise DataError(f"{source}: data has {n_channels} channels but montage '{montage.name}' has "
                        f"{montage.n_channels}; map the recording onto the montage first (map_channels)")


def _window_statistics(
    segments: Callable[[int, int], np.ndarray], n: int, length: int, sfreq: float, montage: Montage, *,
    notch_freq: float | None, raw: bool,
) -> dict[str, np.ndarray]:
    """Return per-window statistics, each ``(N, C)`` float64 (module docstring for their meaning).

    ``segments(start, stop)`` gives windows ``start..stop`` as ``(n, C, L)`` in µV (float64 or float32).
    Everything comes from one Hann-tapered periodogram per window: band powers by summing bins,
    and correlations from the cross-spectrum (Parseval: the band-limited covariance).
    """
    n_chan = montage.n_channels
    freqs = scipy.fft.rfftfreq(length, 1.0 / sfreq)
    taper = np.hanning(length).astype(np.float32)
    # One-sided periodogram in µV²/Hz; band power = sum over bins × bin width.
    density_scale = 2.0 / (sfreq * float(np.sum(taper.astype(np.float64) ** 2)))
    df = sfreq / length
    nyquist = sfreq / 2

    def bins(lo: float, hi: float, *, open_low: bool = False) -> slice:
        # Bands are contiguous, so slices (views) instead of boolean masks (copies).
        first = int(np.searchsorted(freqs, lo, side="right" if open_low else "left"))
        return slice(first, int(np.searchsorted(freqs, hi, side="right")))

    band = bins(BAND_HZ[0], min(BAND_HZ[1], 0.45 * sfreq))
    drift = bins(0.0, DRIFT_HZ - 1e-9, open_low=True)
    line = sides = None
    if raw and notch_freq is not None and notch_freq + _LINE_OUTER < nyquist:
        line = bins(notch_freq - _LINE_HALF_WIDTH, notch_freq + _LINE_HALF_WIDTH)
        sides = (bins(notch_freq - _LINE_OUTER, notch_freq - _LINE_GAP),
                 bins(notch_freq + _LINE_GAP, notch_freq + _LINE_OUTER))

    def power(spec: np.ndarray, where: slice) -> np.ndarray:
        part = spec[..., where]
        return (part.real ** 2 + part.imag ** 2) * density_scale             # (n, C, F) µV²/Hz

    out = {k: np.full((n, n_chan), np.nan) for k in ("std_uv", "log_power", "line_ratio", "line_power",
                                                      "drift_power")}
    cov = np.zeros((n, n_chan, n_chan))
    for start in range(0, n, _CHUNK_WINDOWS):
        stop = min(start + _CHUNK_WINDOWS, n)
        seg = segments(start, stop)
        # Centre in the input precision (a DC offset of volts must not eat float32 digits),
        # then float32 for the transform; the SD comes from the centred signal in one pass.
        centred = np.subtract(seg, seg.mean(axis=-1, keepdims=True), out=np.empty(seg.shape, np.float32))
        out["std_uv"][start:stop] = np.sqrt(np.einsum("ncl,ncl->nc", centred, centred, dtype=np.float64) / length)
        spec = scipy.fft.rfft(centred * taper, axis=-1)
        out["log_power"][start:stop] = np.log(power(spec, band).sum(-1) * df + _TINY)
        if raw:
            out["drift_power"][start:stop] = power(spec, drift).sum(-1) * df
        if line is not None and sides is not None:
            at_line = power(spec, line).mean(-1)
            beside = np.concatenate([power(spec, sides[0]), power(spec, sides[1])], axis=-1).mean(-1)
            out["line_ratio"][start:stop] = (at_line + _TINY) / (beside + _TINY)
            # The hum's own power (µV²): what the line band holds above the neighbouring floor.
            out["line_power"][start:stop] = np.maximum(at_line - beside, 0.0) * (line.stop - line.start) * df
        xb = spec[..., band]
        # Band-limited covariance (Parseval): Re(X Xᴴ) = Re Reᵀ + Im Imᵀ, in real float32 BLAS.
        re, im = np.ascontiguousarray(xb.real), np.ascontiguousarray(xb.imag)
        cov[start:stop] = re @ re.transpose(0, 2, 1) + im @ im.transpose(0, 2, 1)
    return out | {"cov": cov}


def _peer_mask(montage: Montage) -> np.ndarray:
    """Return ``(C, C)`` bool: channel j is a peer of channel i (same kind, not itself)."""
    kinds = np.asarray(montage.kinds)
    mask = kinds[:, None] == kinds[None, :]
    np.fill_diagonal(mask, False)
    return mask


def _peer_median(values: np.ndarray, peers: np.ndarray) -> np.ndarray:
    """Return ``(N, C)``: for each channel, the median of ``values`` ``(N, C)`` over its peers (NaN: none).

    ``peers`` is ``(C, C)`` or, to leave out channels per window, ``(N, C, C)``.
    """
    peers = peers if peers.ndim == 3 else peers[None, :, :]
    stacked = np.where(peers, values[:, None, :], np.nan)                   # (N, C, C)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: channels without peers
        return np.nanmedian(stacked, axis=-1)


def _peer_z(values: np.ndarray, peers: np.ndarray, floor: float) -> np.ndarray:
    """Return ``(N, C)`` robust z of each channel against its peers (median, MAD with a floor)."""
    centre = _peer_median(values, peers)
    peers = peers if peers.ndim == 3 else peers[None, :, :]
    stacked = np.where(peers, np.abs(values[:, None, :] - centre[:, :, None]), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mad = np.nanmedian(stacked, axis=-1)
    # Few channels (ear montages have 4) make the MAD unstable; the floor keeps z meaningful.
    return (values - centre) / np.maximum(_MAD_TO_SD * mad, floor)


def neighbour_weights(montage: Montage | ChannelLayout, thresholds: QualityThresholds | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(weights (C, C), near (C,) bool)``: neighbour weights and which channels have a near peer.

    Weights are ``exp(-d / scale)`` for peers within the radius, else 0; distances use each
    channel's ``position`` (for a bipolar channel: its active electrode). How well a derivation
    correlates with monopolar channels depends on where its reference sits, not on contact
    (eegmat's ear-to-ear A2-A1 correlates weakly with T3..T6 on clean windows, which flagged
    about half of them as bad), so a bipolar channel's correlation with monopolar ones is
    reported but not scored (``near`` False), and a monopolar channel never takes a bipolar one
    as its neighbour (a bad T6 left T4 with A2-A1 alone, flagging T4). A channel with no peer
    within the radius (every Muse sensor, a lone channel of one ear) falls back to its nearest
    peer alone with weight 1 and ``near`` False: its correlation is reported, not scored, since
    channels 10 cm or more apart correlate weakly on any head.
    """
    t = thresholds or QualityThresholds()
    pos = montage.positions
    dist = np.linalg.norm(pos[:, None, :] - pos[None, :, :], axis=-1)
    bipolar = ~np.isnan(montage.reference_positions).any(axis=1)
    peers = _peer_mask(montage) & ~(~bipolar[:, None] & bipolar[None, :])   # monopolar rows: no bipolar peers
    weights = np.where(peers & (dist <= t.neighbour_radius_m), np.exp(-dist / t.neighbour_scale_m), 0.0)
    near = weights.any(axis=1)
    lonely = ~near & peers.any(axis=1)
    if lonely.any():
        nearest = np.argmin(np.where(peers, dist, np.inf), axis=1)
        weights[lonely, nearest[lonely]] = 1.0
    return weights, near & ~bipolar


def _neighbour_corr(cov: np.ndarray, good: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Return ``(N, C)`` distance-weighted mean |correlation| with neighbours that are good by other tests.

    ``cov`` ``(N, C, C)`` band-limited covariance; ``good`` ``(N, C)`` bool; ``weights`` from
    :func:`neighbour_weights`. Neighbours already known bad are left out, so one bad channel
    does not drag its neighbours down; where no neighbour is left the value is NaN (not
    judged) rather than a correlation with distant channels, which is low on any head.
    """
    var = np.einsum("ncc->nc", cov)
    with np.errstate(all="ignore"):
        corr = np.abs(cov / np.sqrt(var[:, :, None] * var[:, None, :]))
    corr = np.where(np.isfinite(corr), corr, 0.0)      # a flat channel correlates with nothing
    w = weights[None, :, :] * good[:, None, :]
    total = w.sum(-1)
    with np.errstate(all="ignore"):
        return np.where(total > 0, (w * corr).sum(-1) / total, np.nan)


def _ramp(value: np.ndarray, threshold: float, width: float, *, higher_is_bad: bool = True) -> np.ndarray:
    """Return sub-scores: 1 at ``threshold - width`` or better, 0.5 at it, 0 at ``threshold + width`` (NaN → 1)."""
    sign = 1.0 if higher_is_bad else -1.0
    score = np.clip(0.5 - sign * (value - threshold) / (2 * width), 0.0, 1.0)
    return np.where(np.isnan(value), 1.0, score)


def _subscores(stats: dict[str, np.ndarray], t: QualityThresholds) -> dict[str, np.ndarray]:
    """Return a sub-score array for each scored statistic, same shape as the statistics."""
    log_width = np.log10(t.ratio_width)
    with np.errstate(all="ignore"):
        line = np.log10(stats["line_rel"])
        drift = np.log10(stats["drift_rel"])
    return {
        "flat": np.where(stats["std_uv"] < t.flat_std_uv, 0.0, 1.0),
        "var_z_channels": _ramp(stats["var_z_channels"], t.var_z, t.var_z_width),
        "var_z_time": _ramp(stats["var_z_time"], t.var_z, t.var_z_width),
        "line_rel": _ramp(line, float(np.log10(t.line_rel)), log_width),
        "drift_rel": _ramp(drift, float(np.log10(t.drift_rel)), log_width),
        "neighbour_corr": _ramp(stats["neighbour_corr"], t.min_corr, t.corr_width, higher_is_bad=False),
    }


def _combine(subscores: dict[str, np.ndarray]) -> np.ndarray:
    """Return the score: the lowest sub-score (one clear fault is enough to make a channel bad)."""
    return np.minimum.reduce([s for s in subscores.values()])


def _assemble(
    raw_stats: dict[str, np.ndarray], montage: Montage, t: QualityThresholds, window_seconds: float, inputs: str,
    source: str,
) -> ChannelQuality:
    """Return a :class:`ChannelQuality` from per-window spectra statistics (relative ones derived here)."""
    log_power = raw_stats["log_power"]
    stats: dict[str, np.ndarray] = {"std_uv": raw_stats["std_uv"]}
    # Context, not scored: the absolute 1-40 Hz amplitude, which predict compares with the
    # adapter's training data (passport_kit.signals.amplitude).
    stats["band_uv"] = np.sqrt(np.exp(log_power))
    # A flat channel is no reference for the others (its power is 0): leave it out of the peers.
    peers = _peer_mask(montage)[None, :, :] & (raw_stats["std_uv"] >= t.flat_std_uv)[:, None, :]
    stats["var_z_channels"] = _peer_z(log_power, peers, t.var_z_floor)
    # Against the channel's own typical window: a burst of artefact in an otherwise good channel.
    own = np.median(log_power, axis=0, keepdims=True)
    mad = np.median(np.abs(log_power - own), axis=0, keepdims=True)
    stats["var_z_time"] = (log_power - own) / np.maximum(_MAD_TO_SD * mad, t.var_z_floor)
    stats["line_ratio"] = raw_stats["line_ratio"]
    with np.errstate(all="ignore"):
        stats["line_uv"] = np.sqrt(raw_stats["line_power"])
        # Hum power against the peers' (not the hum-to-floor ratio): contacts differ in their
        # noise floor, and a loose one raises the floor too, which hides it in the ratio.
        stats["line_rel"] = (raw_stats["line_power"] + _LINE_FLOOR_UV2) / (
            _peer_median(raw_stats["line_power"], peers) + _LINE_FLOOR_UV2)
        stats["drift_uv"] = np.sqrt(raw_stats["drift_power"])
        stats["drift_rel"] = (raw_stats["drift_power"] + _TINY) / (_peer_median(raw_stats["drift_power"], peers) + _TINY)
    # Correlation last: neighbours bad by any other statistic are left out of the mean.
    pre = _subscores(stats | {"neighbour_corr": np.full_like(log_power, np.nan)}, t)
    good = _combine(pre) >= t.bad_below
    weights, near = neighbour_weights(montage, t)
    stats["neighbour_corr"] = _neighbour_corr(raw_stats["cov"], good, weights)
    window_sub = _subscores(stats | {"neighbour_corr": np.where(near, stats["neighbour_corr"], np.nan)}, t)
    window_score = _combine(window_sub)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN statistics (not measurable) stay NaN
        rec_stats = {k: np.nanmedian(stats[k], axis=0) for k in STATISTICS}
    # The time z of a typical window is 0 by construction; the recording level reports the
    # fraction of windows instead (bad_window_fraction) and does not score it.
    rec_stats["var_z_time"] = np.full(len(montage.ch_names), np.nan)
    rec_sub = _subscores(rec_stats | {"neighbour_corr": np.where(near, rec_stats["neighbour_corr"], np.nan)}, t)
    score = _combine(rec_sub)
    bad = score < t.bad_below
    reasons = [_reasons(c, rec_stats, rec_sub, t) for c in range(len(montage.ch_names))]
    return ChannelQuality(
        ch_names=list(montage.ch_names), statistics=rec_stats, subscores=rec_sub, score=score, bad=bad,
        reasons=reasons, window_statistics=stats, window_subscores=window_sub, window_score=window_score,
        thresholds=t, window_seconds=float(window_seconds), inputs=inputs, source=source, corr_scored=near,
    )


def _reasons(c: int, stats: dict[str, np.ndarray], sub: dict[str, np.ndarray], t: QualityThresholds) -> list[str]:
    """Return why channel ``c`` is bad: one phrase per statistic below the threshold."""
    out: list[str] = []
    if sub["flat"][c] < t.bad_below:
        sd = float(stats["std_uv"][c])
        out.append(f"flat (SD {sd if sd >= 1e-3 else 0:.2g} µV)")
        return out  # a flat channel's other statistics only restate it
    if sub["var_z_channels"][c] < t.bad_below:
        out.append(f"high variance (z {stats['var_z_channels'][c]:.1f} against other channels)")
    if sub["line_rel"][c] < t.bad_below:
        out.append(f"line noise {stats['line_rel'][c]:.0f}× other channels")
    if sub["drift_rel"][c] < t.bad_below:
        out.append(f"drift {stats['drift_rel'][c]:.0f}× other channels' power ({stats['drift_uv'][c]:.0f} µV RMS below "
                   f"{DRIFT_HZ:g} Hz)")
    if sub["neighbour_corr"][c] < t.bad_below:
        out.append(f"low correlation with neighbours (r {stats['neighbour_corr'][c]:.2f})")
    return out
