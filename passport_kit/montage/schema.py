"""The montage schema: an ordered, named list of EEG channels with head-frame positions.

A montage file (YAML) gives positions in the ``units`` it declares (``m``, ``cm`` or ``mm``);
on load they are converted to metres, and the :class:`Montage` object always holds metres in
the MNE head frame (+x toward RPA, +y toward the nasion, +z up, origin between the ears).

Example::

    >>> from passport_kit.montage import Montage
    >>> m = Montage.from_dict({
    ...     "name": "my-ear", "units": "mm", "reference": "ERB",
    ...     "channels": [{"name": "ELA", "position": [-85.5, -8.0, 12.0]}],
    ... })
    >>> m.positions.round(4).tolist()
    [[-0.0855, -0.008, 0.012]]

Every problem a user can put into a montage raises :class:`~passport_kit.errors.MontageError`
with one line that says what is wrong and how to fix it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from passport_kit.bounded_yaml import BoundedLoader
from passport_kit.errors import MontageError, warn, yaml_problem

if TYPE_CHECKING:  # pragma: no cover - only for type hints
    import mne

Kind = Literal["eeg", "eog", "emg", "ecg", "misc"]
KINDS: tuple[str, ...] = ("eeg", "eog", "emg", "ecg", "misc")

#: Units a montage file may declare, as units per metre (dividing is exact for 0.1 mm steps).
UNITS_PER_METRE: dict[str, int] = {"m": 1, "cm": 100, "mm": 1000}

#: The only frame a stored montage may use; the model reads positions in this frame.
HEAD_FRAME = "head"
# Frames MNE knows but that need a transform first (named so the message can say so).
_OTHER_MNE_FRAMES = ("mri", "unknown", "mni_tal", "fs_tal", "ras", "meg", "device")

#: A montage name is a registry key: lowercase letters, digits and '-'.
NAME_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")

#: No electrode on a human head lies further than this from the head-frame origin (metres).
MAX_RADIUS_M = 0.3
#: ... nor closer than this (metres); smaller magnitudes mean the units are too large.
MIN_RADIUS_M = 0.02

#: Rounding of positions in the canonical JSON (metres): 0.1 mm.
HASH_RESOLUTION_M = 1e-4

Position = tuple[float, float, float]


class Channel(BaseModel):
    """One channel: a name, its head-frame position in metres, and how recordings name it.

    A bipolar derivation (``A-B``) keeps both electrodes: ``position`` is the active electrode
    and ``reference_position`` the reference one. Its position is never the midpoint, which
    for a cross-head pair would land near the centre of the head.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    position: Position
    reference_position: Position | None = None
    aliases: tuple[str, ...] = ()
    kind: Kind = "eeg"

    @property
    def is_bipolar(self) -> bool:
        """Return True when the channel is a derivation with its own reference electrode."""
        return self.reference_position is not None


