"""What a bundle's numbers must be before a model is built from them: the head's night smoothing, temperature and prior
block, and the distribution guard's profile (issue 46, item 2).

``adapter.json`` is a text file a user can edit, and its JSON types are checked on read
(:class:`~passport_kit.checkpoint.files.HeadSettings`), but not its numbers. A fault-injection run
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

from passport_kit.errors import CheckpointError

#: The temperatures a bundle may carry: what ``fit_temperature`` can return (its bounds, 0.05-20), with room for
#: rounding. 1e-300 made every window certain; 1e300 would make every window a tie.
TEMPERATURE_RANGE = (0.01, 100.0)
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
    """Return None when the head block's smoothing, temperature and prior can be used; else raise CheckpointError.

    ``n_classes``: the bundle's class count (``classes``). The message names the setting, without
    the bundle (the caller adds it and what to do).
    """
    temperature = head.get("temperature", 1.0)
    low, high = TEMPERATURE_RANGE
    if not isinstance(temperature, (int, float)) or not low <= float(temperature) <= high:
        raise CheckpointError(f"head.temperature is {temperature!r}, outside {low:g}..{high:g} (a fitted temperature "
                              "lies between 0.05 and 20)")
    smoothing = head.get("smoothing")
    if smoothing is not None:
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
    n_prior = head.get("n_prior", 0)
    if n_prior:
        prior = head.get("prior")
        if not isinstance(prior, Mapping) or not all(isinstance(prior.get(k), str) and prior.get(k)
                                                     for k in ("name", "eeg")):
            raise CheckpointError(f"head.prior must name the prior and its EEG channel ('name', 'eeg'), got "
                                  f"{str(prior)[:60]!r}")


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


__all__ = ["AMPLITUDE_RANGE_UV", "SUM_TOLERANCE", "TEMPERATURE_RANGE", "check_amplitude_profile", "check_guard_profile",
           "check_head_numbers", "check_sleep_blocks"]
