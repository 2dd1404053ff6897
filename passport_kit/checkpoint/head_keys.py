"""Each key of a bundle's ``head`` block declared once: its JSON type, and its range or shape (issue 57).

:class:`HeadSettings` is the one declaration. The type of each key is its annotation, which
pydantic checks when ``adapter.json`` is read (no ``true`` read as 1, no number as a switch);
the range or shape, where the key has one, is a :class:`Rule` in the same annotation's metadata,
which :func:`~passport_kit.checkpoint.head_checks.check_head_numbers` applies before a model is
built from the block (:func:`head_rules` reads them). A new head key is one line here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_type_hints

from pydantic import BeforeValidator, ConfigDict, TypeAdapter
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict only from Python 3.12

from passport_kit.model.heads import HeadKind, Pooling, ProbePooling, Scaling


def _a_number(value: Any) -> Any:
    """Return ``value`` when it is a JSON number; a ValueError for true/false or a string (read as 1, 0 or a number
    in lax mode: ``temperature: true`` ran at temperature 1, issue 57)."""
    if isinstance(value, (bool, str)):
        raise ValueError(f"must be a number, not {value!r}")
    return value


def _a_boolean(value: Any) -> Any:
    """Return ``value`` when it is true or false; a ValueError for 0, 1 or a string."""
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false, not {value!r}")
    return value


#: A head setting's numbers and switches as JSON writes them: no bool read as a number, no number or string as a bool.
_Int = Annotated[int, BeforeValidator(_a_number)]
_Float = Annotated[float, BeforeValidator(_a_number)]
_Bool = Annotated[bool, BeforeValidator(_a_boolean)]


@dataclass(frozen=True)
class Rule:
    """The range or shape of one head key, beyond its type: ``low <= value <= high`` (either bound None: open), or
    ``check(value, head, n_classes)``, which raises :class:`~passport_kit.errors.CheckpointError` naming the key.

    ``why`` follows a range refusal (what a fitted value looks like); ``only_if``: the key that must be set
    (truthy) for the rule to apply (``prior`` only with a prior block).
    """

    low: float | None = None
    high: float | None = None
    why: str = ""
    check: Callable[[Any, Mapping[str, Any], int], None] | None = None
    only_if: str | None = None


def _smoothing(value: Any, head: Mapping[str, Any], n_classes: int) -> None:
    from passport_kit.checkpoint.head_checks import check_smoothing

    check_smoothing(value, n_classes)


def _prior(value: Any, head: Mapping[str, Any], n_classes: int) -> None:
    from passport_kit.checkpoint.head_checks import check_stager_choice

    check_stager_choice(value)


def _bands(value: Any, head: Mapping[str, Any], n_classes: int) -> None:
    from passport_kit.checkpoint.head_checks import check_bands

    check_bands(value)


#: The temperatures a bundle may carry: what ``fit_temperature`` can return (its bounds, 0.05-20), with room for
#: rounding. 1e-300 made every window certain; 1e300 would make every window a tie.
TEMPERATURE_RANGE = (0.01, 100.0)


class HeadSettings(TypedDict, total=False):
    """``adapter.json`` → ``head``: the keyword arguments of :class:`~passport_kit.model.Classifier` that rebuild the
    head (``Classifier.head_settings``), each with its type and, where it has one, its :class:`Rule`.

    Read, a block written before ``kind``, ``layer``, ``bands``, the prior block, ``temperature``,
    ``smoothing`` or ``scales_prior`` existed gains each with the value its absence meant
    (:data:`~passport_kit.checkpoint.files.MIGRATIONS`), so it rebuilds the head it was; written, those keys are
    left out again where they hold that value, so a bundle's JSON keeps the form it always had. Any
    other key absent stays absent. The order is the order both kinds write their keys in, so that a
    new bundle's JSON is what ``head_settings`` gave.
    """

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc] - Classifier takes no other keyword

    kind: HeadKind  # absent: "mlp" (bundles written before the probe head existed)
    n_classes: Annotated[_Int, Rule(low=1)]
    n_channels: Annotated[_Int | None, Rule(low=1)]  # probe
    pooling: Pooling  # mlp
    n_patches: Annotated[_Int | None, Rule(low=1)]  # mlp
    hidden: Annotated[_Int, Rule(low=1)]  # mlp
    dropout: Annotated[_Float, Rule(low=0.0, high=1.0)]  # mlp
    context: Annotated[_Int, Rule(low=0)]  # probe: windows either side
    layer: _Int | None  # probe: a backbone layer index (negative: from the last)
    pooling_probe: ProbePooling  # probe
    # probe: [low, high] in Hz per band (None: the spectral block before issue 24)
    bands: Annotated[list[list[float]] | None, Rule(check=_bands)]
    scaling: Scaling  # probe
    n_prior: Annotated[_Int, Rule(low=0)]  # probe: the sleep prior block's width (issue 33; 0: none)
    # probe: the prior's name and channels (passport_kit.sleep.priors.StagerChoice)
    prior: Annotated[dict[str, Any] | None, Rule(check=_prior, only_if="n_prior")]
    # probe: calibration temperature (1: none)
    temperature: Annotated[_Float, Rule(*TEMPERATURE_RANGE, why="a fitted temperature lies between 0.05 and 20")]
    # probe: the night HMM's transitions and emission prior (None: none)
    smoothing: Annotated[dict[str, Any] | None, Rule(check=_smoothing)]
    scales_prior: _Bool  # probe: per-recording scaling scales the prior block too (absent: True, before issue 55)


#: Validates a classifier's ``head_settings`` before a bundle records them.
HEAD_SETTINGS = TypeAdapter(HeadSettings)


def head_rules() -> dict[str, Rule]:
    """Return the :class:`Rule` of each head key that has one, in declaration order (read from :class:`HeadSettings`)."""
    hints = get_type_hints(HeadSettings, include_extras=True)
    return {key: rule for key, hint in hints.items()
            for rule in getattr(hint, "__metadata__", ()) if isinstance(rule, Rule)}


__all__ = ["HEAD_SETTINGS", "TEMPERATURE_RANGE", "HeadSettings", "Rule", "head_rules"]
