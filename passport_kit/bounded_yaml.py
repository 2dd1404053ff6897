"""YAML with budgets: every file passport-kit reads as YAML goes through :class:`BoundedLoader`.

``yaml.safe_load`` never runs code, but it builds whatever a file describes: nine nested aliases
("billion laughs") expand to a billion nodes as soon as anything walks the result (issue 28:
``montages show --json`` died with MemoryError, ``adapt`` panicked), and a file nested 20,000
levels deep overflows Python's stack (RecursionError). :class:`BoundedLoader` is a SafeLoader
that refuses both while the document is composed, before anything is built, with a
:class:`yaml.YAMLError` that names the line, so each reader's usual one-line error applies:

- nesting deeper than :data:`MAX_DEPTH` levels;
- aliases that together stand for more than :data:`MAX_ALIAS_NODES` nodes;
- integers too large for a float (a 400-digit position), which no field here can use;
- a key given twice in one mapping (PyYAML keeps the last silently: a run file's second ``seed:`` won, issue 57).

Example::

    yaml.load(text, Loader=BoundedLoader)   # as yaml.safe_load(text), within the budgets
"""

from __future__ import annotations

from typing import Any

import yaml

#: Deepest nesting of mappings and lists (a montage or dataset.yaml needs fewer than 10).
MAX_DEPTH = 64
#: Most nodes that the aliases of one document may stand for, together.
MAX_ALIAS_NODES = 10_000
#: Largest YAML file read (bytes): a montage of 256 channels is under 100 kB.
MAX_YAML_BYTES = 16 * 1024**2


def read_yaml_text(path: Any, what: str, error: type[Exception]) -> str:
    """Return the UTF-8 text of the YAML file ``path``; ``error(one line)`` when it is no small regular file.

    ``what`` names the file in the message ("montage file"). A FIFO, a device (``/dev/zero``)
    or a folder is refused before it is opened (opening a FIFO waits for a writer; a device
    never ends: issue 35 found ``register-montage`` hanging on both), and so is a file over
    :data:`MAX_YAML_BYTES`; at most that many bytes are read either way.
    """
    from pathlib import Path

    path = Path(path)
    try:
        if not path.exists():
            if path.is_symlink():  # exists() is False for a loop too (issue 46: "does not exist" misled)
                raise error(f"{what} '{path}' is a symlink that leads nowhere (a loop, or its target is gone); give "
                            "the YAML file itself")
            raise error(f"{what} '{path}' does not exist; check the path")
        if path.is_dir():
            raise error(f"{what} '{path}' is a folder; give a YAML file")
        if not path.is_file():
            raise error(f"{what} '{path}' is not a regular file (a device or a pipe); give a YAML file")
        size = path.stat().st_size
        if size > MAX_YAML_BYTES:
            raise error(f"{what} '{path}' has {size / 1024**2:,.0f} MiB, more than a YAML file here takes "
                        f"({MAX_YAML_BYTES // 1024**2} MiB at most); is it the right file?")
        with path.open("rb") as f:
            data = f.read(MAX_YAML_BYTES + 1)
    except OSError as exc:  # permissions, a symlink loop (ELOOP)
        raise error(f"cannot read {what} '{path}' ({exc.strerror or exc}); give a readable YAML file") from None
    if len(data) > MAX_YAML_BYTES:
        raise error(f"{what} '{path}' is larger than a YAML file here takes ({MAX_YAML_BYTES // 1024**2} MiB at most)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{what} '{path}' is not UTF-8 text (byte {data[exc.start]:02x} at offset {exc.start}); save it "
                    "as UTF-8") from None


class BoundedLoader(yaml.SafeLoader):
    """A SafeLoader that refuses deep nesting, alias bombs and integers beyond a float (module docstring)."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliased = 0
        self._sizes: dict[int, int] = {}  # id(node) -> nodes it stands for, aliases expanded

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: ANN401 - PyYAML's signature
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            node = super().compose_node(parent, index)
            self._aliased += self._sizes.get(id(node), 1)
            if self._aliased > MAX_ALIAS_NODES:
                raise yaml.composer.ComposerError(
                    None, None, f"its aliases (*name) expand to more than {MAX_ALIAS_NODES:,} nodes; write the "
                    "values out instead of repeating anchors", mark)
            return node
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"it is nested more than {MAX_DEPTH} levels deep", self.peek_event().start_mark)
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        # Children are composed first, so their sizes are known: one pass, however the aliases nest.
        children: list[Any] = []
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        self._sizes[id(node)] = 1 + sum(self._sizes.get(id(child), 1) for child in children)
        return node

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        value = super().construct_yaml_int(node)
        try:
            float(value)
        except OverflowError:
            raise yaml.constructor.ConstructorError(
                None, None, f"the number {node.value[:20]}... has {len(node.value)} digits, too large for any "
                "value here", node.start_mark) from None
        return value


    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, Any] = {}
            for key, _ in node.value:
                if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                    continue  # a merge (<<: *base) may repeat what it merges: that is what it is for
                if key.value in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {key.value[:40]!r} is given twice in one mapping (also at line "
                        f"{seen[key.value].line + 1}); keep one", key.start_mark)
                seen[key.value] = key.start_mark
        return super().construct_mapping(node, deep=deep)


BoundedLoader.add_constructor("tag:yaml.org,2002:int", BoundedLoader.construct_yaml_int)


def load_yaml(text: str) -> Any:  # noqa: ANN401 - whatever the document holds
    """Return the document in ``text`` as ``yaml.safe_load`` would, within the budgets (yaml.YAMLError beyond them)."""
    return yaml.load(text, Loader=BoundedLoader)  # noqa: S506 - a SafeLoader subclass


__all__ = ["MAX_ALIAS_NODES", "MAX_DEPTH", "MAX_YAML_BYTES", "BoundedLoader", "load_yaml", "read_yaml_text"]
