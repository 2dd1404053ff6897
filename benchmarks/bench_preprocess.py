"""Preprocessing speed: an 8-hour, 12-channel recording at 256 Hz through the CBraMod contract.

Times, on one thread (BLAS/OpenMP pinned to 1 before numpy loads):

- ``preprocess``: volts (C, T) in memory → resample 200 Hz, band-pass 0.3-75 Hz, notch 50 Hz,
  µV/100 (``preprocess_array``);
- ``+ windows + flags``: the above plus ``make_windows`` (N, C, 30, 200) and ``window_flags``;
- ``end to end from EDF`` (``--edf``): write the recording as EDF once, then ``load_recording``
  without the cache (read, map channels, preprocess, window, flags).

Prints the times and the multiple of real time (recording seconds / wall seconds), and the
machine line. Run::

    .venv/bin/python benchmarks/bench_preprocess.py [--hours 8] [--channels 12] [--sfreq 256] [--repeats 3] [--edf]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import cpu_model  # noqa: E402

from passport_kit.signals.preprocess import PreprocessConfig, filter_kernel, preprocess_array  # noqa: E402
from passport_kit.signals.windows import make_windows, window_flags  # noqa: E402


def synthetic_recording(hours: float, n_channels: int, sfreq: float, seed: int = 0) -> np.ndarray:
    """Return ``(C, T)`` float64 volts: 1/f background, a 10 Hz rhythm, 50 Hz mains and drift."""
    rng = np.random.default_rng(seed)
    n = int(hours * 3600 * sfreq)
    t = np.arange(n) / sfreq
    data = np.empty((n_channels, n))
    for c in range(n_channels):
        white = rng.standard_normal(n).astype(np.float32)
        # integrated noise (1/f²-ish) leaks into drift, plus white noise: a crude EEG background
        brown = np.cumsum(white) * 0.02
        brown -= np.convolve(brown, np.ones(int(sfreq)) / sfreq, mode="same")
        data[c] = 1e-6 * (10 * white + brown + 20 * np.sin(2 * np.pi * 10 * t + c) + 5 * np.sin(2 * np.pi * 50 * t))
    return data


def _time(fn, repeats: int) -> list[float]:
    """Return the wall times of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=8.0)
    parser.add_argument("--channels", type=int, default=12)
    parser.add_argument("--sfreq", type=float, default=256.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--edf", action="store_true", help="also time load_recording from an EDF file")
    args = parser.parse_args()

    config = PreprocessConfig(amplitude_limit_uv=100.0)
    duration_s = args.hours * 3600
    print(f"machine: {cpu_model()} | {os.cpu_count()} logical CPUs | 1 thread | numpy {np.__version__}")
    print(f"recording: {args.hours:g} h × {args.channels} ch at {args.sfreq:g} Hz (synthetic), config {config.model_dump()}")
    data = synthetic_recording(args.hours, args.channels, args.sfreq)
    filter_kernel(config.sfreq, config.l_freq, config.h_freq, config.notch_freq)  # design once, outside the timing

    def pre() -> np.ndarray:
        return preprocess_array(data, args.sfreq, config)

    def full() -> None:
        x = make_windows(pre(), config)
        window_flags(data, args.sfreq, x, config)

    for name, fn in (("preprocess", pre), ("preprocess + windows + flags", full)):
        times = _time(fn, args.repeats)
        best, median = min(times), sorted(times)[len(times) // 2]
        print(f"{name:32s} best {best:6.2f} s  median {median:6.2f} s  → {duration_s / median:7.0f}× real time (median)")

    if args.edf:
        import mne

        from passport_kit.montage import Montage
        from passport_kit.signals import load_recording

        names = [f"E{i}" for i in range(args.channels)]
        montage = Montage.from_dict({"name": "bench", "units": "mm", "channels": [
            {"name": n, "position": [80 * np.cos(a), 80 * np.sin(a), 40]}
            for n, a in zip(names, np.linspace(0, 2 * np.pi, args.channels, endpoint=False))]})
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "bench.edf"
            raw = mne.io.RawArray(data, mne.create_info(names, args.sfreq, "eeg"), verbose="error")
            mne.export.export_raw(path, raw, fmt="edf", verbose="error")
            del raw
            times = _time(lambda: load_recording(path, montage, config, cache=False), args.repeats)
            median = sorted(times)[len(times) // 2]
            print(f"{'end to end from EDF (no cache)':32s} best {min(times):6.2f} s  median {median:6.2f} s  → "
                  f"{duration_s / median:7.0f}× real time (median)")


if __name__ == "__main__":
    main()
