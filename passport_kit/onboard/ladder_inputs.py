"""What the ladder reads for a dataset's rows (:mod:`passport_kit.onboard.ladder`): the task's contexts, scalings and
poolings, and for sleep staging a pretrained stager's log-probabilities (:mod:`passport_kit.sleep`).

:class:`LadderData` is what the ladder reads and :func:`ladder_data` what the probe recipes hand it (the contexts and
poolings it tries, :data:`CONTEXTS` and :data:`POOLINGS`, with it); :func:`stager_options` scores every window of a
WindowSet with each stager on each channel choice, night by night (:func:`spec_prior` keeps each with the WindowSet:
evaluate's folds share it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from passport_kit.model.heads import PROBE_POOLINGS, SCALINGS

#: Temporal context (windows on each side) the ladder tries for sleep staging: ±2 epochs (2.5 min) or ±7
#: (7.5 min, YASA's longer rolling window); 0 is the rung below.
CONTEXTS = (0, 2, 7)
#: Pooling of the backbone features tried: those a ``ProbeHead`` knows (mean; mean and spread over
#: the window's patches); the first is the fallback.
POOLINGS = PROBE_POOLINGS


@dataclass
class LadderData:
    """What the ladder reads, for its rows in time order within each recording.

    ``plain``: per pooling, the head's inputs ``[pooled backbone (D or 2 D), band power (S)]`` ``(N, F)``;
    ``prior``: the sleep prior's log-probabilities ``(N, 5)`` (None: no prior); ``prior_stages``: the
    prior's stage index of every class (None: the classes are not the five stages, no zero-shot).
    """

    plain: dict[str, np.ndarray]
    y: np.ndarray
    groups: np.ndarray
    recordings: np.ndarray
    classes: list[str]
    d_model: int
    sleep: bool = False
    contexts: tuple[int, ...] = (0,)
    scalings: tuple[str, ...] = ("none",)
    poolings: tuple[str, ...] = POOLINGS
    prior: np.ndarray | None = None
    stager_choice: dict[str, Any] | None = None
    prior_stages: list[int] | None = None
    backbone: bool = True
    #: The context was given (``--context K``): the read-out has it, the context rung records it as the user's.
    fixed_context: bool = False
    #: Why the prior is absent (recorded as the prior rungs' reason), when it is.
    prior_reason: str = "not a sleep-staging task"
    #: The stager's options (channel choices; each installed stager and their average): ``(spec, (N, 5)
    #: log-probabilities)`` each, the positions' best guess first. Empty: ``prior`` / ``stager_choice`` alone.
    stager_options: list[tuple[dict[str, Any], np.ndarray]] = field(default_factory=list)
    #: Sleep staging starts from the stager where one applies (issue 43); False: the textbook-first order (ablation).
    stager_first: bool = True

    def __post_init__(self) -> None:
        if not self.stager_options and self.prior is not None:
            self.stager_options = [(dict(self.stager_choice or {}), self.prior)]


def ladder_data(cfg: Any, windows: Any, plain: dict[str, np.ndarray], rows: np.ndarray, *,
                head: Any) -> LadderData:
    """Return what the ladder reads for ``rows`` of ``windows``: the task's contexts, scalings and poolings, and for
    sleep staging the prior's log-probabilities (:func:`dataset_prior`)."""
    sleep = windows.info.get("task") == "sleep-staging"
    contexts = (cfg.context,) if cfg.context is not None else CONTEXTS if sleep else (0,)
    options, reason = (stager_options(windows, cfg.prior, getattr(cfg, "prior_channels", None)) if sleep
                       else ([], "not a sleep-staging task"))
    prior, spec = (options[0][1], options[0][0]) if options else (None, None)
    from passport_kit.sleep import classes_to_stages

    return LadderData(
        plain=plain, y=np.asarray(windows.y)[rows], groups=np.asarray(windows.subject)[rows],
        recordings=np.asarray(windows.recording)[rows], classes=list(windows.classes), d_model=head.d_model,
        sleep=sleep, contexts=contexts, fixed_context=cfg.context is not None,
        scalings=SCALINGS if sleep and labels_vary_within_recordings(windows, rows) else ("none",),
        poolings=POOLINGS if cfg.probe_pooling == "auto" else (cfg.probe_pooling,),
        prior=None if prior is None else prior[rows], stager_choice=spec,
        prior_stages=classes_to_stages(list(windows.classes)), prior_reason=reason,
        stager_options=[(s, p[rows]) for s, p in options])


