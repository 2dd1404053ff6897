"""The keyword form of prediction, ``passport_kit.predict`` (a notebook's call): each keyword goes to its option object.

:func:`passport_kit.inference.predict.predict` takes option objects, as the CLI builds them; this module builds
them from keywords for a notebook (``pk.predict("runs/ear", "night.edf", units="uV")``). The keywords are the
option models' fields, declared once there: :func:`keywords_of` writes them into each function's signature (with
their defaults), so ``help()`` and a notebook's completion list them, and a keyword no model has is refused
naming those it has.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from passport_kit.errors import ConfigError
from passport_kit.inference import predict as prediction
from passport_kit.inference import zero_shot
from passport_kit.inference.night_report import PredictionResult
from passport_kit.inference.options import ContactOptions, OutputOptions, ReadOptions, RunOptions, ScorerFiles
from passport_kit.sleep import stager_help

Function = TypeVar("Function", bound=Callable[..., Any])


def keywords_of(*models: type[BaseModel]) -> Callable[[Function], Function]:
    """Return a decorator that puts the fields of ``models`` in the place of a function's ``**options`` in its
    signature: one keyword-only parameter per field, with the field's default and annotation.

    The function still receives them as ``**options`` (each goes to its option object there); the
    signature is what ``inspect.signature``, ``help()`` and a notebook show, as the CLI shows its
    options generated from the same fields (``cli/options.py``: ``options_in_place_of``).
    """
    def decorate(function: Function) -> Function:
        signature = inspect.signature(function)
        given = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        fields = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=field.default,
                                    annotation=field.annotation)
                  for model in models for name, field in model.model_fields.items()]
        function.__signature__ = signature.replace(parameters=given + fields)  # type: ignore[attr-defined]
        function.__doc__ = (function.__doc__ or "").rstrip() + "\n\n" + options_section(*models)
        return function

    return decorate


def options_section(*models: type[BaseModel]) -> str:
    """Return the docstring section (numpydoc) of the fields of ``models``: each keyword, its default and its field's
    description, as the CLI's --help gives them."""
    import textwrap

    lines = ["    Options", "    -------"]
    for model in models:
        lines.append(f"    (``{model.__name__}``)")
        for name, field in model.model_fields.items():
            kind = field.annotation.__name__ if isinstance(field.annotation, type) else str(field.annotation)
            lines.append(f"    {name} : {kind.replace('typing.', '').replace('pathlib.', '')}, default {field.default!r}")
            lines += textwrap.wrap(str(field.description), width=112, initial_indent=" " * 8,
                                   subsequent_indent=" " * 8)
    return "\n".join(lines) + "\n"


@keywords_of(ReadOptions, OutputOptions, ContactOptions, RunOptions, ScorerFiles)
def predict(
    adapter: str | Path,
    recordings: Sequence[str | Path] | str | Path,
    out: str | Path | None = None,
    *,
    reading: Any = None,
    output: Any = None,
    contacts: Any = None,
    run: Any = None,
    scorer: Any = None,
    progress: Callable[[str], None] | None = None,
    **options: Any,
) -> list[PredictionResult]:
    """Return one result per recording after writing its predictions and reports.

    The keyword form of :func:`passport_kit.inference.predict.predict` (see its module for the
    files written): each keyword below is a field of one of its option objects (``ReadOptions``,
    ``OutputOptions``, ``ContactOptions``, ``RunOptions``, ``ScorerFiles``) and is put there, as
    the CLI's options are; ``reading``, ``output``, ``contacts``, ``run`` and ``scorer`` take those
    objects whole (keywords given too update them). Example::

        pk.predict("runs/ear", "night.edf", "out", units="uV", plot_format="svg")

    The options (the keywords after ``progress``) are listed under Options below, generated from
    their fields' descriptions: the same text as ``passport-kit predict --help``.

    Parameters
    ----------
    adapter : path
        Adapter bundle folder written by ``adapt``.
    recordings : path, recording in memory, or a list of them
        Recording files, folders searched for them, or recordings in memory: an ``mne.io.Raw``
        or a tuple ``(array (C, T), sfreq, ch_names)`` (in ``units``, volts unless given;
        :func:`~passport_kit.signals.readers.raw_from_memory`). A Raw's output folder is named
        after its file, a tuple's ``recording-<k>``.
    out : path, optional
        Output folder. Without it, a new temporary folder (``passport-kit-predictions-*`` in the
        system's temporary directory; each result's ``files`` name it): a notebook call writes
        nothing into the current folder unasked. The CLI's ``--out`` defaults to ``predictions``.
    progress : callable, optional
        Called with each recording's path before it is predicted.
    """
    given = {"contacts": contacts, "run": run, "output": output, "reading": reading, "scorer": scorer}
    # Built in the order predict checked its options before: the contacts, the batch, the plot format.
    kinds = {"contacts": ContactOptions, "run": RunOptions, "output": OutputOptions, "reading": ReadOptions,
             "scorer": ScorerFiles}
    objects = _option_objects("predict", kinds, given, options)
    return prediction.predict(adapter, recordings, out, progress=progress, **objects)


