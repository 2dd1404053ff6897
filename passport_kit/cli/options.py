"""Option parsing shared by several commands (one rule per kind of value)."""

from __future__ import annotations

from passport_kit.errors import ConfigError

#: Exit code after Ctrl-C, once the training state has been saved (128 + SIGINT).
EXIT_INTERRUPTED = 130


def optional_float(value: str, option: str, what: str) -> float | None:
    """Return ``value`` as a float, or None for 'none', 'off' or '0'.

    ``option`` (e.g. ``--notch``) and ``what`` (e.g. ``a frequency in Hz (50, 60)``) name the
    option in the one-line error a bad value gives.
    """
    if value.strip().lower() in {"none", "off", "0"}:
        return None
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"{option} must be {what} or 'none', got {value!r}") from None
