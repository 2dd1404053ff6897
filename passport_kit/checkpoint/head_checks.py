"""What a bundle's numbers must be before a model is built from them: the head's night smoothing, temperature and prior
block, and the distribution guard's profile (issue 46, item 2).

``adapter.json`` is a text file a user can edit, and its JSON types are checked on read, but not its
numbers; each head key's range and shape is declared with its type, once
(:class:`~passport_kit.checkpoint.head_keys.HeadSettings`), and checked here from that declaration. A fault-injection run
found a transition matrix of zeros staging every night Wake at NaN probability with exit 0, a
temperature of 1e-300 giving every window confidence 1.000, a zero emission prior, negative or
non-stochastic transitions and an all-NaN guard profile (the guard silently off) accepted, and a
3×3 matrix, NaN transitions or a guard profile of ``"garbage"`` as tracebacks. Each check here
says in one line which setting is wrong (:class:`~passport_kit.errors.CheckpointError`).

Keys a newer version may add are let through where they cannot be misread: any key of the
``prior`` spec besides ``name`` and ``eeg`` (its reader takes what it knows), and any list of
numbers in ``smoothing`` besides ``transitions`` and ``emission_prior``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from passport_kit.checkpoint.head_keys import TEMPERATURE_RANGE, head_rules
from passport_kit.errors import CheckpointError

#: How far a stored row of probabilities may sum from 1: the ladder stores them rounded to 6 decimals (onboard/ladder.py).
SUM_TOLERANCE = 1e-4


def _numbers(value: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
    """Return ``value`` as a float array of ``shape``; a CheckpointError naming ``what`` when it is not one."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise CheckpointError(f"{what} must be numbers, got {str(value)[:40]!r}") from None
    if array.shape != shape:
        raise CheckpointError(f"{what} must have shape {shape}, got {array.shape}")
    return array


def _probabilities(value: Any, shape: tuple[int, ...], what: str, *, positive: bool = False) -> np.ndarray:
    """Return ``value`` as rows of probabilities (finite, non-negative or ``positive``, each summing to 1)."""
    array = _numbers(value, shape, what)
    if not np.isfinite(array).all():
        raise CheckpointError(f"{what} holds NaN or infinite values")
    if (array <= 0).any() if positive else (array < 0).any():
        raise CheckpointError(f"{what} holds {'zero or ' if positive else ''}negative values; probabilities must be "
                              f"{'positive' if positive else 'at least 0'}")
    sums = array.reshape(-1, shape[-1]).sum(axis=1)
    if np.abs(sums - 1.0).max() > SUM_TOLERANCE:
        raise CheckpointError(f"{what} must sum to 1 {'in every row ' if len(shape) > 1 else ''}(sums "
                              f"{', '.join(f'{s:.4g}' for s in sums[:5])})")
    return array


def check_head_numbers(head: Mapping[str, Any], n_classes: int) -> None:
    """Return None when every key of the head block lies in its declared range and shape; else raise CheckpointError.

    The rules are :class:`~passport_kit.checkpoint.head_keys.HeadSettings`' (the one declaration of each key's
    type, range and shape; :func:`~passport_kit.checkpoint.head_keys.head_rules`); ``n_classes``: the bundle's class
    count (``classes``). The message names the setting, without the bundle (the caller adds it and what to do).
    """
    for key, rule in head_rules().items():
        value = head.get(key)
        if value is None or (rule.only_if is not None and not head.get(rule.only_if)):
            continue
        if rule.check is not None:
            rule.check(value, head, n_classes)
            continue
        low = -np.inf if rule.low is None else rule.low
        high = np.inf if rule.high is None else rule.high
        if not isinstance(value, (int, float)) or not low <= float(value) <= high:
            bounds = (f"outside {low:g}..{high:g}" if rule.low is not None and rule.high is not None
                      else f"{'below' if rule.low is not None else 'above'} {low if rule.low is not None else high:g}")
            raise CheckpointError(f"head.{key} is {value!r}, {bounds}" + (f" ({rule.why})" if rule.why else ""))


