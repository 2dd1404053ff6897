"""The loader of the compiled bf16 CPU kernels of the model's inference (fused short-sequence attention, LayerNorm, ...).

``kernels.cpp`` holds these ops, registered as ``torch.ops.passport_kit``:

- ``criss_cross_attention(qkv (B, C, P, 6E), heads_s, heads_t) -> (B, C, P, 2E)``: both attention
  halves of a criss-cross layer, read straight from the packed q/k/v product of
  :func:`~passport_kit.model.lowp.layer.prepare` (softmax scale folded into q) and written
  in the layout the packed output projection reads: no regrouping copies. The two products take
  bf16 pairs into fp32 sums (AVX-512 BF16's ``vdpbf16ps``), the softmax weights rounded to bf16
  for the second as the eager form does; the softmax is fp32.
- ``layer_norm(x (..., D), weight (D,), bias (D,), eps) -> (..., D)``: bf16 in and out, fp32
  statistics.
- ``group_norm_gelu(x (B, R, D), groups, weight (D,), bias (D,), eps, add) -> (B, R, D)`` and
  ``spectrum_magnitude(z (..., F, 2)) -> (..., F)``: the patch embedding's GroupNorm + GELU between its
  conv blocks (run as products) and its spectrum's magnitude, for
  :func:`~passport_kit.model.lowp.patch.embed_patches`.

``amx.cpp`` adds, for CPUs with AMX (each runs only where ``amx_available()``: CPUID,
/proc/cpuinfo and the kernel's permission for the tile registers; a CPU with AVX-512 BF16 but no
AMX keeps the oneDNN products):

- ``attention_input(x, norm_w, norm_b, eps, w_in_packed, b_in) -> qkv``: LayerNorm and each half's
  q/k/v product (no products with the block-diagonal zeros), in the layout ``criss_cross_attention``
  reads;
- ``attention_output_feed_forward(att, x, w_out_packed, b_out, norm2_w, norm2_b, eps, w1p, b1, w2p,
  b2) -> out``: each half's output projection, the residual in fp32, LayerNorm and the feed-forward
  block, per 32-row block without writing the intermediate rows;
- ``feed_forward(h2, x1, w1p, b1, w2p, b2) -> x1 + GELU(h2 W1ᵀ + b1) W2ᵀ + b2`` alone;
- ``pack_attention_weight(w)`` and ``pack_feed_forward_weight(w)``: weights in AMX tile order,
  packed once with the layer's other prepared weights;
- ``gelu_(x)``: the same GELU (32 cubics for Φ, error < 2.6e-6) in place, as a separate pass (tested,
  not used: no faster than oneDNN's fused post-op).

The two share their declarations through ``lowp.h``. They are an opt-in build (``make fast``, which
runs ``python -m passport_kit.model.lowp.build``), never built by ``make install``, at import time or
in the tests: the default install is pure Python and torch. :func:`ops` loads the library once, and
only where it can run; otherwise, or with ``PASSPORT_KIT_LOWP_KERNELS=0``, it returns None and the
encoder takes its eager bf16 path, silently (one debug log line says why). Nothing that can end the
process by a signal runs in it before the checks pass, in this order: built, for this torch and
these sources (the build's stamp); a CPU with the flags the library was compiled for
(:func:`~.probe.cpu_problem`: x86-64-v4 and AVX-512 BF16, read from ``/proc/cpuinfo``); the very
file the build stamped (size and SHA-256: a library cut short, replaced, a FIFO is never loaded,
issue 46); and its self-test passed in a child process on this CPU (:func:`~.probe.verified`, run
once per library and CPU and kept beside it). A library that fails one of the last two, or loads
without every op the sources define, is not used, and one warning line says why (issue 54: an
illegal instruction on an AVX2-only CPU ended the process with no message).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import stat
import warnings
from pathlib import Path
from typing import Any

import torch

from passport_kit.errors import PassportWarning
from passport_kit.model.lowp import probe

log = logging.getLogger(__name__)

LIBRARY = Path(__file__).with_name("_lowp_kernels.so")
#: What the library was built from (:func:`library_key`), written by the build beside it.
TORCH_STAMP = Path(__file__).with_name("_lowp_kernels.so.torch")
#: The C++ sources of the library (all in one ``passport_kit`` op namespace).
SOURCES = (Path(__file__).with_name("kernels.cpp"), Path(__file__).with_name("amx.cpp"))
#: What the sources share (declarations across the two files): digested with them.
HEADERS = (Path(__file__).with_name("lowp.h"),)
#: Set to "0" to keep the eager bf16 path although the library is built (paired measurements).
SWITCH = "PASSPORT_KIT_LOWP_KERNELS"


def torch_version() -> str:
    """Return this torch's version and C++ ABI flag (a library built against another torch may crash)."""
    return f"{torch.__version__} cxx11abi={int(torch.compiled_with_cxx11_abi())}"


