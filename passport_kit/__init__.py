"""passport-kit: onboard new EEG device layouts onto a pretrained EEG foundation model.

Implements *Device Passport* (ICML 2026). The public Python API mirrors the CLI::

    import passport_kit as pk
    montage = pk.Montage.from_yaml("ear.yaml")
"""

from __future__ import annotations

__version__ = "0.1.0"

from passport_kit.errors import PassportError  # noqa: F401  (re-exported)

# Onboarding API, imported lazily so that `import passport_kit` stays light (no torch).
_LAZY = {
    "adapt": "passport_kit.onboard.adapt",
    "evaluate": "passport_kit.onboard.evaluate",
    "predict": "passport_kit.inference.predict",
    "check": "passport_kit.onboard.check",
    "Hypnogram": "passport_kit.inference.hypnogram",
}


def __getattr__(name: str):  # noqa: ANN202 - module-level lazy attribute (PEP 562)
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'passport_kit' has no attribute {name!r}")