def check_smoothing(smoothing: Any, n_classes: int) -> None:
    """Return None when ``head.smoothing`` holds a ``(K, K)`` transition matrix and a positive ``(K,)`` emission
    prior, rows of probabilities, and only finite numbers besides; else raise CheckpointError."""
    if not isinstance(smoothing, Mapping) or not {"transitions", "emission_prior"} <= set(smoothing):
        raise CheckpointError("head.smoothing must hold 'transitions' and 'emission_prior'")
    _probabilities(smoothing["transitions"], (n_classes, n_classes), "head.smoothing.transitions")
    _probabilities(smoothing["emission_prior"], (n_classes,), "head.smoothing.emission_prior", positive=True)
    for key, value in smoothing.items():  # the head reads every entry as numbers (a newer key included)
        if key not in ("transitions", "emission_prior"):
            try:
                finite = np.isfinite(np.asarray(value, dtype=np.float64)).all()
            except (TypeError, ValueError):
                finite = False
            if not finite:
                raise CheckpointError(f"head.smoothing.{key} must be finite numbers, got {str(value)[:40]!r}")


def check_stager_choice(prior: Any) -> None:
    """Return None when ``head.prior`` names the prior and its EEG channel; else raise CheckpointError (any other key
    is let through: its reader takes what it knows)."""
    if not isinstance(prior, Mapping) or not all(isinstance(prior.get(k), str) and prior.get(k) for k in ("name", "eeg")):
        raise CheckpointError(f"head.prior must name the prior and its EEG channel ('name', 'eeg'), got "
                              f"{str(prior)[:60]!r}")


def check_bands(bands: Any) -> None:
    """Return None when ``head.bands`` is a list of ``[low, high]`` Hz with ``0 <= low < high``; else raise
    CheckpointError."""
    if bands == []:  # a band-pass top that carries no band: no spectral block
        return
    array = _numbers(bands, (len(bands), 2) if isinstance(bands, list) else (-1, 2), "head.bands")
    if not (np.isfinite(array).all() and (array[:, 0] >= 0).all() and (array[:, 0] < array[:, 1]).all()):
        raise CheckpointError(f"head.bands must be [low, high] in Hz with 0 <= low < high, got {str(bands)[:40]!r}")


def check_guard_profile(profile: Any, n_channels: int, n_classes: int | None = None) -> None:
    """Return None when ``metrics.distribution`` (the guard's profile) is absent or usable; else raise CheckpointError.

    Usable: a mapping whose quantiles are ``(C, bands, levels)`` numbers, finite for at least one
    channel (an all-flat training channel has NaN quantiles), amplitudes positive or null, the
    correlation block finite, every limit a positive number, and the two sleep blocks
    (:func:`check_sleep_blocks`; ``n_classes``: the bundle's class count) as ``adapt`` writes them.
    """
    if profile is None:  # bundles written before the guard (issue 34): not scored, as documented
        return
    if not isinstance(profile, Mapping):
        raise CheckpointError(f"metrics.distribution must be the guard's profile (a mapping), got "
                              f"{str(profile)[:40]!r}")
    channels, bands, levels = profile.get("channels"), profile.get("bands"), profile.get("levels")
    if not (isinstance(channels, list) and len(channels) == n_channels and isinstance(bands, list)
            and isinstance(levels, list)):
        raise CheckpointError(f"metrics.distribution must list the montage's {n_channels} channels, its bands and "
                              "levels")
    quantiles = _numbers(profile.get("quantiles"), (n_channels, len(bands), len(levels)),
                         "metrics.distribution.quantiles")
    if not np.isfinite(quantiles).all(axis=(1, 2)).any():
        raise CheckpointError("metrics.distribution.quantiles holds no finite channel (the guard would be off)")
    amplitude = profile.get("amplitude_uv")
    if amplitude is not None:
        values = _numbers([np.nan if a is None else a for a in amplitude] if isinstance(amplitude, list) else amplitude,
                          (n_channels,), "metrics.distribution.amplitude_uv")
        if (values[np.isfinite(values)] <= 0).any() or np.isinf(values).any():
            raise CheckpointError("metrics.distribution.amplitude_uv must be positive µV (or null per channel)")
    correlation = profile.get("correlation")
    if correlation is not None:
        if not isinstance(correlation, Mapping):
            raise CheckpointError("metrics.distribution.correlation must be a mapping or null")
        mean = np.asarray(_numbers(correlation.get("mean"), (n_channels * (n_channels - 1) // 2,),
                                   "metrics.distribution.correlation.mean"))
        inverse = correlation.get("inverse_covariance")
        inverse = _numbers(inverse, np.shape(inverse) if np.ndim(inverse) == 1 else (len(mean), len(mean)),
                           "metrics.distribution.correlation.inverse_covariance")
        scale = correlation.get("scale")
        if inverse.shape not in ((len(mean),), (len(mean), len(mean))) or not (
                np.isfinite(mean).all() and np.isfinite(inverse).all()
                and isinstance(scale, (int, float)) and np.isfinite(scale) and scale > 0):
            raise CheckpointError("metrics.distribution.correlation must hold a finite mean, inverse covariance and "
                                  "a positive scale")
    for key in ("distance_limit", "correlation_limit", "amplitude_limit", "top_hz"):
        value = profile.get(key)
        if value is not None and not (isinstance(value, (int, float)) and np.isfinite(value) and value > 0):
            raise CheckpointError(f"metrics.distribution.{key} must be a positive number, got {value!r}")
    check_sleep_blocks(profile, n_channels, len(bands), n_classes)


#: The training amplitudes (median 1-40 Hz RMS, µV) a bundle may record: EEG of any device lies far inside.
AMPLITUDE_RANGE_UV = (0.1, 10_000.0)


def check_amplitude_profile(profile: Any) -> None:
    """Return None when ``metrics.amplitude`` (the unit check's training amplitude) is absent or usable; else raise
    CheckpointError (issue 57: a tampered one was reported as the recording's wrong unit).

    Usable: a mapping whose ``median_uv`` is a finite number in :data:`AMPLITUDE_RANGE_UV`, between its ``p05_uv``
    and ``p95_uv`` where they are given.
    """
    if profile is None:
        return
    median = profile.get("median_uv") if isinstance(profile, Mapping) else None
    low, high = AMPLITUDE_RANGE_UV
    if isinstance(median, bool) or not isinstance(median, (int, float)) or not low <= median <= high:
        raise CheckpointError(f"metrics.amplitude.median_uv must be the training data's amplitude in µV ({low:g} to "
                              f"{high:g}), got {str(median if isinstance(profile, Mapping) else profile)[:40]!r}")
    for key, ok in (("p05_uv", lambda v: v <= median), ("p95_uv", lambda v: v >= median)):
        value = profile.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not np.isfinite(value) or not ok(value)):
            raise CheckpointError(f"metrics.amplitude.{key} must be a number on the right side of median_uv, got "
                                  f"{str(value)[:40]!r}")


