"""The bf16 fast path on CPUs with native bf16 (AVX-512 BF16, AMX): the model's one room for it.

What lives here: the C++ kernels (``kernels.cpp``, ``amx.cpp``, their shared ``lowp.h``), their
loader (:mod:`.loader`), the checks that keep them out of a process whose CPU cannot run them
(:mod:`.probe`: the CPU's flags, then a self-test in a child process) and their build (an opt-in:
``make fast``, ``python -m passport_kit.model.lowp.build``; the default install compiles nothing), the bf16 forms of
the criss-cross layer (:mod:`.layer`) and of the patch embedding (:mod:`.patch`), their products
(:mod:`.linear`) and the weights cast once (:mod:`.cast`).

The door (what ``model/`` calls, through :data:`passport_kit.model.fast_path.LOWP` only):

- :func:`layer_forward` ``(layer, x)``: a criss-cross layer's bf16 inference, on the path chosen
  once when its weights are prepared (:data:`~.layer.LowpPath`: ``eager``, ``avx512``, ``amx``);
- :class:`FrozenLayerLowp`: a frozen layer in bf16 whose backward gives the input gradient only
  (the ``adapter`` step);
- :func:`embed_patches` ``(embedding, x)``: the patch embedding's bf16 inference form, or None;
- :func:`process_path`: the path this process runs (benchmarks record it).

Who uses it: bf16 inference and frozen-layer training on a CPU (``--precision auto`` there): the
``finetune`` recipe, pretraining's adapter step, ``predict`` with a finetuned bundle, and the
benchmark. The default ``auto``/``probe`` recipes read fp32 features and never reach it. How to
delete it: remove this folder and ``tests/model/lowp/`` (and the Makefile's ``KERNELS`` lines and ``fast`` targets):
every layer then runs its eager form (docs/architecture.md).
"""

from __future__ import annotations

from passport_kit.model.lowp.layer import PATHS, FrozenLayerLowp, LowpPath, layer_forward, process_path
from passport_kit.model.lowp.patch import embed_patches

__all__ = ["PATHS", "FrozenLayerLowp", "LowpPath", "embed_patches", "layer_forward", "process_path"]