def stager_names(name: str | None) -> list[str]:
    """Return the stagers ``--prior`` asks for: 'auto' the registered ones that declare a place in it and can run
    here (:func:`passport_kit.sleep.priors.auto_stagers`: YASA built in, GSSC when installed), 'none' none, else the
    one named (or several joined by '+', averaged)."""
    from passport_kit.sleep import auto_stagers, get_prior

    if name is None or str(name).lower() == "none":
        return []
    if str(name).lower() == "auto":  # the pretrained stagers shipped with the package; a user's own by its name
        return auto_stagers()
    get_prior(str(name))  # a one-line ConfigError for an unknown name or one that cannot run here
    return [str(name)]


def stager_options(windows: Any, name: str | None, channels: str | None = None
                   ) -> tuple[list[tuple[dict[str, Any], np.ndarray]], str]:
    """Return the stager options the ladder's base is chosen among, ``(spec, (N, 5) log-probabilities)`` each for
    every window of ``windows`` (the default first: the positions' best guess, and several stagers' average), and,
    when there are none, why.

    Options: every channel choice (:func:`passport_kit.sleep.prior_channel_options`, or the one
    ``--prior-channels`` names) for every stager of :func:`stager_names`, and, where several run, their
    average. Each stager runs once per channel choice and night (:func:`spec_prior`, cached with the WindowSet).
    """
    from passport_kit.sleep import parse_prior_channels, prior_channel_options
    from passport_kit.sleep.priors import ENSEMBLE_SEPARATOR

    names = stager_names(name)
    why = _why_no_prior(windows, bool(names))
    if why:
        return [], why
    montage = windows.montage
    ch_names, kinds = list(montage.ch_names), list(montage.kinds)
    picks = ([parse_prior_channels(channels, ch_names, kinds)] if channels else
             prior_channel_options(ch_names, montage.positions, kinds))
    if not picks:
        return [], NO_CHANNEL
    # the default first: several stagers' average (on the hidden nights it was within 0.01 of the best stager
    # alone, where the one to trust was unknown beforehand), then each stager
    stagers = ([ENSEMBLE_SEPARATOR.join(names)] if len(names) > 1 else []) + names
    specs = [spec for pick in picks for spec in (pick.with_name(s) for s in stagers)]
    _stage_nights(windows, [s for s in specs if ENSEMBLE_SEPARATOR not in s.name])  # each recording read once
    return [(spec.as_dict(), spec_prior(windows, spec.as_dict())) for spec in specs], ""


def spec_prior(windows: Any, spec: dict[str, Any]) -> np.ndarray:
    """Return the ``(N, 5)`` log-probabilities of the stager and channels ``spec`` names (a head's ``prior`` block)
    for every window of ``windows``, night by night; computed once per WindowSet and spec (an average of several
    stagers from each one's own).

    The stager reads each recording's own signal at its rate (``windows.stager_sources``, the
    file read again: :mod:`passport_kit.signals.stager_input`), as ``predict`` gives it; windows
    made without their recordings (no ``stager_sources``) are read instead (the fallback of
    :func:`passport_kit.sleep.prior_log_proba`).
    """
    from passport_kit.sleep import StagerChoice, combine_log_proba
    from passport_kit.sleep.priors import ENSEMBLE_SEPARATOR

    cache = vars(windows).setdefault("_sleep_priors", {})
    key = json.dumps(spec, sort_keys=True)
    if key not in cache:
        parsed = StagerChoice.from_dict(spec)
        parts = parsed.name.split(ENSEMBLE_SEPARATOR)
        if len(parts) > 1:
            cache[key] = combine_log_proba([spec_prior(windows, parsed.with_name(p).as_dict()) for p in parts])
        else:
            _stage_nights(windows, [parsed])
    return cache[key]


