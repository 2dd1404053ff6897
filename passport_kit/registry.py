"""Things registered by name: one registry for every kind of part a subclass or a plugin adds.

The package's registries (channel embedding kinds and their modules, heads, recipes, sleep
priors, ladder rungs) are each a :class:`Registry`, so they behave alike: a name is registered
once (a second class under a taken name is refused, where a plain dict would silently replace
the first, as PEFT refuses a second adapter of one name), the names are listed in the order
registered, and an unknown name is refused in one line that lists the known ones.

Ground floor (imports nothing of passport-kit): ``errors`` cannot be imported here, so a
registry of names a user types is given the error type its unknown names raise
(``unknown=ConfigError``); a registry only the code looks into keeps ``KeyError``, a bug's.

>>> colours = Registry("colour")
>>> colours.add("red", 1)
1
>>> colours.names()
('red',)
>>> colours.add("red", 2)
Traceback (most recent call last):
...
ValueError: a colour named 'red' is already registered (1); choose another name
>>> colours.lookup("blue")
Traceback (most recent call last):
...
KeyError: "unknown colour 'blue'; choose one of red"
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Items by name, in the order registered; read-only as a mapping, changed only by :meth:`add` and :meth:`remove`.

    ``what`` names an item in messages (``"recipe"``, ``"head kind"``); ``unknown`` is the error
    :meth:`lookup` raises for a name not registered; ``default``, when given, is listed first by
    :meth:`names` (the name a caller falls back on, wherever it was registered).
    """

    def __init__(self, what: str, *, unknown: type[Exception] = KeyError, default: str | None = None) -> None:
        self.what = what
        self.default = default
        self._unknown = unknown
        self._items: dict[str, T] = {}

    def add(self, name: str, item: T, *, replace: bool = False) -> T:
        """Return ``item`` after registering it as ``name``; ValueError when the name is taken (unless ``replace``)."""
        if name in self._items and not replace:
            raise ValueError(f"a {self.what} named {name!r} is already registered ({_label(self._items[name])}); "
                             "choose another name")
        self._items[name] = item
        return item

    def remove(self, name: str) -> T:
        """Return the item registered as ``name`` after unregistering it (a test or plugin undoing its ``add``)."""
        item = self[name]
        del self._items[name]
        return item

    def names(self) -> tuple[str, ...]:
        """Return the registered names: the default first (when registered), then in the order registered."""
        first = (self.default,) if self.default in self._items else ()
        return (*first, *(name for name in self._items if name != self.default))

    def lookup(self, name: str) -> T:
        """Return the item registered as ``name``; the registry's ``unknown`` error, listing the known names, else."""
        if name not in self._items:
            raise self._unknown(self.unknown_message(name))
        return self._items[name]

    def unknown_message(self, name: str) -> str:
        """Return the one line that refuses ``name``: what it is not, and the names to choose from."""
        return f"unknown {self.what} {name!r}; choose one of {', '.join(self.names())}"

    def __getitem__(self, name: str) -> T:
        if name not in self._items:
            raise KeyError(self.unknown_message(name))
        return self._items[name]

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}: {', '.join(self.names())})"


def _label(item: object) -> str:
    """Return how a refusal names the item already registered: a class by its qualified name, anything else by repr."""
    if isinstance(item, type):
        return f"{item.__module__}.{item.__qualname__}"
    return repr(item)


__all__ = ["Registry"]
