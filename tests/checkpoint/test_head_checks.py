"""A bundle's head numbers and guard profile are checked on load (issue 46, item 2)."""

from __future__ import annotations

import numpy as np
import pytest

from passport_kit.checkpoint.head_checks import check_guard_profile, check_head_numbers
from passport_kit.engine.forward import finite_probabilities
from passport_kit.errors import CheckpointError
from passport_kit.model.night import smooth

K = 5
GOOD = {"transitions": (np.full((K, K), 0.1) + 0.5 * np.eye(K)).tolist(), "emission_prior": [0.2] * K}


def _head(**changes: object) -> dict:
    return {"kind": "probe", "n_classes": K, "temperature": 1.3, "smoothing": dict(GOOD)} | changes


def test_a_fitted_head_passes() -> None:
    check_head_numbers(_head(), K)
    check_head_numbers({"kind": "probe", "n_classes": K}, K)  # no smoothing, temperature 1
    # Keys a newer version adds to the prior spec are not refused.
    check_head_numbers(_head(n_prior=5, prior={"name": "yasa", "eeg": "C3", "stagers": ["yasa"], "offset": True}), K)


@pytest.mark.parametrize(("smoothing", "message"), [
    ({"transitions": np.zeros((K, K)).tolist()}, "must hold 'transitions' and 'emission_prior'"),
    ({"transitions": np.zeros((K, K)).tolist(), "emission_prior": [0.2] * K}, "must sum to 1 in every row"),
    ({"transitions": np.full((K, K), np.nan).tolist(), "emission_prior": [0.2] * K}, "NaN or infinite"),
    ({"transitions": (np.eye(K) * 2 - np.roll(np.eye(K), 1, axis=1)).tolist(), "emission_prior": [0.2] * K},
     "negative values"),
    ({"transitions": np.full((3, 3), 1 / 3).tolist(), "emission_prior": [0.2] * K}, "must have shape (5, 5)"),
    ({"transitions": GOOD["transitions"], "emission_prior": [0.5, 0.5]}, "must have shape (5,)"),
    ({"transitions": GOOD["transitions"], "emission_prior": [0.0, 0.25, 0.25, 0.25, 0.25]}, "zero or negative"),
    (GOOD | {"note": "hello"}, "head.smoothing.note must be finite numbers"),
])
def test_broken_smoothing_is_one_line(smoothing: dict, message: str) -> None:
    # Issue 46: zeros staged every night Wake at NaN; NaN a LinAlgError; 3x3 a broadcast ValueError; a string key
    # a traceback in heads.py.
    with pytest.raises(CheckpointError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_head_numbers(_head(smoothing=smoothing), K)


@pytest.mark.parametrize("temperature", [1e-300, 0.0, -1.0, float("nan"), float("inf"), 1e6])
def test_a_temperature_outside_the_fitted_range_is_refused(temperature: float) -> None:
    # Issue 46: 1e-300 put every window at confidence 1.000.
    with pytest.raises(CheckpointError, match="head.temperature"):
        check_head_numbers(_head(temperature=temperature), K)


def test_a_prior_block_without_its_spec_is_refused() -> None:
    with pytest.raises(CheckpointError, match="head.prior must name"):
        check_head_numbers(_head(n_prior=5, prior={"name": "yasa"}), K)


def test_no_profile_passes_and_a_broken_one_does_not() -> None:
    check_guard_profile(None, 3)
    with pytest.raises(CheckpointError, match="must list the montage's 3 channels"):
        check_guard_profile({"channels": ["a"], "bands": [], "levels": []}, 3)


def test_non_finite_probabilities_are_never_staged() -> None:
    # What zero transitions do to a night (issue 46): every posterior NaN; predict_proba refuses them.
    with np.errstate(all="ignore"):
        proba = smooth(np.full((4, K), 0.2), np.zeros((K, K)))
    assert not np.isfinite(proba).all()
    with pytest.raises(CheckpointError, match="NaN or infinite class probabilities for 4 of 4 windows"):
        finite_probabilities(proba)
    assert finite_probabilities(np.full((2, K), 0.2)).shape == (2, K)


def _sleep_profile(**blocks: object) -> dict:
    """Return a guard profile of 2 channels and 2 bands with the sleep blocks ``blocks``."""
    return {"channels": ["a", "b"], "bands": ["delta", "theta"], "levels": [0.01, 0.25, 0.5, 0.75, 0.99],
            "quantiles": np.zeros((2, 2, 5)).tolist()} | blocks


STAGES = {"classes": list("WABCD"), "windows": [20] * K, "mean": np.zeros((K, 2, 2)).tolist(),
          "sd": np.ones((2, 2)).tolist()}
TRANSITIONS = {"classes": list("WABCD"), "counts": np.ones((K, K), dtype=int).tolist()}


@pytest.mark.parametrize(("blocks", "message"), [
    ({"stages": "garbage"}, "stages must be a mapping that names its classes"),
    ({"transitions": [1, 2]}, "transitions must be a mapping that names its classes"),
    ({"stages": STAGES | {"classes": ["W", "N1"]}}, "stages names 2 classes, the bundle 5"),
    ({"stages": STAGES | {"mean": "garbage"}}, "stages.mean must be numbers"),
    ({"stages": STAGES | {"mean": np.zeros((K, 3, 2)).tolist()}}, "stages.mean must have shape (5, 2, 2)"),
    ({"stages": STAGES | {"sd": np.zeros((2, 2)).tolist()}}, "positive finite spreads"),
    ({"stages": STAGES | {"windows": [True] * K}}, "stages.windows must be 5 window counts"),
    ({"transitions": TRANSITIONS | {"counts": (-np.ones((K, K))).tolist()}}, "non-negative finite counts"),
    ({"transitions": TRANSITIONS | {"counts": [[1, 2]]}}, "transitions.counts must have shape (5, 5)"),
])
def test_broken_sleep_blocks_of_the_guard_are_one_line(blocks: dict, message: str) -> None:
    with pytest.raises(CheckpointError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_guard_profile(_sleep_profile(**blocks), 2, K)


def test_usable_sleep_blocks_pass() -> None:
    nan_stage = STAGES | {"mean": np.where(np.arange(K)[:, None, None] == 1, np.nan, np.zeros((K, 2, 2))).tolist()}
    check_guard_profile(_sleep_profile(stages=nan_stage, transitions=TRANSITIONS), 2, K)
    check_guard_profile(_sleep_profile(stages=None), 2, K)


# Issue 57: each head key's type, range and shape declared once (checkpoint/head_keys.py), checked from there.
@pytest.mark.parametrize(("key", "value", "message"), [
    ("n_classes", 0, "head.n_classes is 0, below 1"),
    ("dropout", 1.5, r"head.dropout is 1.5, outside 0..1"),
    ("context", -2, "head.context is -2, below 0"),
    ("n_prior", -1, "head.n_prior is -1, below 0"),
    ("bands", [[8.0, 4.0]], r"head.bands must be \[low, high\]"),
    ("bands", [[4.0, 8.0, 12.0]], r"head.bands must have shape \(1, 2\)"),
])
def test_a_head_key_outside_its_declared_range_is_one_line(key: str, value: object, message: str) -> None:
    # Before: accepted on load (a context of -2, a dropout of 1.5, inverted bands) or a traceback when the head was built.
    with pytest.raises(CheckpointError, match=message):
        check_head_numbers(_head(**{key: value}), K)


def test_the_range_checks_read_the_declaration_of_the_types(monkeypatch: pytest.MonkeyPatch) -> None:
    # One declaration: every key with a rule is a key of HeadSettings, whose annotation pydantic checks on read, and a
    # rule in that declaration is what check_head_numbers applies.
    from typing import get_type_hints

    from passport_kit.checkpoint import head_checks, head_keys

    rules = head_keys.head_rules()
    assert {"temperature", "smoothing", "prior", "n_classes", "bands"} <= set(rules)
    assert set(rules) <= set(get_type_hints(head_keys.HeadSettings))
    assert (rules["temperature"].low, rules["temperature"].high) == head_keys.TEMPERATURE_RANGE
    monkeypatch.setattr(head_checks, "head_rules", lambda: {"hidden": head_keys.Rule(low=1000)})
    with pytest.raises(CheckpointError, match="head.hidden is 200, below 1000"):
        check_head_numbers({"kind": "mlp", "n_classes": K, "hidden": 200}, K)
