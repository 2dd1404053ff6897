"""Simulator speed: one night through ``simulate_recording``, and a whole dataset to EDF.

Times, on one thread (BLAS/OpenMP pinned to 1 before numpy loads), wall and CPU seconds:

- ``recording``: ``simulate_recording`` for each montage (arrays only, no files);
- ``dataset`` (``--dataset N``): ``simulate_dataset`` of N subjects to EDF + labels +
  ``dataset.yaml`` in a temporary folder (what ``passport-kit simulate`` and the demo run).

The shared development machine is often loaded; the CPU time is the steadier number. Run::

    .venv/bin/python benchmarks/bench_simulator.py [--hours 1] [--montages eesm17-ear tuh-19] \
        [--repeats 3] [--dataset 9]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import cpu_model  # noqa: E402

from passport_kit.montage import get_montage  # noqa: E402
from passport_kit.signals.simulator import simulate_dataset, simulate_recording  # noqa: E402


def _timed(fn) -> tuple[float, float]:  # noqa: ANN001 - any callable
    """Return (wall, CPU) seconds of one call of ``fn``."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--montages", nargs="+", default=["eesm17-ear", "tuh-19"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dataset", type=int, default=0, help="subjects of an end-to-end dataset run")
    args = parser.parse_args()
    print(f"{cpu_model()} | {os.cpu_count()} logical CPUs | 1 thread | load {os.getloadavg()[0]:.1f}")
    epochs = round(args.hours * 120)
    for name in args.montages:
        montage = get_montage(name)
        simulate_recording(montage, seed=0, subject=0, n_epochs=2)   # imports, caches
        for rep in range(args.repeats):
            wall, cpu = _timed(lambda: simulate_recording(montage, seed=0, subject=rep, n_epochs=epochs))
            print(f"recording {name:12s} {montage.n_channels:2d} ch {args.hours:g} h: "
                  f"wall {wall:6.2f} s  CPU {cpu:6.2f} s  ({args.hours * 3600 / wall:6.0f}x real time)")
    if args.dataset:
        name = args.montages[0]
        with tempfile.TemporaryDirectory() as tmp:
            wall, cpu = _timed(lambda: simulate_dataset(name, Path(tmp) / "sim", n_subjects=args.dataset,
                                                        hours=args.hours, seed=0))
        print(f"dataset   {name:12s} {args.dataset} subjects x {args.hours:g} h to EDF: "
              f"wall {wall:6.2f} s  CPU {cpu:6.2f} s")
    print(f"peak resident memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
