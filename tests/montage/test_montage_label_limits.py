"""Channel names a recording cannot carry are refused (issue 35, finding 7): very long, or with invisible characters."""

from __future__ import annotations

import re

import pytest

from passport_kit.errors import MontageError
from passport_kit.montage import Montage


def _montage(name: str, aliases: tuple[str, ...] = ()) -> dict:
    return {"name": "odd", "coordinate_frame": "head", "units": "mm",
            "channels": [{"name": name, "position": [-80.0, -5.0, 10.0], "aliases": list(aliases)},
                         {"name": "ER1", "position": [80.0, -5.0, 10.0]}]}


@pytest.mark.parametrize(("name", "aliases", "message"), [
    ("E" * 10_000, (), "has 10,000 characters; give at most 64"),
    ("EL\u200b1", (), "invisible character U+200B (ZERO WIDTH SPACE)"),
    ("EL1", ("EL\x001",), "invisible character U+0000"),
])
def test_unusable_channel_names_are_refused(name: str, aliases: tuple[str, ...], message: str) -> None:
    with pytest.raises(MontageError, match=re.escape(message)):
        Montage.from_dict(_montage(name, aliases))


def test_ordinary_names_pass() -> None:
    assert Montage.from_dict(_montage("EEG ELA-REF", ("Ch 1", "ELA–ERA"))).ch_names == ["EEG ELA-REF", "ER1"]
