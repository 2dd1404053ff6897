"""passport-kit: onboard new EEG device layouts onto a pretrained EEG foundation model.

Implements *Device Passport* (ICML 2026). The public Python API mirrors the CLI::

    import passport_kit as pk
    montage = pk.Montage.from_yaml("ear.yaml")
"""

from __future__ import annotations

__version__ = "0.1.0"

from passport_kit.errors import PassportError  # noqa: F401  (re-exported)
