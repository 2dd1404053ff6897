"""CBraMod preprocessing: resample to 200 Hz, band-pass, notch, µV / 100.

The contract (``reference/cbramod.md`` §3.1, DESIGN.md §6) in order:

1. resample to ``config.sfreq`` (200 Hz) with a polyphase filter (:func:`scipy.signal.resample_poly`);
2. band-pass ``l_freq``–``h_freq`` (0.3–75 Hz) with MNE's default FIR (``firwin``, Hamming,
   zero phase, automatic transition bands and length);
3. notch at the mains frequency (MNE's default FIR notch: width ``f/200``, 1 Hz transition);
4. volts → µV, divided by ``scale_uv`` (100), so the model sees amplitudes in units of 100 µV.

Speed: the band-pass and the notch are both linear-phase FIR filters, so they are convolved
into one kernel (designed once by MNE and memoised) and applied in a single overlap-add pass
(:func:`scipy.signal.oaconvolve`) in float32, after MNE's odd-reflection padding; its FFTs run
on every processor this process may use (:data:`FFT_WORKERS`; the same numbers as on one, since
each channel's transforms are computed alike whatever thread runs them). The result
equals ``raw.filter(l_freq, h_freq)`` followed by ``raw.notch_filter(notch_freq)`` to float32
precision (about 1e-6 of the signal's scale), edges included (tested).

:class:`PreprocessConfig` is written into every adapter bundle, so ``predict`` preprocesses
exactly as ``adapt`` did.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache

import mne
import numpy as np
import scipy.fft
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from scipy.signal import oaconvolve, resample_poly

from passport_kit.errors import ConfigError, DataError, validation_problem

#: MNE's default notch: the stop band is ``f / 200`` wide with a 1 Hz transition (0.5 per side).
_NOTCH_WIDTH_FRACTION = 1.0 / 200.0
_NOTCH_TRANSITION_HZ = 1.0
#: Rate ratios are approximated by fractions with at most this denominator (e.g. 256 Hz → 25/32).
_MAX_RATIO_DENOMINATOR = 1000
#: Threads of the filter's FFTs: the processors this process may run on. The channels' transforms
#: are independent, so they split across threads with bit-identical results (tested).
FFT_WORKERS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class PreprocessConfig(BaseModel):
    """The preprocessing and windowing contract; stored in every adapter bundle.

    Frequencies are in Hz, ``window_seconds`` in seconds (a whole number: one patch is one
    second), ``amplitude_limit_uv`` in µV (windows whose channel exceeds it are flagged, never
    dropped; CBraMod pretraining kept only windows under 100 µV).

    Example::

        >>> PreprocessConfig(notch_freq=60.0).h_freq
        75.0
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    sfreq: float = Field(200.0, gt=0)
    l_freq: float = Field(0.3, gt=0)
    h_freq: float = Field(75.0, gt=0)
    notch_freq: float | None = Field(50.0, gt=0)
    scale_uv: float = Field(100.0, gt=0)
    instance_norm: bool = False
    window_seconds: float = Field(30.0, gt=0)
    amplitude_limit_uv: float | None = Field(None, gt=0)
    #: Why ``h_freq`` is below the checkpoint's contract, when :func:`fit_band_to_rate` lowered it
    #: for recordings sampled too slowly to carry it (None: it was not lowered). Documentation
    #: only: it changes no sample, and the cache key leaves it out.
    h_freq_note: str | None = None

    @model_validator(mode="after")
    def _check(self) -> PreprocessConfig:
        if not float(self.sfreq).is_integer():
            raise ValueError(f"sfreq must be a whole number of Hz (one patch = one second), got {self.sfreq}")
        if not float(self.window_seconds).is_integer():
            raise ValueError(
                f"window_seconds must be a whole number (one patch = one second), got {self.window_seconds}"
            )
        if self.l_freq >= self.h_freq:
            raise ValueError(f"l_freq ({self.l_freq}) must be below h_freq ({self.h_freq})")
        if self.h_freq >= self.sfreq / 2:
            raise ValueError(f"h_freq ({self.h_freq}) must be below the Nyquist frequency sfreq/2 ({self.sfreq / 2:g})")
        if self.notch_freq is not None and self.notch_freq >= self.sfreq / 2:
            raise ValueError(f"notch_freq ({self.notch_freq}) must be below sfreq/2 ({self.sfreq / 2:g}) or null")
        return self

    @classmethod
    def from_dict(cls, data: dict) -> PreprocessConfig:
        """Return a config built from user input; problems raise one-line :class:`ConfigError`."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"invalid preprocessing config: {_first_error(exc)}; fix the value and retry") from None

    @property
    def samples_per_patch(self) -> int:
        """Return the samples in one one-second patch (200 at 200 Hz)."""
        return int(self.sfreq)

    @property
    def n_patches(self) -> int:
        """Return P, the one-second patches per window."""
        return int(self.window_seconds)

    @property
    def window_samples(self) -> int:
        """Return the samples per window at ``sfreq``."""
        return self.n_patches * self.samples_per_patch


def _first_error(exc: ValidationError) -> str:
    """Return the first pydantic error as ``field: message``."""
    where, message = validation_problem(exc)
    return f"{where}: {message}" if where else message


def check_sampling_rate(sfreq: float, config: PreprocessConfig, *, source: str = "recording") -> None:
    """Raise :class:`DataError` when ``sfreq`` (Hz) cannot carry the band-pass's upper edge."""
    if sfreq < 2 * config.h_freq:
        raise DataError(
            f"{source}: sampling rate {sfreq:g} Hz cannot carry the band-pass up to {config.h_freq:g} Hz "
            f"(needs at least {2 * config.h_freq:g} Hz); lower h_freq to {safe_h_freq(sfreq):g} Hz or less "
            f"(--h-freq, or 'h_freq:' in dataset.yaml), or leave h_freq unset to have it lowered automatically"
        )


