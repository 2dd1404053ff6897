"""Counts in words: ``counted(1, "channel") == "1 channel"``, ``counted(4, "channel") == "4 channels"``.

Ground floor (imports nothing of passport-kit): messages of every part count things the same way.
"""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """Return ``n`` and ``noun`` in the number ``n`` takes: ``'1 warning'``, ``'0 warnings'``, ``'2 classes'``.

    ``plural`` spells an irregular plural (default: ``noun + 's'``, or ``+ 'es'`` after s, x, ch, sh, except
    where 'ch' says k: 'epochs', not 'epoches', issue 58).
    """
    if n == 1:
        return f"{n} {noun}"
    if plural is None:
        hissing = noun.endswith(("s", "x", "ch", "sh")) and not noun.endswith(_CH_SAYS_K)
        plural = noun + ("es" if hissing else "s")
    return f"{n} {plural}"


#: Nouns (and noun endings) whose final 'ch' is a k sound: plural + 's'.
_CH_SAYS_K = ("epoch", "stomach", "monarch", "patriarch", "tech")


__all__ = ["counted"]
