"""What the ladder reads for a dataset's rows (:mod:`passport_kit.onboard.ladder`): the task's contexts, scalings and
poolings, and for sleep staging a pretrained stager's log-probabilities (:mod:`passport_kit.sleep`).

:func:`ladder_data` is what the probe recipes hand the ladder; :func:`dataset_prior` scores every window of a
WindowSet with a sleep prior, night by night, and :func:`cached_prior` keeps it with the WindowSet (evaluate's folds
share it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from passport_kit.model.heads import SCALINGS
from passport_kit.onboard.ladder import LadderData
from passport_kit.onboard.probe import CONTEXTS, POOLINGS


def ladder_data(cfg: Any, windows: Any, plain: dict[str, np.ndarray], rows: np.ndarray, *,
                head: Any) -> LadderData:
    """Return what the ladder reads for ``rows`` of ``windows``: the task's contexts, scalings and poolings, and for
    sleep staging the prior's log-probabilities (:func:`dataset_prior`)."""
    sleep = windows.info.get("task") == "sleep-staging"
    contexts = (cfg.context,) if cfg.context is not None else CONTEXTS if sleep else (0,)
    prior, spec, reason = (cached_prior(windows, cfg.prior) if sleep else (None, None, "not a sleep-staging task"))
    from passport_kit.sleep import classes_to_stages

    return LadderData(
        plain=plain, y=np.asarray(windows.y)[rows], groups=np.asarray(windows.subject)[rows],
        recordings=np.asarray(windows.recording)[rows], classes=list(windows.classes), d_model=head.d_model,
        sleep=sleep, contexts=contexts, fixed_context=cfg.context is not None,
        scalings=SCALINGS if sleep and labels_vary_within_recordings(windows, rows) else ("none",),
        poolings=POOLINGS if cfg.probe_pooling == "auto" else (cfg.probe_pooling,),
        prior=None if prior is None else prior[rows], prior_spec=spec,
        prior_stages=classes_to_stages(list(windows.classes)), prior_reason=reason)


def cached_prior(windows: Any, name: str | None) -> tuple[np.ndarray | None, dict[str, Any] | None, str]:
    """Return :func:`dataset_prior` of ``windows``, computed once per WindowSet and prior (evaluate's folds share it)."""
    cache = vars(windows).setdefault("_sleep_priors", {})
    if name not in cache:
        cache[name] = dataset_prior(windows, name)
    return cache[name]


def dataset_prior(windows: Any, name: str | None) -> tuple[np.ndarray | None, dict[str, Any] | None, str]:
    """Return the sleep prior ``name``'s log-probabilities ``(N, 5)`` for every window of ``windows``, its spec and,
    when there is none, why (``name`` 'none', windows not 30 s, no EEG channel with a position)."""
    from passport_kit.sleep import get_prior, pick_channels, prior_log_proba

    if name is None or str(name).lower() == "none":
        return None, None, "no prior asked for (--prior none)"
    seconds = float(windows.config.window_seconds)
    if abs(seconds - 30.0) > 1e-6:
        return None, None, f"sleep priors score 30-s epochs; these windows are {seconds:g} s"
    montage = windows.montage
    spec = pick_channels(list(montage.ch_names), montage.positions, list(montage.kinds))
    if spec is None:
        return None, None, "the montage has no EEG channel with a position for the prior to read"
    prior = get_prior(str(name))
    spec = type(spec)(prior.name, spec.eeg, spec.eog, spec.emg)
    out = np.zeros((len(windows), 5))
    rec = np.asarray(windows.recording)
    for r in np.unique(rec):
        where = np.flatnonzero(rec == r)
        out[where] = prior_log_proba(prior, windows.x[where], np.asarray(windows.onset_s)[where],
                                     list(montage.ch_names), spec, window_seconds=seconds)
    return out, spec.as_dict(), ""


def labels_vary_within_recordings(windows: Any, rows: np.ndarray) -> bool:
    """Return whether some recording holds windows of two classes among ``rows`` (sleep nights, not eegmat).

    Only then may the probe scale its inputs per recording: where a recording holds one class,
    scaling within it would remove exactly what tells the classes apart.
    """
    y = np.asarray(windows.y)[rows]
    rec = np.asarray(windows.recording)[rows]
    return any(len(np.unique(y[rec == r])) > 1 for r in np.unique(rec))


__all__ = ["cached_prior", "dataset_prior", "labels_vary_within_recordings", "ladder_data"]