def safe_h_freq(sfreq: float) -> float:
    """Return the band-pass top (Hz) used for a recording at ``sfreq`` Hz: 90 % of Nyquist, whole Hz.

    The margin below Nyquist leaves room for the resampler's anti-aliasing transition, so the
    band-pass edge is never set where the recording has no signal left to pass.
    """
    return float(max(1, int(0.45 * sfreq)))


def fit_band_to_rate(config: PreprocessConfig, sfreq: float, *, source: str = "the data") -> PreprocessConfig:
    """Return ``config`` with ``h_freq`` lowered below the Nyquist frequency of ``sfreq`` (Hz) if needed.

    The model's input contract (``sfreq`` = 200 Hz, one-second patches of 200 samples) stays:
    the recording is still resampled to 200 Hz; only the band-pass top drops to
    :func:`safe_h_freq` (45 Hz for 100 Hz, 22 Hz for 50 Hz), and ``h_freq_note`` says so. A
    rate that carries the band returns ``config`` unchanged. ``source`` names the recording
    in the note, e.g. ``"recording 'n1.edf'"``.

    Example::

        >>> fit_band_to_rate(PreprocessConfig(), 100.0).h_freq
        45.0
    """
    if sfreq >= 2 * config.h_freq:
        return config
    h_freq = safe_h_freq(sfreq)
    if h_freq <= config.l_freq:
        raise DataError(f"{source}: sampling rate {sfreq:g} Hz is too low to carry any EEG above the band-pass's "
                        f"lower edge of {config.l_freq:g} Hz; use recordings sampled at 50 Hz or more")
    note = (f"{source} is sampled at {sfreq:g} Hz, too slowly for the band-pass up to {config.h_freq:g} Hz: its top "
            f"is lowered to {h_freq:g} Hz, below the {sfreq / 2:g} Hz Nyquist frequency, and the model still gets "
            f"{config.sfreq:g} Hz input; choose another top with --h-freq or 'h_freq:' in dataset.yaml")
    return PreprocessConfig.from_dict(config.model_dump() | {"h_freq": h_freq, "h_freq_note": note})


def resample_ratio(sfreq_in: float, sfreq_out: float) -> tuple[int, int]:
    """Return ``(up, down)`` integers with ``up/down ≈ sfreq_out/sfreq_in`` for resample_poly."""
    ratio = Fraction(sfreq_out / sfreq_in).limit_denominator(_MAX_RATIO_DENOMINATOR)
    return ratio.numerator, ratio.denominator