def _stage_nights(windows: Any, specs: list[Any]) -> None:
    """Stage every recording of ``windows`` with each single stager ``specs`` names (StagerChoices) that
    :func:`spec_prior`'s cache lacks, and keep the results there; each recording is read once per stager rate."""
    import functools

    from passport_kit.sleep import get_prior, prior_log_proba

    cache = vars(windows).setdefault("_sleep_priors", {})
    todo = {json.dumps(s.as_dict(), sort_keys=True): s for s in specs}
    todo = {k: s for k, s in todo.items() if k not in cache}
    if not todo:
        return
    stagers = {s.name: get_prior(s.name) for s in todo.values()}
    rec, onsets = np.asarray(windows.recording), np.asarray(windows.onset_s)
    sources = getattr(windows, "stager_sources", None) or {}
    out = {k: np.zeros((len(rec), 5)) for k in todo}
    for r in np.unique(rec):
        where = np.flatnonzero(rec == r)
        source = sources.get(str(r))
        raw = functools.lru_cache(maxsize=None)(source) if source is not None else None  # one read per rate
        x = windows.x[where] if raw is None else None  # the windows only for the fallback
        for k, spec in todo.items():
            out[k][where] = prior_log_proba(stagers[spec.name], x, onsets[where], list(windows.montage.ch_names), spec,
                                            window_seconds=float(windows.config.window_seconds), raw=raw)
    cache.update(out)


def dataset_prior(windows: Any, name: str | None) -> tuple[np.ndarray | None, dict[str, Any] | None, str]:
    """Return the sleep prior ``name``'s log-probabilities ``(N, 5)`` for every window of ``windows`` on the channel
    nearest a central site (the positions' best guess, as ``predict --zero-shot`` reads), its spec and, when there
    is none, why (``name`` 'none', windows not 30 s, no EEG channel with a position)."""
    from passport_kit.sleep import get_prior, pick_channels

    why = _why_no_prior(windows, not (name is None or str(name).lower() == "none"))
    if why:
        return None, None, why
    montage = windows.montage
    spec = pick_channels(list(montage.ch_names), montage.positions, list(montage.kinds))
    if spec is None:
        return None, None, NO_CHANNEL
    spec = spec.with_name(get_prior(str(name)).name if "+" not in str(name) else str(name))
    return spec_prior(windows, spec.as_dict()), spec.as_dict(), ""


#: Why there is no prior where the montage gives a stager nothing to read.
NO_CHANNEL = "the montage has no EEG channel with a position for the prior to read"


def _why_no_prior(windows: Any, asked: bool) -> str:
    """Return why no stager scores ``windows`` ('' when one may): none asked for, or windows that are not the
    30-s epochs stagers score."""
    if not asked:
        return "no prior asked for (--prior none)"
    seconds = float(windows.config.window_seconds)
    if abs(seconds - 30.0) > 1e-6:
        return f"sleep priors score 30-s epochs; these windows are {seconds:g} s"
    return ""


def labels_vary_within_recordings(windows: Any, rows: np.ndarray) -> bool:
    """Return whether some recording holds windows of two classes among ``rows`` (sleep nights, not eegmat).

    Only then may the probe scale its inputs per recording: where a recording holds one class,
    scaling within it would remove exactly what tells the classes apart.
    """
    y = np.asarray(windows.y)[rows]
    rec = np.asarray(windows.recording)[rows]
    return any(len(np.unique(y[rec == r])) > 1 for r in np.unique(rec))


__all__ = ["CONTEXTS", "POOLINGS", "LadderData", "dataset_prior", "labels_vary_within_recordings", "ladder_data",
           "spec_prior", "stager_names", "stager_options"]
