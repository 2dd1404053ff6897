"""Where and how training runs: device, numeric precision, seeds and CPU threads.

Shared by pretraining and adaptation, so that ``--device`` and ``--precision`` mean the same
thing in every command::

    device = resolve_device("auto")                  # cuda when available, else cpu
    precision = resolve_precision("auto", device)    # 'bf16' where the hardware has it
    with autocast(device, precision):
        loss = model(x)

``auto`` precision is bf16 on CUDA devices that support it, and on CPUs with native bf16
instructions (AVX-512 BF16 or AMX); everywhere else fp32, because emulated bf16 on a CPU is
slower than fp32 and only costs accuracy.
"""

from __future__ import annotations

import contextlib
import logging
import os
import platform
import random
import sys
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from passport_kit.errors import ConfigError

DeviceName = Literal["auto", "cpu", "cuda"]
PrecisionName = Literal["auto", "fp32", "bf16"]
Precision = Literal["fp32", "bf16"]

DEVICE_CHOICES: tuple[str, ...] = ("auto", "cpu", "cuda")
PRECISION_CHOICES: tuple[str, ...] = ("auto", "fp32", "bf16")

log = logging.getLogger(__name__)

# /proc/cpuinfo flags that mean the CPU computes bf16 natively.
_CPU_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
#: The CPU flags (space-separated, as /proc/cpuinfo names them) that the CPU checks read instead of this
#: machine's, to see what another CPU would do without one (the tests; ``"avx avx2 fma"``: an AVX2-only CPU).
CPU_FLAGS_ENV = "PASSPORT_KIT_CPU_FLAGS"


def resolve_device(name: str = "auto", *, local_rank: int | None = None) -> torch.device:
    """Return the torch device for ``'auto' | 'cpu' | 'cuda'`` (or ``'cuda:N'``).

    ``auto`` picks CUDA when it is available. Under ``torchrun`` pass ``local_rank`` so that
    each process on a machine gets its own GPU (``cuda:<local_rank>``). Logged (``--verbose``).
    """
    device = _device(name, local_rank)
    log.info("device %s (--device %s)", device, name)
    return device


def _device(name: str, local_rank: int | None) -> torch.device:
    key = str(name).strip().lower()
    if key == "auto":
        key = "cuda" if torch.cuda.is_available() else "cpu"
    if key == "cpu":
        return torch.device("cpu")
    if key == "cuda" or key.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise ConfigError(
                f"device '{name}' was requested but CUDA is not available in this torch build "
                "or machine; use --device cpu or --device auto"
            )
        if key == "cuda":
            index = local_rank if local_rank is not None else torch.cuda.current_device()
            return torch.device("cuda", index % torch.cuda.device_count())
        return torch.device(key)
    raise ConfigError(f"unknown device '{name}'; use one of: {', '.join(DEVICE_CHOICES)} (or cuda:N)")