@lru_cache(maxsize=16)
def filter_kernel(sfreq: float, l_freq: float, h_freq: float, notch_freq: float | None) -> np.ndarray:
    """Return the combined band-pass + notch FIR kernel, shape ``(L,)`` float64, odd L.

    Both parts are designed by :func:`mne.filter.create_filter` with MNE's defaults, so the
    taps are exactly those ``raw.filter`` and ``raw.notch_filter`` would use.
    """
    kernel = mne.filter.create_filter(
        None, sfreq, l_freq, h_freq, fir_design="firwin", phase="zero", verbose="error"
    )
    if notch_freq is not None:
        half = notch_freq * _NOTCH_WIDTH_FRACTION / 2 + _NOTCH_TRANSITION_HZ / 2
        # l_freq > h_freq makes create_filter design a band-stop, as notch_filter does.
        notch = mne.filter.create_filter(
            None, sfreq, notch_freq + half, notch_freq - half,
            l_trans_bandwidth=_NOTCH_TRANSITION_HZ / 2, h_trans_bandwidth=_NOTCH_TRANSITION_HZ / 2,
            fir_design="firwin", phase="zero", verbose="error",
        )
        kernel = np.convolve(kernel, notch)
    kernel.setflags(write=False)
    return kernel


def _odd_reflect_pad(x: np.ndarray, n_pad: int) -> np.ndarray:
    """Return ``x`` (C, T) padded by ``n_pad`` samples per side by odd reflection (MNE's default).

    Beyond one signal length the padding continues with zeros, as MNE's ``reflect_limited``.
    """
    out = np.empty((x.shape[0], x.shape[1] + 2 * n_pad), dtype=x.dtype)
    out[:, n_pad:n_pad + x.shape[1]] = x
    _reflect_edges(out, n_pad, x.shape[1])
    return out


def _reflect_edges(buf: np.ndarray, n_pad: int, n: int) -> None:
    """Fill ``buf[:, :n_pad]`` and ``buf[:, n_pad + n:n + 2 n_pad]`` by odd reflection of ``buf[:, n_pad:n_pad + n]``."""
    x = buf[:, n_pad:n_pad + n]
    reach = min(n_pad, n - 1)
    zeros = n_pad - reach
    buf[:, :zeros] = 0
    buf[:, zeros:n_pad] = 2 * x[:, :1] - x[:, reach:0:-1]
    buf[:, n_pad + n:n_pad + n + reach] = 2 * x[:, -1:] - x[:, -2:-reach - 2:-1]
    buf[:, n_pad + n + reach:n + 2 * n_pad] = 0


def overlap_add_lengths(n_signal: int, n_kernel: int) -> tuple[int, int, int] | None:
    """Return ``(block, step, blocks)`` of :func:`scipy.signal.oaconvolve` for a padded signal of ``n_signal`` samples
    and an odd kernel of ``n_kernel`` taps (FFT length, new samples per block, blocks), or None where scipy takes one
    FFT of the whole signal (a signal shorter than a few kernels).

    scipy's rule (``_calc_oa_lens``): the block length that minimises FFT work per output sample,
    ``-K W₋₁(-1 / (2 e K))`` for ``K = n_kernel - 1`` (Lambert W), rounded up to a fast FFT length.
    """
    import math

    from scipy.special import lambertw

    overlap = n_kernel - 1
    if n_kernel == 1 or n_signal == n_kernel or n_kernel >= n_signal / 2:
        return None
    block = scipy.fft.next_fast_len(math.ceil(-overlap * lambertw(-1 / (2 * math.e * overlap), k=-1).real))
    if block >= n_signal:
        return None
    step = block - n_kernel + 1
    blocks = math.ceil((n_signal + 1) / step)
    if step * blocks < n_signal + n_kernel - 1:
        blocks += 1
    return block, step, blocks


