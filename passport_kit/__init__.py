"""passport-kit: onboard new EEG device layouts onto a pretrained EEG foundation model.

Implements *Device Passport* (ICML 2026). The public Python API mirrors the CLI::

    import passport_kit as pk
    montage = pk.Montage.from_yaml("ear.yaml")
    pk.register_montage(montage)
    result = pk.adapt(montage="my-ear", data="sim-ear", out="runs/my-ear")
    night = pk.predict("runs/my-ear", "new-night/s01.edf", "runs/pred")[0]
    night.proba          # (N, n_classes) class probabilities per window, night.classes their names

``dir(pk)`` lists it; each name is imported when first used, so ``import passport_kit`` stays
light (no torch, no MNE).
"""

from __future__ import annotations

from passport_kit.errors import PassportError  # noqa: F401  (re-exported)
from passport_kit.version import __version__

# The public API, imported lazily so that `import passport_kit` stays light (no torch).
_LAZY = {
    "predict": "passport_kit.inference.keywords",
    "adapt": "passport_kit.onboard.adapt",
    "evaluate": "passport_kit.onboard.evaluate",
    "predict_zero_shot": "passport_kit.inference.keywords",
    "check": "passport_kit.onboard.check",
    "Hypnogram": "passport_kit.sleep.hypnogram",
    "Montage": "passport_kit.montage",
    "register_montage": "passport_kit.montage",
    "resolve_montage": "passport_kit.montage",
    "list_montages": "passport_kit.montage",
    "simulate_dataset": "passport_kit.signals",
    "load_dataset": "passport_kit.signals",
    "PreprocessConfig": "passport_kit.signals",
    "ReadOptions": "passport_kit.inference.options",
    "OutputOptions": "passport_kit.inference.options",
}

__all__ = ["PassportError", "__version__", *_LAZY]


def __getattr__(name: str):  # noqa: ANN202 - module-level lazy attribute (PEP 562)
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'passport_kit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
