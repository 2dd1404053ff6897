"""The machine line and its measured matrix-product limit, shared by every benchmark.

Run alone to print both::

    .venv/bin/python benchmarks/machine.py --threads 2
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import torch


def cpu_model() -> str:
    """Return the CPU model name from /proc/cpuinfo (or platform.processor())."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def cpu_flags() -> set[str]:
    """Return the CPU feature flags from /proc/cpuinfo (empty where unavailable)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def machine_line(threads: int) -> str:
    """Return one line naming CPU, cores, threads used and the torch build."""
    flags = cpu_flags()
    bf16 = "avx512_bf16" if "avx512_bf16" in flags else ("amx_bf16" if "amx_bf16" in flags else "no bf16 ISA")
    return (
        f"{cpu_model()} | {os.cpu_count()} logical CPUs | torch threads {threads} | {bf16} | "
        f"torch {torch.__version__} | Python {platform.python_version()}"
    )


def matmul_gflops(dtype: torch.dtype, n: int = 1024, repeats: int = 20) -> float:
    """Return the median GFLOP/s of an n×n×n matrix product in `dtype` (2·n³ FLOP each)."""
    a = torch.randn(n, n).to(dtype)
    b = torch.randn(n, n).to(dtype)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t0)
    times.sort()
    return 2 * n**3 / times[len(times) // 2] / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(machine_line(args.threads))
    for dtype in (torch.float32, torch.bfloat16):
        print(f"matmul 1024^3 {str(dtype).removeprefix('torch.'):>8}: {matmul_gflops(dtype):7.1f} GFLOP/s")


if __name__ == "__main__":
    main()