@keywords_of(ReadOptions, OutputOptions, ScorerFiles)
def predict_zero_shot(
    stager: str,
    recordings: Sequence[str | Path] | str | Path,
    out: str | Path | None = None,
    *,
    montage: str | Path | Any = None,
    checkpoint: str | Path | None = None,
    reading: Any = None,
    output: Any = None,
    scorer: Any = None,
    progress: Callable[[str], None] | None = None,
    **options: Any,
) -> list[PredictionResult]:
    """Return one result per recording staged by a pretrained sleep stager alone: no adapter, no labels.

    The keyword form of :func:`passport_kit.inference.zero_shot.predict_zero_shot`, in the order of
    :func:`predict`: what stages (``stager``: {stagers}; several joined by ``+`` are averaged;
    where :func:`predict` takes the adapter), the recordings, the output folder; ``montage`` (a
    registered name, a montage YAML or a Montage) says what the recordings' channels are. The
    reading and output keywords are :func:`predict`'s: ``sfreq``, ``units``, ``scale``,
    ``renames``, ``h_freq``, ``overwrite``, ``resume``, ``plot_format``, ``edf_annotations``, ``labels``,
    ``label_map`` (the adapter's checks, contacts and model options do not apply). Example::

        pk.predict_zero_shot("yasa", "excerpt1.txt", "out", montage="dreams-c3", sfreq=100)

    Each summary names the stager and the channel it staged (``zero_shot``).
    """
    if montage is None:
        raise ConfigError("predict_zero_shot() needs montage=: the registered montage (or montage YAML) of the "
                          "recordings, e.g. predict_zero_shot('yasa', 'night.edf', montage='my-ear')")
    given = {"output": output, "reading": reading, "scorer": scorer}
    kinds = {"output": OutputOptions, "reading": ReadOptions, "scorer": ScorerFiles}
    objects = _option_objects("predict_zero_shot", kinds, given, options)
    return zero_shot.predict_zero_shot(montage, recordings, out, stager=stager, checkpoint=checkpoint,
                                       progress=progress, **objects)


#: The stagers as the registry lists them (a new stager is one file of :mod:`passport_kit.sleep.stagers`).
predict_zero_shot.__doc__ = (predict_zero_shot.__doc__ or "").replace("{stagers}", stager_help(quote="``"))


def _option_objects(function: str, kinds: dict[str, Any], given: dict[str, Any],
                    options: dict[str, Any]) -> dict[str, Any]:
    """Return ``{name: option object}`` of ``kinds`` built from the objects ``given`` whole, updated by the keyword
    ``options`` each names a field of; ConfigError for a keyword none of them has."""
    known = [f for kind in kinds.values() for f in kind.model_fields]
    unknown = sorted(set(options) - set(known))
    if unknown:
        close = difflib.get_close_matches(unknown[0], known, n=1)
        raise ConfigError(f"{function}() takes no option {', '.join(map(repr, unknown))}"
                          f"{f' (did you mean {close[0]!r}?)' if close else ''}; its options are "
                          f"{', '.join(sorted(known))} (help(passport_kit.{function}) describes each)")
    return {name: kind(**{**(given[name].model_dump() if given[name] is not None else {}),
                          **{k: v for k, v in options.items() if k in kind.model_fields}})
            for name, kind in kinds.items()}


__all__ = ["predict", "predict_zero_shot"]
