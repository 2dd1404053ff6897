"""Montages: named, ordered EEG channel layouts with head-frame positions, and their registry.

Example::

    >>> from passport_kit.montage import get_montage
    >>> m = get_montage("eesm19-ear")
    >>> m.ch_names[:3], m.positions.shape
    (['ELA', 'ELB', 'ELC'], (12, 3))
"""

from __future__ import annotations

from passport_kit.montage.registry import (
    MontageEntry,
    builtin_montage_dir,
    get_montage,
    list_montages,
    register_montage,
    remove_montage,
    resolve_montage,
    user_home,
    user_montage_dir,
)
from passport_kit.montage.schema import KINDS, UNITS_PER_METRE, Channel, Montage

__all__ = [
    "KINDS",
    "UNITS_PER_METRE",
    "Channel",
    "Montage",
    "MontageEntry",
    "builtin_montage_dir",
    "get_montage",
    "list_montages",
    "register_montage",
    "remove_montage",
    "resolve_montage",
    "user_home",
    "user_montage_dir",
]
