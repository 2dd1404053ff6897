"""Import braindecode's CBraMod for comparison tests, isolating its torchaudio dependency.

braindecode imports torchaudio at package import (filters, a few unrelated models), but its
CBraMod never calls it. On this machine the PyPI torchaudio wheel is linked against CUDA and
fails to load next to the CPU torch, so when (and only when) ``import torchaudio`` fails we
put a stand-in module in ``sys.modules`` whose attributes are inert placeholder classes. The
stand-in lives only in the test process; passport-kit itself never imports braindecode.
Install (what ``make test`` does): ``pip install --no-deps braindecode`` plus its pure-Python
dependencies, never torchaudio or an unpinned torch.
"""

from __future__ import annotations

import sys
import types
import warnings
from typing import Any

import torch


class _Placeholder(types.ModuleType):
    """A module whose every missing attribute is an inert nn.Module subclass or submodule."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = type(name, (torch.nn.Module,), {"__module__": self.__name__})
        setattr(self, name, value)
        return value


def _install_torchaudio_stub() -> None:
    root = _Placeholder("torchaudio")
    root.__path__ = []  # mark as a package so "import torchaudio.x" resolves below
    sys.modules["torchaudio"] = root
    for sub in ("functional", "transforms", "models", "compliance", "compliance.kaldi"):
        module = _Placeholder(f"torchaudio.{sub}")
        sys.modules[f"torchaudio.{sub}"] = module
        setattr(root, sub.split(".")[0], sys.modules[f"torchaudio.{sub.split('.')[0]}"])


def import_braindecode_cbramod() -> type | None:
    """Return braindecode's CBraMod class, or None when braindecode cannot be imported."""
    try:
        import torchaudio  # noqa: F401
    except Exception:  # ImportError, or OSError from a CUDA-linked extension
        for name in [m for m in sys.modules if m == "torchaudio" or m.startswith("torchaudio.")]:
            del sys.modules[name]
        _install_torchaudio_stub()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from braindecode.models import CBraMod
    except Exception:
        return None
    return CBraMod
