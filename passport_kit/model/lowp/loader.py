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

The two share their declarations through ``lowp.h``. They are built by
``python -m passport_kit.model.lowp.build`` (``make install`` runs it),
never at import time. :func:`ops` loads the library once, and only where it can run (built,
for this torch, on a CPU with AVX-512 BF16 where torch runs AVX-512 kernels); otherwise, or with
``PASSPORT_KIT_LOWP_KERNELS=0``, it returns None and the encoder takes its eager bf16 path,
silently (one debug log line says why).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from pathlib import Path
from typing import Any

import torch

from passport_kit.runtime import cpu_supports_bf16

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

    A library built from other sources (a pull without ``make install``) lacks ops the Python side
    calls, or computes them differently: it is not loaded, and the eager path runs until a rebuild.
    """
    digest = hashlib.sha256()
    for source in (*SOURCES, *HEADERS):
        digest.update(source.read_bytes() if source.exists() else b"")
    return f"{torch_version()} sources={digest.hexdigest()[:16]}"


@functools.cache
def ops() -> Any | None:
    """Return ``torch.ops.passport_kit`` once the library is loaded, or None where it is absent or cannot run here."""
    if os.environ.get(SWITCH) == "0":
        return None
    if not LIBRARY.exists():
        log.debug("lowp kernels: %s not built (python -m passport_kit.model.lowp.build)", LIBRARY.name)
        return None
    # A library built against another torch may load and then crash (C++ ABI); one built from
    # other sources lacks ops or differs in them: rebuild instead.
    built_for = TORCH_STAMP.read_text(encoding="utf-8").strip() if TORCH_STAMP.exists() else None
    if built_for != library_key():
        log.debug("lowp kernels: built for %s, this is %s: rebuild", built_for, library_key())
        return None
    # Compiled for x86-64-v4: loading it on a CPU without AVX-512 would end in an illegal instruction.
    if "AVX512" not in str(torch.backends.cpu.get_cpu_capability()).upper():
        log.debug("lowp kernels: not loaded, this CPU runs no AVX-512 kernels")
        return None
    # The attention's products are AVX-512 BF16 instructions (the build's -mavx512bf16).
    if not cpu_supports_bf16():
        log.debug("lowp kernels: not loaded, this CPU has no AVX-512 BF16")
        return None
    try:
        torch.ops.load_library(str(LIBRARY))
    except (OSError, RuntimeError) as err:  # built against another torch, or damaged: rebuild
        log.debug("lowp kernels: %s does not load (%s)", LIBRARY.name, err)
        return None
    return torch.ops.passport_kit


__all__ = ["HEADERS", "LIBRARY", "SOURCES", "SWITCH", "TORCH_STAMP", "library_key", "ops", "torch_version"]