class Montage(BaseModel):
    """Return-value object of the registry: a named, ordered channel layout in metres.

    Build one with :meth:`from_yaml` or :meth:`from_dict` (which convert units and give
    one-line :class:`~passport_kit.errors.MontageError` messages), or with
    :meth:`from_dig_montage`. Constructing it directly runs the same checks.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    coordinate_frame: str = HEAD_FRAME
    reference: str = "unspecified"
    channels: tuple[Channel, ...]
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> Montage:
        # MontageError is not a ValueError, so pydantic lets it through unchanged.
        _check_montage(self)
        return self

    # ------------------------------------------------------------------ views
    @property
    def ch_names(self) -> list[str]:
        """Return the channel names in montage order."""
        return [ch.name for ch in self.channels]

    @property
    def n_channels(self) -> int:
        """Return the number of channels C."""
        return len(self.channels)

    @property
    def positions(self) -> np.ndarray:
        """Return the channel positions, shape ``(C, 3)`` float64, metres, head frame."""
        return np.array([ch.position for ch in self.channels], dtype=np.float64).reshape(-1, 3)

    @property
    def reference_positions(self) -> np.ndarray:
        """Return reference-electrode positions, shape ``(C, 3)`` float64; NaN rows for monopolar."""
        rows = [ch.reference_position if ch.reference_position is not None else (math.nan,) * 3
                for ch in self.channels]
        return np.array(rows, dtype=np.float64).reshape(-1, 3)

    @property
    def kinds(self) -> list[str]:
        """Return the channel kinds (``eeg``, ``eog``, ...) in montage order."""
        return [ch.kind for ch in self.channels]

    def channel(self, name: str) -> Channel:
        """Return the channel called ``name`` (exact name first, then any alias, case-insensitive)."""
        for ch in self.channels:
            if ch.name == name:
                return ch
        folded = name.casefold()
        for ch in self.channels:
            if folded in {n.casefold() for n in (ch.name, *ch.aliases)}:
                return ch
        raise MontageError(
            f"montage '{self.name}' has no channel '{name}'; its channels are: {', '.join(self.ch_names)}"
        )

    # --------------------------------------------------------------- identity
    def canonical_json(self) -> str:
        """Return the canonical JSON that the content hash is computed from.

        It holds only what defines the layout for a model: the ordered channel names, their
        positions and reference positions in metres rounded to 0.1 mm, and the frame.
        Description, aliases, kinds and metadata do not change the hash.
        """
        doc = {
            "coordinate_frame": self.coordinate_frame,
            "channels": [
                {
                    "name": ch.name,
                    "position": _rounded(ch.position),
                    "reference_position": None if ch.reference_position is None
                    else _rounded(ch.reference_position),
                }
                for ch in self.channels
            ],
        }
        return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    @property
    def content_hash(self) -> str:
        """Return the SHA-256 hex digest of :meth:`canonical_json`."""
        return hashlib.sha256(self.canonical_json().encode("ascii")).hexdigest()

    # ------------------------------------------------------------ conversions
    @classmethod
    def from_dict(cls, data: Any, *, source: str | None = None) -> Montage:
        """Return a montage parsed from a YAML-like mapping; positions are in ``data['units']``.

        ``source`` names where the mapping came from (a file path) in error messages.
        """
        return _parse(data, source=source)

    @classmethod
    def from_yaml(cls, path: str | Path) -> Montage:
        """Return the montage described by the YAML file at ``path``."""
        from passport_kit.bounded_yaml import read_yaml_text

        path = Path(path)
        text = read_yaml_text(path, "montage file", MontageError)  # never a FIFO or /dev/zero (issue 35)
        try:
            data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
        except yaml.YAMLError as exc:
            where, problem = yaml_problem(exc, "syntax error")
            raise MontageError(
                f"montage file '{path}' is not valid YAML{where} ({problem}); fix the YAML syntax"
            ) from None
        return _parse(data, source=str(path))

    def to_dict(self, *, units: str = "m") -> dict[str, Any]:
        """Return a plain mapping in the YAML file format, positions in ``units``."""
        if units not in UNITS_PER_METRE:
            raise MontageError(f"units '{units}' is not supported; use one of: {', '.join(UNITS_PER_METRE)}")
        per_m = UNITS_PER_METRE[units]

        def convert(p: Position) -> list[float]:
            # Round away float noise of the unit conversion (far below 1 nm).
            return [float(round(v * per_m, 9)) + 0.0 for v in p]

        channels = []
        for ch in self.channels:
            entry: dict[str, Any] = {"name": ch.name, "position": convert(ch.position)}
            if ch.reference_position is not None:
                entry["reference_position"] = convert(ch.reference_position)
            if ch.aliases:
                entry["aliases"] = list(ch.aliases)
            if ch.kind != "eeg":
                entry["kind"] = ch.kind
            channels.append(entry)
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "coordinate_frame": self.coordinate_frame,
            "units": units,
            "reference": self.reference,
            "channels": channels,
        }
        if self.metadata:
            out["metadata"] = self.metadata
        return out

    def to_yaml_str(self, *, units: str = "m") -> str:
        """Return the montage as YAML text (the file format of ``montages/*.yaml``)."""
        return yaml.dump(self.to_dict(units=units), Dumper=_YamlDumper, sort_keys=False,
                         allow_unicode=True, width=100)

    def to_yaml(self, path: str | Path, *, units: str = "m") -> Path:
        """Write the montage as YAML to ``path`` atomically and return the path."""
        from passport_kit.atomic_io import atomic_write_text
        from passport_kit.montage.files import user_writable

        with user_writable(Path(path), "the montage file", "choose a writable path"):
            return atomic_write_text(Path(path), self.to_yaml_str(units=units))

    def to_dig_montage(self, *, fiducials: bool = True) -> mne.channels.DigMontage:
        """Return an ``mne.channels.DigMontage`` in the head frame (positions in metres).

        A DigMontage holds one position per channel, so bipolar channels keep their active
        electrode there; ``reference_positions`` has the reference electrodes. With
        ``fiducials=True`` the template's head-frame nasion/LPA/RPA are added so that
        ``raw.set_montage`` keeps the positions exactly.
        """
        from passport_kit.montage.mne_bridge import montage_to_dig

        return montage_to_dig(self, fiducials=fiducials)

    @classmethod
    def from_dig_montage(
        cls,
        dig: mne.channels.DigMontage,
        *,
        name: str,
        description: str = "",
        reference: str = "unspecified",
        ch_names: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Montage:
        """Return a montage from an MNE DigMontage, transformed to the head frame.

        ``ch_names`` picks and orders channels (default: all, in the DigMontage's order).
        """
        from passport_kit.montage.mne_bridge import dig_to_montage

        return dig_to_montage(dig, name=name, description=description, reference=reference,
                              ch_names=ch_names, metadata=metadata)

    def subset(self, names: list[str] | tuple[str, ...], *, name: str | None = None) -> Montage:
        """Return a montage with only ``names`` (names or aliases), in the order given."""
        if not names:
            raise MontageError(f"subset of montage '{self.name}' is empty; give at least one channel")
        picked = [self.channel(n) for n in names]
        return Montage(name=name or self.name, description=self.description,
                       coordinate_frame=self.coordinate_frame, reference=self.reference,
                       channels=tuple(picked), metadata=dict(self.metadata))

    def plot(self, out: str | Path | None = None, *, show_names: bool = True):  # noqa: ANN201
        """Return a matplotlib Figure (2-D head view + 3-D view); also saved to ``out`` if given."""
        from passport_kit.montage.plot import plot_montage

        return plot_montage(self, out, show_names=show_names)

    def __hash__(self) -> int:
        # pydantic's frozen hash would fail on the metadata dict; equal montages share name and layout.
        return hash((self.name, self.content_hash))

    def __repr__(self) -> str:
        return f"<Montage '{self.name}' | {self.n_channels} channels | {self.content_hash[:12]}>"

    __str__ = __repr__


# ---------------------------------------------------------------- internals
class _StrictLoader(BoundedLoader):
    """Safe YAML loader that refuses a key given twice (plain YAML silently keeps the last one), within budgets."""


def _mapping_without_duplicates(loader: BoundedLoader, node: yaml.MappingNode) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            continue  # construct_mapping reports unhashable keys itself
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key '{key}' appears twice in one mapping", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)


class _YamlDumper(yaml.SafeDumper):
    """Safe YAML dumper that writes number lists (positions) on one line, everything else as blocks."""


def _represent_list(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    flow = all(isinstance(v, (int, float, str)) for v in data) and len(data) <= 8
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_YamlDumper.add_representer(list, _represent_list)
_YamlDumper.add_representer(tuple, _represent_list)


def _rounded(p: Position) -> list[float]:
    # Integer tenths of a millimetre, divided back to metres: division gives the shortest
    # decimal repr (0.1146, never 0.11460000000000001), so other languages can reproduce the
    # JSON; +0.0 turns -0.0 into 0.0.
    steps = round(1 / HASH_RESOLUTION_M)
    return [round(v * steps) / steps + 0.0 for v in p]


#: Longest channel name or alias (EDF labels have 16 characters; BrainVision and FIF names are short too).
MAX_LABEL_CHARS = 64


def _check_label(montage: str, label: str) -> None:
    """Raise MontageError for a channel name or alias no recording can carry: too long, or with invisible characters.

    Issue 35: a 10,000-character name and one with a zero-width space were accepted; the first
    floods every message that lists channels, the second never matches the name in a file.
    """
    if len(label) > MAX_LABEL_CHARS:
        raise MontageError(f"montage '{montage}': channel name or alias '{label[:20]}...' has {len(label):,} "
                           f"characters; give at most {MAX_LABEL_CHARS} (as the recordings name it)")
    hidden = next((c for c in label if not c.isprintable() or unicodedata.category(c) == "Cf"), None)
    if hidden is not None:
        raise MontageError(f"montage '{montage}': channel name or alias {label!r} holds the invisible character "
                           f"U+{ord(hidden):04X} ({unicodedata.name(hidden, 'control')}); retype the name")


def _check_montage(m: Montage) -> None:
    """Raise MontageError for the first structural problem of an already-typed montage."""
    if not NAME_PATTERN.match(m.name):
        raise MontageError(
            f"montage name '{m.name}' is invalid; use lowercase letters, digits and single '-' "
            f"(for example '{_suggest_name(m.name)}')"
        )
    if m.coordinate_frame != HEAD_FRAME:
        raise MontageError(_frame_message(m.name, m.coordinate_frame))
    if not m.channels:
        raise MontageError(f"montage '{m.name}' has no channels; list at least one under `channels:`")
    seen: dict[str, tuple[str, str, str, int]] = {}  # casefolded label -> (label, role, channel, index)
    for index, ch in enumerate(m.channels):
        if not ch.name or ch.name != ch.name.strip():
            raise MontageError(f"montage '{m.name}': channel name '{ch.name}' is empty or has "
                               "surrounding spaces; give a plain name")
        own: set[str] = set()
        for label in (ch.name, *ch.aliases):
            if not label.strip():
                raise MontageError(f"montage '{m.name}': channel '{ch.name}' has an empty alias; remove it")
            _check_label(m.name, label)
            if label in own:
                raise MontageError(f"montage '{m.name}': channel '{ch.name}' lists '{label}' twice; "
                                   "remove the duplicate alias")
            own.add(label)
            key = label.casefold()
            role = "name" if label == ch.name else "alias"
            # Names are matched case-insensitively, so a label may belong to one channel only.
            if key in seen and seen[key][3] != index:
                prev_label, prev_role, prev_ch, _ = seen[key]
                if role == prev_role == "name":
                    raise MontageError(
                        f"montage '{m.name}': channel name '{label}' appears twice (names are "
                        "case-insensitive); give every channel its own name")
                raise MontageError(
                    f"montage '{m.name}': {role} '{label}' of channel '{ch.name}' clashes with "
                    f"{prev_role} '{prev_label}' of channel '{prev_ch}' (names and aliases are "
                    "case-insensitive); rename one or drop the alias")
            seen[key] = (label, role, ch.name, index)
        for field, pos in (("position", ch.position), ("reference_position", ch.reference_position)):
            if pos is not None:
                _check_position(m.name, ch.name, field, pos, units="m")
        if ch.reference_position is not None and np.allclose(ch.position, ch.reference_position):
            raise MontageError(f"montage '{m.name}': channel '{ch.name}' has reference_position equal "
                               "to its position; give the reference electrode's own position or drop it")
    _warn_shared_positions(m)


def _warn_shared_positions(m: Montage) -> None:
    """Warn when two channels record at one place (same position and reference): the model cannot tell them apart."""
    places: dict[tuple, str] = {}
    for ch in m.channels:
        ref = None if ch.reference_position is None else tuple(_rounded(ch.reference_position))
        place = (tuple(_rounded(ch.position)), ref)
        if place in places:
            warn(f"montage '{m.name}': channels '{places[place]}' and '{ch.name}' have the same position"
                 f"{' and reference' if ref else ''}; the model sees them as one place - check the positions "
                 "(a copied line?)")
            return
        places[place] = ch.name


def _check_position(montage: str, channel: str, field: str, metres: Position, *, units: str) -> None:
    """Raise MontageError when a position (already in metres) is not finite or implausible."""
    values = np.asarray(metres, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise MontageError(f"montage '{montage}': channel '{channel}' {field} contains NaN or "
                           "infinity; give three finite numbers")
    norm = math.hypot(*values)  # no overflow (and no numpy RuntimeWarning) for a position of 1e308
    if norm == 0.0:
        raise MontageError(f"montage '{montage}': channel '{channel}' {field} is (0, 0, 0), which means "
                           "'unknown' in MNE; give the electrode's real position")
    if MIN_RADIUS_M <= norm <= MAX_RADIUS_M:
        return
    in_file = norm * UNITS_PER_METRE[units]
    fitting = [u for u, k in UNITS_PER_METRE.items() if MIN_RADIUS_M <= in_file / k <= MAX_RADIUS_M]
    if fitting:
        hint = (f"the numbers look like {_UNIT_WORDS[fitting[0]]}: set `units: {fitting[0]}` "
                f"(or --units {fitting[0]} when importing)")
    else:
        hint = "check the numbers and the declared units (m, cm or mm)"
    side = "more" if norm > MAX_RADIUS_M else "less"
    bound = MAX_RADIUS_M if norm > MAX_RADIUS_M else MIN_RADIUS_M
    raise MontageError(
        f"montage '{montage}': channel '{channel}' {field} is {norm:.4g} m from the head centre "
        f"when read as {units} ({side} than {bound} m, impossible for an electrode); {hint}"
    )


_UNIT_WORDS = {"m": "metres", "cm": "centimetres", "mm": "millimetres"}


def _frame_message(montage: str, frame: str) -> str:
    if frame in _OTHER_MNE_FRAMES:
        return (f"montage '{montage}': coordinate_frame '{frame}' is not supported; convert the "
                "positions to the MNE head frame (`passport-kit montages import` does this for MNE "
                "and BIDS files) and set `coordinate_frame: head`")
    return (f"montage '{montage}': unknown coordinate_frame '{frame}'; the only supported frame "
            "is 'head' (MNE head frame: +x to RPA, +y to nasion, +z up)")


def _suggest_name(name: str) -> str:
    cleaned = re.sub(r"[^a-z0-9]+", "-", str(name).lower()).strip("-")
    return cleaned or "my-montage"


# The file format: what a YAML may contain, before unit conversion.
class _ChannelSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Any = None
    position: Any = None
    reference_position: Any = None
    aliases: Any = ()
    kind: Any = "eeg"


class _MontageSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Any = None
    description: Any = ""
    coordinate_frame: Any = HEAD_FRAME
    units: Any = None
    reference: Any = "unspecified"
    channels: Any = None
    metadata: Any = None


_Spec = TypeVar("_Spec", _MontageSpec, _ChannelSpec)


def _label(value: Any) -> str | None:
    """Return a YAML scalar as a label (numbers such as cEEGrid '1' become text); None if not one."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (str, int)):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return None


def _validate_spec(model: type[_Spec], data: dict[str, Any], where: str) -> _Spec:
    """Return ``data`` as a file-format model; unknown keys (typos) become one-line MontageErrors."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        # Every field is Any, so the only possible failure is an unknown key.
        bad = [str(e["loc"][0]) for e in exc.errors() if e["type"] == "extra_forbidden"]
        raise MontageError(f"{where}: unknown field(s) {', '.join(repr(b) for b in bad)}; allowed "
                           f"fields are {', '.join(model.model_fields)}") from None


def _parse(data: Any, *, source: str | None) -> Montage:
    """Return a validated Montage from a file mapping, converting positions to metres."""
    where = f"montage file '{source}'" if source else "montage"
    if not isinstance(data, dict):
        got = "empty" if data is None else f"a {type(data).__name__}"
        raise MontageError(f"{where} is {got}, not a mapping; start it with `name:`, `units:` and "
                           "`channels:` (see docs/montages.md)")
    spec = _validate_spec(_MontageSpec, data, where)

    name = _label(spec.name)
    if name is None or not name.strip():
        raise MontageError(f"{where} has no `name:`; add one (lowercase letters, digits, '-')")
    label = f"montage '{name}'"
    if not NAME_PATTERN.match(name):
        raise MontageError(f"{label}: name is invalid; use lowercase letters, digits and single '-' "
                           f"(for example '{_suggest_name(name)}')")

    units = spec.units
    if units is None:
        raise MontageError(f"{label} has no `units:`; add `units: m`, `units: cm` or `units: mm` "
                           "for the positions in the file")
    if not isinstance(units, str) or units.strip().lower() not in UNITS_PER_METRE:
        raise MontageError(f"{label}: unknown units '{units}'; use one of: {', '.join(UNITS_PER_METRE)}")
    units = units.strip().lower()
    per_m = UNITS_PER_METRE[units]

    frame = spec.coordinate_frame
    if not isinstance(frame, str) or frame.strip().lower() != HEAD_FRAME:
        raise MontageError(_frame_message(name, str(frame)))

    for field in ("description", "reference"):
        value = getattr(spec, field)
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise MontageError(f"{label}: `{field}` must be text; got {type(value).__name__}")
    metadata = spec.metadata if spec.metadata is not None else {}
    if not isinstance(metadata, dict):
        raise MontageError(f"{label}: `metadata` must be a mapping of key: value; got "
                           f"{type(metadata).__name__}")

    raw_channels = spec.channels
    if isinstance(raw_channels, dict):
        # MNE's ch_pos style, `channels: {ELA: [x, y, z], ...}`, in file order.
        raw_channels = [{"name": k, **v} if isinstance(v, dict) else {"name": k, "position": v}
                        for k, v in raw_channels.items()]
    if raw_channels is None or raw_channels == []:
        raise MontageError(f"{label} has no channels; list at least one under `channels:`")
    if not isinstance(raw_channels, list):
        raise MontageError(f"{label}: `channels` must be a list of entries with `name:` and `position:` "
                           "(or a mapping name: [x, y, z])")

    channels = [_parse_channel(name, i, raw, per_m, units) for i, raw in enumerate(raw_channels)]
    return Montage(
        name=name,
        description=str(spec.description).strip(),
        coordinate_frame=HEAD_FRAME,
        reference=str(spec.reference).strip(),
        channels=tuple(channels),
        metadata=metadata,
    )


def _parse_channel(montage: str, index: int, raw: Any, per_m: int, units: str) -> Channel:
    """Return one Channel from its file entry (positions converted to metres)."""
    label = f"montage '{montage}'"
    at = f"{label}: channel #{index + 1}"
    if not isinstance(raw, dict):
        raise MontageError(f"{at} is not a mapping; write it as `- name: X` with `position: [x, y, z]`")
    spec = _validate_spec(_ChannelSpec, raw, at)
    name = _label(spec.name)
    if name is None or not name.strip():
        raise MontageError(f"{at} has no `name:`; give every channel a name")
    name = name.strip()
    at = f"{label}: channel '{name}'"

    if spec.position is None:
        raise MontageError(f"{at} has no `position:`; give `position: [x, y, z]` in {units}")
    position = _parse_xyz(at, "position", spec.position, units)
    reference = None
    if spec.reference_position is not None:
        reference = _parse_xyz(at, "reference_position", spec.reference_position, units)

    aliases_raw = spec.aliases if spec.aliases is not None else ()
    if isinstance(aliases_raw, (str, int)):
        aliases_raw = [aliases_raw]
    if not isinstance(aliases_raw, (list, tuple)):
        raise MontageError(f"{at}: `aliases` must be a list of names")
    aliases = []
    for a in aliases_raw:
        text = _label(a)
        if text is None:
            raise MontageError(f"{at}: alias {a!r} is not a name; aliases must be text")
        aliases.append(text.strip())

    kind = spec.kind
    if not isinstance(kind, str) or kind.strip().lower() not in KINDS:
        raise MontageError(f"{at}: unknown kind '{kind}'; use one of: {', '.join(KINDS)}")

    metres = tuple(v / per_m for v in position)
    ref_metres = None if reference is None else tuple(v / per_m for v in reference)
    for field, p in (("position", metres), ("reference_position", ref_metres)):
        if p is not None:
            _check_position(montage, name, field, p, units=units)  # type: ignore[arg-type]
    return Channel(name=name, position=metres, reference_position=ref_metres,  # type: ignore[arg-type]
                   aliases=tuple(aliases), kind=kind.strip().lower())  # type: ignore[arg-type]


def _reads_as_float(text: str) -> bool:
    """Return whether ``text`` is a number Python reads (YAML may still have read it as text)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _parse_xyz(at: str, field: str, value: Any, units: str) -> Position:
    """Return three floats from a YAML position, or raise a one-line MontageError."""
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise MontageError(f"{at}: `{field}` must be three numbers [x, y, z] in {units}; got {value!r}")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            # YAML reads '.nan' as a float, but 'nan', 'n/a' or '12mm' as text.
            if isinstance(v, str) and _reads_as_float(v):  # YAML 1.1 reads 1e3 (no '.') as text
                number = float(v)
                if not math.isfinite(number):
                    raise MontageError(f"{at}: `{field}` value {v!r} is too large for a position; give plain "
                                       f"numbers in {units}")
                raise MontageError(f"{at}: `{field}` value {v!r} is read as text by YAML; write it as {number:e} "
                                   f"(a decimal point and a signed exponent) in {units}")
            raise MontageError(f"{at}: `{field}` value {v!r} is not a number; give plain numbers "
                               f"in {units} (units are set once with `units:`)")
        if not math.isfinite(float(v)):
            raise MontageError(f"{at}: `{field}` contains NaN or infinity; give three finite numbers")
        out.append(float(v))
    return (out[0], out[1], out[2])
