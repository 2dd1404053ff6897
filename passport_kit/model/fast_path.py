"""The bf16 CPU fast path where it is installed (:mod:`passport_kit.model.lowp`), or None: the one place model/ imports it.

Why one door: the fast path is a room of its own (C++ kernels, their loader and build, the bf16
layer forms, the cached casts). The rest of ``model/`` asks it through :data:`LOWP` and runs its
own eager form where :data:`LOWP` is None or declines, so it never knows which path runs.
Deleting ``passport_kit/model/lowp/`` (and ``tests/model/lowp/``) leaves :data:`LOWP` None and
every model test green on the eager path (``tests/model/test_fast_path.py``).
"""

from __future__ import annotations

from types import ModuleType


def _import_lowp() -> ModuleType | None:
    """Return the package :mod:`passport_kit.model.lowp`, or None where it is absent."""
    try:
        from passport_kit.model import lowp
    except ModuleNotFoundError as err:
        if err.name != "passport_kit.model.lowp":  # a dependency missing inside it is a bug, not an absence
            raise
        return None
    return lowp


#: The fast path's door (:mod:`passport_kit.model.lowp`: ``embed_patches``, ``layer_forward``,
#: ``FrozenLayerLowp``, ``process_path``), or None: the eager forms run.
LOWP = _import_lowp()

__all__ = ["LOWP"]
