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
        return function

    return decorate


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
    base : name or path, optional
        Base checkpoint to use instead of the one recorded in the bundle (its SHA-256 must
        still match).
    renames : dict, optional
        Montage channel name → name in the recordings, where aliases do not cover it.
    device : str
        ``"auto"`` (default: CUDA where available), ``"cpu"`` or ``"cuda"``.
    precision : str
        ``"auto"`` (default: bf16 where the hardware runs it fast), ``"fp32"`` or ``"bf16"``.
    batch_size : int
        Windows per forward pass. The probabilities do not depend on it; 32 ran fastest on the
        2-core CPU it was measured on (docs/RESULTS.md, issue 20: the activations of a batch
        stay in the caches).
    mask_bad_channels : float in (0, 1), None or "bundle"
        Replace a channel by the mask token in the windows where its quality score is below
        this; None: never. ``"bundle"`` (default): the threshold the adapter was trained with
        (``training.mask_bad_channels`` in adapter.json; bundles without it: never), so a model
        is used the way it was trained. A window in which every channel is below it is left as
        it is (nothing would be left to predict from).
    distrust_bad_channels : float in (0, 1), None or "bundle"
        Expert kinds: a channel scoring below this in a window keeps its signal, but its expert
        mixture reads the nearest good channel's activity instead of its own. ``"bundle"``
        (default): the adapter's ``training.distrust_bad_channels``.
    mask_uncorrelated_channels : float in (0, 1), None or "bundle"
        Also mask a channel in the windows where its 1–40 Hz correlation with its neighbours
        (distance-weighted mean |r|, raw recording) is below this; None: never. ``"bundle"``
        (default): the adapter's ``training.mask_uncorrelated_channels``.
    h_freq : float, optional
        Band-pass top in Hz instead of the bundle's (which is the one the adapter was trained
        with). Without it, a recording sampled too slowly for the bundle's top gets one below
        its Nyquist frequency (a :class:`~passport_kit.errors.PassportWarning` says so); the
        band used is in each summary under ``preprocessing``.
    amplitude_check : bool
        Refuse (DataError) a recording whose channels are all flat, or whose 1–40 Hz amplitude
        is more than 30 times above or below that of the adapter's training data: the sign of
        a unit error in its header (:mod:`passport_kit.signals.amplitude`).
    prefetch : bool
        Read and preprocess the next recording in a worker thread while the model works on the
        current one (default). Each recording is read once either way.
    sfreq : float, optional
        Sampling rate (Hz) of recordings whose format does not store one (DREAMS text, CSV
        without timestamps); checked against the file's rate where it has one.
    units : str, optional
        The unit of the recordings' numbers where a header is wrong or unknown to MNE (``"uV"``
        for DREAMS ``excerpt3.edf``, whose header says ``UV``): EDF/BDF, text, CSV and arrays.
    scale : float, optional
        A factor for every sample after reading (any format).
    overwrite : bool
        Replace the output folders of recordings that ``out`` already holds predictions for
        (default: refuse them, before any work).
    resume : bool
        Keep the recordings ``out`` already holds finished predictions for (a run that was
        interrupted, or is repeated with more recordings) and predict only the others. Either
        way, temporary folders that a killed run left in ``out`` are removed first.
    labels : list of paths, optional
        A scorer's label file per recording, in the order of the recordings (one value per
        window, or per ``label_map``'s epoch): each summary gets ``scorer_agreement`` (Cohen's
        kappa, accuracy and the confusion table over the windows both scored) and the
        hypnogram shows the scorer's under the prediction
        (:mod:`passport_kit.inference.agreement`).
    label_map : str, optional
        How to read ``labels``: ``aasm``, ``rk`` (R&K numbers, one per 5 s, as DREAMS) or
        ``eesm``; default AASM stage names or the adapter's class names.
    edf_annotations : bool
        Also write ``<stem>_annotations.edf``: the predictions as an annotation-only EDF+ that
        opens next to the recording in EDFbrowser.
    plot_format : {"png", "svg", "pdf"}
        Format of the hypnogram plot (``<stem>_hypnogram.<plot_format>``); SVG and PDF are vector
        graphics, for a report or a paper.
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
    ``renames``, ``h_freq``, ``overwrite``, ``plot_format``, ``edf_annotations``, ``labels``,
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
    return zero_shot.predict_zero_shot(montage, recordings, out, prior=stager, checkpoint=checkpoint,
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