class _Filtering:
    """The overlap-add FIR filtering of one channel of ``n`` samples: its padded input laid out in whole blocks,
    filtered once, read back as the signal or as windows.

    Why not :func:`scipy.signal.oaconvolve`: it pads the signal twice more on the way (to whole blocks, then every
    block to the FFT length), after the caller had converted and padded it: four copies of a night's samples,
    each a fresh allocation the kernel must map and zero (issue 47: most of a night's filtering that was not an
    FFT). Here the samples are written once into the padded signal, which is laid out once into the FFT buffer,
    one channel at a time (buffers of tens of MB, reused, instead of hundreds), and the same transforms, products
    and overlap-add as scipy's give the very same numbers (tested against it).
    """

    def __init__(self, n: int, kernel: np.ndarray, lengths: tuple[int, int, int]) -> None:
        self.kernel, self.n = kernel, n
        self.block, self.step, self.blocks = lengths
        self.half = len(kernel) // 2
        self.kernel_spectrum = scipy.fft.rfft(kernel, n=self.block)

    @classmethod
    def of(cls, n: int, kernel: np.ndarray) -> _Filtering | None:
        """Return the filtering of ``n`` samples by ``kernel``, or None where scipy takes one FFT of the whole signal."""
        lengths = overlap_add_lengths(n + 2 * (len(kernel) // 2), len(kernel))
        return None if lengths is None else cls(n, kernel, lengths)

    def run(self, fill: Callable[[np.ndarray], None]) -> np.ndarray:
        """Return the overlap-added blocks ``(1, blocks, block)`` of the samples ``fill(view)`` writes into the ``(1, n)``
        float32 view of the padded signal (then padded by odd reflection here)."""
        padded = np.zeros((1, self.blocks * self.step), dtype=np.float32)  # whole blocks long
        fill(padded[:, self.half:self.half + self.n])
        _reflect_edges(padded, self.half, self.n)
        spectrum = _block_spectrum(padded.reshape(1, self.blocks, self.step), self.block)
        del padded
        spectrum *= self.kernel_spectrum
        out = scipy.fft.irfft(spectrum, n=self.block, axis=-1)       # (1, blocks, block)
        del spectrum
        overlap = len(self.kernel) - 1
        out[:, 1:, :overlap] += out[:, :-1, self.step:]            # overlap-add, as scipy adds
        return out

    def signal(self, out: np.ndarray) -> np.ndarray:
        """Return the filtered signal ``(n,)`` from :meth:`run`'s blocks (a view)."""
        overlap = len(self.kernel) - 1
        return out[0, :, :self.step].reshape(-1)[overlap:overlap + self.n]

    def signals(self, n_channels: int, fill: Callable[[int, np.ndarray], None]) -> np.ndarray:
        """Return ``(n_channels, n)`` float32: each channel ``c`` whose samples ``fill(c, view)`` writes, filtered."""
        out = np.empty((n_channels, self.n), dtype=np.float32)
        for c in range(n_channels):
            out[c] = self.signal(self.run(lambda view, c=c: fill(c, view)))
        return out

    def windows(self, out: np.ndarray, x: np.ndarray) -> None:
        """Write the filtered samples from :meth:`run`'s blocks into ``x`` ``(count, length)``: the first ``count`` windows
        of ``length`` samples, without the signal between."""
        overlap = len(self.kernel) - 1
        count, length = x.shape
        for w in range(count):
            at, done = overlap + w * length, 0
            while done < length:  # a window spans one block, or two
                b, offset = divmod(at + done, self.step)
                take = min(length - done, self.step - offset)
                x[w, done:done + take] = out[0, b, offset:offset + take]
                done += take


def fir_filter(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Return ``x`` (C, T) float32 convolved with the odd float32 ``kernel`` (L,) after odd-reflection padding by L // 2
    per side: ``oaconvolve(_odd_reflect_pad(x, L // 2), kernel[None, :], mode="valid", axes=-1)``, the same bytes
    (:class:`_Filtering` says why not that call)."""
    filtering = _Filtering.of(x.shape[1], kernel)
    if filtering is None:
        return oaconvolve(_odd_reflect_pad(x, len(kernel) // 2), kernel[None, :], mode="valid", axes=-1)
    return filtering.signals(len(x), lambda c, view: view.__setitem__(slice(None), x[c:c + 1]))


def _block_spectrum(blocks: np.ndarray, block: int) -> np.ndarray:
    """Return the rfft of every block ``(C, B, step)`` zero-padded to ``block`` samples, ``(C, B, block // 2 + 1)``."""
    buf = np.zeros((*blocks.shape[:2], block), dtype=np.float32)
    buf[:, :, :blocks.shape[2]] = blocks
    return scipy.fft.rfft(buf, axis=-1)


def preprocess_array(data: np.ndarray, sfreq: float, config: PreprocessConfig, *, source: str = "recording") -> np.ndarray:
    """Return preprocessed data, shape ``(C, T')`` float32 at ``config.sfreq``, in ``scale_uv`` units.

    ``data`` is ``(C, T)`` in volts at ``sfreq`` Hz (MNE's unit). NaN samples are set to zero
    before filtering (a NaN would spread over a whole kernel length); find them first with
    :func:`passport_kit.signals.windows.window_flags`, which flags them.
    """
    return Preprocessing(data, sfreq, config, source=source).signal()


class Preprocessing:
    """The preprocessing of one recording's samples ``data`` ``(C, T)`` (volts at ``sfreq`` Hz), read out as the
    signal (:meth:`signal`, what :func:`preprocess_array` returns) or as windows (:meth:`windows`).

    On their way to the filter the channels are put in µV / ``scale_uv`` as float32 (non-finite samples 0) and
    resampled to ``config.sfreq``; at the model's rate each channel is converted straight into the filter's
    buffer, and filtered on its own (:class:`_Filtering`).
    """

    def __init__(self, data: np.ndarray, sfreq: float, config: PreprocessConfig, *, source: str = "recording") -> None:
        check_sampling_rate(sfreq, config, source=source)
        self.data, self.scale = data, np.float32(1e6 / config.scale_uv)
        self.kernel = filter_kernel(config.sfreq, config.l_freq, config.h_freq, config.notch_freq).astype(np.float32)
        self.resampled: np.ndarray | None = None
        if sfreq != config.sfreq:
            x = np.empty(data.shape, dtype=np.float32)
            self._scaled(x, data)
            up, down = resample_ratio(sfreq, config.sfreq)
            # padtype='line' keeps a DC offset from ringing at the edges like zero padding would.
            self.resampled = resample_poly(x, up, down, axis=-1, padtype="line").astype(np.float32, copy=False)
        #: Samples per channel at ``config.sfreq``, as preprocessed.
        self.n_samples = data.shape[1] if self.resampled is None else self.resampled.shape[1]
        self.filtering = _Filtering.of(self.n_samples, self.kernel)

    def signal(self) -> np.ndarray:
        """Return the preprocessed signal ``(C, T')`` float32."""
        if self.filtering is None:
            return self._filtered_whole()
        with scipy.fft.set_workers(FFT_WORKERS):
            return self.filtering.signals(len(self.data), self._fill)

    def windows(self, count: int, length: int) -> np.ndarray:
        """Return the first ``count`` windows of ``length`` preprocessed samples, ``(count, C, length)`` float32, written
        once in window order (no ``(C, T')`` signal between)."""
        if self.filtering is None:
            signal = self._filtered_whole()[:, :count * length]
            return np.ascontiguousarray(signal.reshape(len(signal), count, length).transpose(1, 0, 2))
        x = np.empty((count, len(self.data), length), dtype=np.float32)
        for c in range(len(self.data)):
            self.filtering.windows(self._run(c), x[:, c, :])
        return x

    def _scaled(self, out: np.ndarray, samples: np.ndarray) -> None:
        """Write ``samples`` (volts) into the float32 ``out`` in µV / scale, non-finite samples as 0 (µV / scale
        first: float32 then holds numbers near 1 instead of 1e-5)."""
        out[:] = samples
        out *= self.scale
        if not np.isfinite(out.sum()):  # NaN or inf anywhere makes the sum so (as would overflow: then none is found)
            out[~np.isfinite(out)] = 0.0

    def _fill(self, c: int, view: np.ndarray) -> None:
        """Write channel ``c``'s samples at the model's rate into the filter's ``(1, n)`` float32 ``view``."""
        if self.resampled is not None:
            view[:] = self.resampled[c:c + 1]
        else:
            self._scaled(view, self.data[c:c + 1])

    def _run(self, c: int) -> np.ndarray:
        """Return the filter's overlap-added blocks of channel ``c``."""
        assert self.filtering is not None
        with scipy.fft.set_workers(FFT_WORKERS):
            return self.filtering.run(lambda view: self._fill(c, view))

    def _filtered_whole(self) -> np.ndarray:
        """Return every channel filtered ``(C, T')`` by scipy's one FFT (a signal too short for blocks)."""
        x = self.resampled
        if x is None:
            x = np.empty(self.data.shape, dtype=np.float32)
            self._scaled(x, self.data)
        with scipy.fft.set_workers(FFT_WORKERS):  # what fir_filter does without blocks
            filtered = oaconvolve(_odd_reflect_pad(x, len(self.kernel) // 2), self.kernel[None, :], mode="valid", axes=-1)
        return filtered.astype(np.float32, copy=False)


def preprocess(raw: mne.io.BaseRaw, config: PreprocessConfig) -> np.ndarray:
    """Return the preprocessed signal of ``raw``, shape ``(C, T)`` float32 at 200 Hz, 100 µV units.

    ``raw`` should already hold exactly the montage channels (see
    :func:`~passport_kit.signals.channels.map_channels`).
    """
    source = str(raw.filenames[0]) if raw.filenames and raw.filenames[0] else "recording"
    return preprocess_array(raw.get_data(), raw.info["sfreq"], config, source=source)