def check_sleep_blocks(profile: Mapping[str, Any], n_channels: int, n_bands: int, n_classes: int | None) -> None:
    """Return None when the guard profile's sleep blocks are absent or usable; else raise CheckpointError (issue 57:
    ``stages: "garbage"`` was a 70-line TypeError in predict).

    ``transitions``: ``classes`` (one name per class) and ``counts`` ``(K, K)`` non-negative finite numbers;
    ``stages``: ``classes``, ``windows`` (K counts, optional), each stage's mean spectrum ``mean`` ``(K, C, bands)``
    (NaN for a stage without a window) and the within-stage spread ``sd`` ``(C, bands)``, positive and finite.
    """
    for key in ("transitions", "stages"):
        block = profile.get(key)
        if block is None:
            continue
        where = f"metrics.distribution.{key}"
        classes = block.get("classes") if isinstance(block, Mapping) else None
        if not (isinstance(classes, list) and classes and all(isinstance(c, str) for c in classes)):
            raise CheckpointError(f"{where} must be a mapping that names its classes, got {str(block)[:40]!r}")
        k = len(classes)
        if n_classes is not None and k != n_classes:
            raise CheckpointError(f"{where} names {k} classes, the bundle {n_classes}")
        if key == "transitions":
            counts = _numbers(block.get("counts"), (k, k), f"{where}.counts")
            if not np.isfinite(counts).all() or (counts < 0).any():
                raise CheckpointError(f"{where}.counts must be non-negative finite counts")
            continue
        windows = block.get("windows")
        if windows is not None and not (isinstance(windows, list) and len(windows) == k and all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in windows)):
            raise CheckpointError(f"{where}.windows must be {k} window counts, got {str(windows)[:40]!r}")
        mean = _numbers(block.get("mean"), (k, n_channels, n_bands), f"{where}.mean")
        sd = _numbers(block.get("sd"), (n_channels, n_bands), f"{where}.sd")
        if np.isinf(mean).any() or not (np.isfinite(sd).all() and (sd > 0).all()):
            raise CheckpointError(f"{where} must hold finite means (NaN for a stage without windows) and positive "
                                  "finite spreads")


__all__ = ["AMPLITUDE_RANGE_UV", "SUM_TOLERANCE", "TEMPERATURE_RANGE", "check_amplitude_profile", "check_bands",
           "check_guard_profile", "check_head_numbers", "check_stager_choice", "check_sleep_blocks", "check_smoothing"]