def _cpuinfo_flags(path: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """Return the CPU feature flags listed in ``/proc/cpuinfo`` (empty off Linux)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def cpu_flags(cpuinfo: Path | None = None) -> frozenset[str]:
    """Return this CPU's feature flags as ``/proc/cpuinfo`` names them (empty off Linux).

    Those of ``PASSPORT_KIT_CPU_FLAGS`` where it is set (:data:`CPU_FLAGS_ENV`), unless a ``cpuinfo`` file is given.
    """
    simulated = os.environ.get(CPU_FLAGS_ENV)
    if cpuinfo is None and simulated is not None:
        return frozenset(simulated.split())
    return _cpuinfo_flags(cpuinfo or Path("/proc/cpuinfo"))


def cpu_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """Return the CPU's model name (``/proc/cpuinfo``; else the machine type), marked when its flags are simulated."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    names = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")]
    name = names[0] if names else (platform.processor() or platform.machine() or "an unknown CPU")
    return f"{name} (flags simulated by {CPU_FLAGS_ENV})" if CPU_FLAGS_ENV in os.environ else name


def cpu_supports_bf16(cpuinfo: Path | None = None) -> bool:
    """Return whether this CPU computes bf16 natively (AVX-512 BF16 or AMX)."""
    if cpu_flags(cpuinfo) & _CPU_BF16_FLAGS:
        return True
    if cpuinfo is None and CPU_FLAGS_ENV in os.environ:  # simulated: the flags alone say
        return False
    # Off Linux (or in containers hiding /proc) ask torch which kernels it dispatches to.
    capability = str(torch.backends.cpu.get_cpu_capability()).upper()
    return "AMX" in capability or "BF16" in capability


def resolve_precision(name: str, device: torch.device) -> Precision:
    """Return ``'fp32'`` or ``'bf16'`` for ``'auto' | 'fp32' | 'bf16'`` on ``device``; logged (``--verbose``)."""
    precision = _precision(name, device)
    log.info("precision %s (--precision %s on %s)", precision, name, device)
    return precision


def _precision(name: str, device: torch.device) -> Precision:
    key = str(name).strip().lower()
    if key not in PRECISION_CHOICES:
        raise ConfigError(f"unknown precision '{name}'; use one of: {', '.join(PRECISION_CHOICES)}")
    if device.type == "cuda":
        supported = torch.cuda.is_bf16_supported()
    elif device.type == "cpu":
        supported = cpu_supports_bf16()
    else:
        supported = False
    if key == "auto":
        return "bf16" if supported else "fp32"
    if key == "bf16" and device.type == "cuda" and not supported:
        raise ConfigError(
            f"precision 'bf16' was requested but GPU {torch.cuda.get_device_name(device)} does not "
            "support bfloat16; use --precision fp32"
        )
    # bf16 on a CPU without native support still runs (emulated, slowly): honour the request.
    return "bf16" if key == "bf16" else "fp32"


def autocast(device: torch.device, precision: Precision) -> contextlib.AbstractContextManager:
    """Return a context that runs the forward pass in ``precision`` on ``device``.

    Parameters and optimizer state stay fp32; only eligible operations run in bf16.
    """
    if precision == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and every GPU) for a reproducible run."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def step_seed(seed: int, *keys: int) -> int:
    """Return a seed that depends only on ``seed`` and ``keys`` (e.g. step, rank, stream).

    Seeding each step from its own numbers, not from a generator carried along, makes a resumed
    run draw exactly what the interrupted one would have, without storing generator states.
    """
    return int(np.random.SeedSequence([seed % 2**32, *keys]).generate_state(1)[0])


def set_threads(n_threads: int | None) -> int:
    """Set torch's intra-op CPU threads (``None`` keeps torch's choice); return the count in use.

    Under torchrun several processes share the machine, so each gets an equal share of the
    cores unless ``n_threads`` says otherwise.
    """
    if n_threads is None:
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        if local_world > 1:
            n_threads = max(1, (os.cpu_count() or 1) // local_world)
    if n_threads is not None:
        if n_threads < 1:
            raise ConfigError(f"thread count must be at least 1, got {n_threads}")
        torch.set_num_threads(n_threads)
        # Inter-op threads can only be set before the first parallel op; later calls raise.
        with contextlib.suppress(RuntimeError):
            torch.set_num_interop_threads(min(n_threads, 2))
    log.info("CPU threads %d", torch.get_num_threads())
    return torch.get_num_threads()


def describe(device: torch.device, precision: Precision) -> str:
    """Return one line naming the device, precision and threads, for logs and model cards."""
    if device.type == "cuda":
        where = f"{device} ({torch.cuda.get_device_name(device)})"
    else:
        where = f"cpu ({torch.get_num_threads()} threads, {torch.backends.cpu.get_cpu_capability()})"
    return f"{where}, {precision}, torch {torch.__version__}, python {sys.version.split()[0]}"
