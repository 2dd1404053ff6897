"""Counts in words: ``counted(1, "channel") == "1 channel"``, ``counted(4, "channel") == "4 channels"``.

Ground floor (imports nothing of passport-kit): messages of every part count things the same way.
"""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """Return ``n`` and ``noun`` in the number ``n`` takes: ``'1 warning'``, ``'0 warnings'``, ``'2 classes'``.

    ``plural`` spells an irregular plural (default: ``noun + 's'``, or ``+ 'es'`` after s, x, ch, sh).
    """
    if n == 1:
        return f"{n} {noun}"
    if plural is None:
        plural = noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")
    return f"{n} {plural}"


__all__ = ["counted"]