def library_key() -> str:
    """Return the key a built library must match: this torch (:func:`torch_version`) and its sources' digest.

    A library built from other sources (a pull without ``make fast``) lacks ops the Python side
    calls, or computes them differently: it is not loaded, and the eager path runs until a rebuild.
    """
    digest = hashlib.sha256()
    for source in (*SOURCES, *HEADERS):
        digest.update(source.read_bytes() if source.exists() else b"")
    return f"{torch_version()} sources={digest.hexdigest()[:16]}"


def library_stamp(library: Path) -> str:
    """Return the stamp line of a built ``library``: its size and SHA-256, written by the build and checked before
    every load (issue 46: a truncated library with a valid stamp killed predict with SIGBUS)."""
    return f"library size={library.stat().st_size} sha256={hashlib.sha256(library.read_bytes()).hexdigest()}"


def damaged_library(library: Path, stamp: list[str]) -> str | None:
    """Return why ``library`` is not the file the build stamped (``stamp``: the stamp file's lines), None when it is.

    Checked before it is mapped into the process: a FIFO would hang the read, and a file cut
    short (a full disk, an interrupted build) loads and then faults (SIGBUS) at the first op.
    """
    try:
        status = os.stat(library)
    except OSError as err:
        return f"cannot be read ({err.strerror or err})"
    if not stat.S_ISREG(status.st_mode):
        return "is not a regular file"
    recorded = stamp[1] if len(stamp) > 1 else ""
    size = re.match(r"library size=(\d+) sha256=[0-9a-f]{64}$", recorded)
    if size is None:
        return "has no recorded size and digest (built before they were recorded)"
    if int(size.group(1)) != status.st_size or library_stamp(library) != recorded:
        return "differs from the library that was built (cut short by a full disk or an interrupted build?)"
    return None


def expected_ops() -> list[str]:
    """Return the names of the ops the sources define (``m.def("name(...``): what a loaded library must have."""
    names: list[str] = []
    for source in SOURCES:
        text = source.read_text(encoding="utf-8") if source.exists() else ""
        names += re.findall(r'm\.def\(\s*"(\w+)\(', text)
    return names


def missing_ops(namespace: Any) -> list[str]:
    """Return the ops of :func:`expected_ops` that ``namespace`` (``torch.ops.passport_kit``) lacks."""
    missing = []
    for name in expected_ops():
        try:
            getattr(namespace, name)
        except (AttributeError, RuntimeError):
            missing.append(name)
    return missing


def _fall_back(reason: str) -> None:
    """Say in one line why the eager path runs although a library is built (a rebuild fixes it)."""
    warnings.warn(PassportWarning(f"lowp kernels: {LIBRARY.name} {reason}; the eager bf16 path runs - rebuild it with "
                                  "make fast (python -m passport_kit.model.lowp.build)"), stacklevel=3)


@functools.cache
def ops() -> Any | None:
    """Return ``torch.ops.passport_kit`` once the library is loaded, or None where it is absent or cannot run here."""
    if os.environ.get(SWITCH) == "0":
        return None
    if not LIBRARY.exists():
        log.debug("lowp kernels: %s not built (an opt-in: make fast)", LIBRARY.name)
        return None
    # A library built against another torch may load and then crash (C++ ABI); one built from
    # other sources lacks ops or differs in them: rebuild instead.
    stamp = TORCH_STAMP.read_text(encoding="utf-8").splitlines() if TORCH_STAMP.is_file() else []
    built_for = stamp[0].strip() if stamp else None
    if built_for != library_key():
        log.debug("lowp kernels: built for %s, this is %s: rebuild", built_for, library_key())
        return None
    # Compiled for x86-64-v4 with AVX-512 BF16: loaded on a CPU without them, it ends in an illegal instruction.
    cpu = probe.cpu_problem()
    if cpu is not None:
        log.debug("lowp kernels: not loaded, %s", cpu)
        return None
    damaged = damaged_library(LIBRARY, stamp)
    if damaged is not None:
        _fall_back(damaged)
        return None
    failed = probe.verified(LIBRARY, stamp[1])  # the self-test, in a child (its result recorded beside the library)
    if failed is not None:
        _fall_back(f"failed its self-test ({failed})")
        return None
    try:
        torch.ops.load_library(str(LIBRARY))
    except (OSError, RuntimeError) as err:  # built against another torch, or damaged: rebuild
        log.debug("lowp kernels: %s does not load (%s)", LIBRARY.name, err)
        return None
    missing = missing_ops(torch.ops.passport_kit)
    if missing:  # another shared library in its place: an AttributeError at the first op otherwise
        _fall_back(f"lacks the ops {', '.join(missing[:4])}{' ...' if len(missing) > 4 else ''}")
        return None
    return torch.ops.passport_kit


__all__ = ["HEADERS", "LIBRARY", "SOURCES", "SWITCH", "TORCH_STAMP", "damaged_library", "expected_ops", "library_key",
           "library_stamp", "missing_ops", "ops", "torch_version"]
