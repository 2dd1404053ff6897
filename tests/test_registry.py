"""The registry every part registers by name in (passport_kit/registry.py): once per name, listed, refused in one line."""

from __future__ import annotations

import pytest

from passport_kit.errors import ConfigError
from passport_kit.registry import Registry


def _colours(**kwargs: object) -> Registry[int]:
    colours: Registry[int] = Registry("colour", **kwargs)  # type: ignore[arg-type]
    for i, name in enumerate(("red", "green", "blue")):
        colours.add(name, i)
    return colours


def test_items_are_listed_and_read_back_in_the_order_registered() -> None:
    colours = _colours()
    assert colours.names() == ("red", "green", "blue") == tuple(colours)
    assert colours.lookup("green") == colours["green"] == 1
    assert dict(colours.items()) == {"red": 0, "green": 1, "blue": 2} and len(colours) == 3
    assert "blue" in colours and "black" not in colours and colours.get("black") is None


def test_the_default_is_listed_first_wherever_it_was_registered() -> None:
    assert _colours(default="blue").names() == ("blue", "red", "green")
    assert Registry("colour", default="blue").names() == ()  # not registered (yet): not listed


def test_a_second_item_under_a_taken_name_is_refused_in_one_line_and_the_first_stays() -> None:
    colours = _colours()
    with pytest.raises(ValueError, match=r"^a colour named 'red' is already registered \(0\); choose another name$"):
        colours.add("red", 7)
    assert colours["red"] == 0


def test_a_duplicate_class_is_named_by_where_it_was_defined() -> None:
    kinds: Registry[type] = Registry("kind")
    kinds.add("int", int)
    with pytest.raises(ValueError, match=r"already registered \(builtins\.int\)"):
        kinds.add("int", bool)


def test_replace_and_remove_are_explicit() -> None:
    colours = _colours()
    assert colours.add("red", 7, replace=True) == 7 and colours["red"] == 7
    assert colours.remove("green") == 1 and colours.names() == ("red", "blue")
    colours.add("green", 8)  # free again once removed
    assert colours.names() == ("red", "blue", "green")


def test_an_unknown_name_is_refused_with_the_known_ones_as_the_registry_says() -> None:
    colours = _colours(unknown=ConfigError)
    message = "unknown colour 'black'; choose one of red, green, blue"
    with pytest.raises(ConfigError, match=f"^{message}$"):
        colours.lookup("black")
    with pytest.raises(KeyError, match=message):  # indexing is the mapping's: a KeyError, with the same words
        colours["black"]
    with pytest.raises(KeyError, match="unknown colour 'black'"):
        _colours().lookup("black")  # a registry only the code reads: a bug's error
