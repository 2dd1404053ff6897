"""Issue 60: adapter.json's ``metrics`` is a typed record end to end, written as it always was, older blocks kept."""

from __future__ import annotations

import json
from typing import Any

import pytest

from passport_kit.checkpoint.adapter_metrics import (AdapterMetrics, ClassificationMetrics, LadderSelection,
                                                     PoorContacts, Rung, Selection, metrics_schema)

_RUNG = {"rung": "bandpower", "tried": True, "taken": True, "score": 0.7412, "baseline": None, "gain": None,
         "standard_error": None, "setting": {"C": 0.1, "context": 0, "pooling": "mean"}, "reason": "the textbook"}
_VALIDATION = {"n": 3, "accuracy": 0.6667, "balanced_accuracy": 0.75, "kappa": 0.4, "macro_f1": 0.6667,
               "per_class_f1": {"W": 0.6667, "S": 0.6667}, "auroc": None, "confusion": [[1, 0], [1, 1]],
               "classes": ["W", "S"]}


def _adapt_block() -> dict[str, Any]:
    """Return a metrics block in the form and key order adapt writes it."""
    return {"train_subjects": ["s01", "s02"], "validation_subjects": [], "train_windows": 120,
            "validation_windows": 0, "train_class_counts": {"W": 60, "S": 60}, "steps": 0, "best_step": 0,
            "stopped_early": False, "seconds": 1.25, "validation": _VALIDATION,
            "channel_quality": {"s01.edf": {"subject": "s01", "bad_channels": []}},
            "poor_contacts": {"channel_windows": 240, "masked": 0, "distrusted": None},
            "selection": {"recipe": "probe", "metric": "kappa", "score": 0.7412, "method": "3-fold", "chosen":
                          "bandpower", "C": 0.1, "calibration": {"calibrated": False, "reason": "r", "temperature": 1.0},
                          "expected": {"metric": "kappa", "score": 0.7412, "folds": 3, "draws": 1, "kind": "subjects"},
                          "ladder": [_RUNG], "seconds": 0.5},
            "warnings": ["only 2 training subjects"], "amplitude": {"median_uv": 30.0},
            "distribution": {"channels": ["C3"]}, "fingerprints": {"s01.edf": [1.0, 2.0]}}


def _written(metrics: AdapterMetrics) -> str:
    return json.dumps(metrics.model_dump(mode="json"), indent=2)


def test_a_block_read_is_typed_and_written_back_byte_for_byte() -> None:
    block = _adapt_block()
    metrics = AdapterMetrics.model_validate(block)
    assert isinstance(metrics.selection, LadderSelection) and isinstance(metrics.validation, ClassificationMetrics)
    assert isinstance(metrics.poor_contacts, PoorContacts) and metrics.poor_contacts.distrusted is None
    assert metrics.selection.ladder[0].name == "bandpower" and metrics.selection.expected.score == 0.7412
    assert _written(metrics) == json.dumps(block, indent=2)  # the same keys in the same order


def test_an_older_or_newer_block_is_written_as_it_was_read() -> None:
    older = {"train_subjects": ["s01"], "steps": 40, "selection": {"metric": "auroc", "score": 0.81,
                                                                   "method": "inner CV"}}
    newer = {**older, "a_newer_key": {"x": 1}}
    assert _written(AdapterMetrics.model_validate(older)) == json.dumps(older, indent=2)
    read = AdapterMetrics.model_validate(newer)
    assert read.model_extra == {"a_newer_key": {"x": 1}} and _written(read) == json.dumps(newer, indent=2)
    assert type(read.selection) is Selection  # no ladder key: a one-score record, not a ladder's


def test_the_history_is_never_written() -> None:
    metrics = AdapterMetrics(steps=2, history=[{"step": 1, "train_loss": 0.5}])
    assert metrics.history and metrics.model_dump(mode="json") == {"steps": 2}


@pytest.mark.parametrize(("value", "written"), [(0.123456, 0.1235), (float("nan"), None), (float("inf"), None),
                                                (None, None)])
def test_the_one_rung_record_keeps_the_ladders_score_and_writes_it_rounded(value: float | None,
                                                                           written: float | None) -> None:
    rung = Rung(name="context", tried=True, taken=False, reason="not above", score=value, gain=value)
    assert rung.score is value  # the ladder's own number, for its rule
    assert rung.model_dump() == {"rung": "context", "tried": True, "taken": False, "score": written, "baseline": None,
                                 "gain": written, "standard_error": None, "setting": None, "reason": "not above"}
    assert Rung.model_validate(rung.model_dump()).name == "context"


def test_the_metrics_schema_names_every_block() -> None:
    schema = metrics_schema()
    assert {"selection", "validation", "poor_contacts", "warnings", "train_class_counts"} <= set(schema["properties"])
    assert {"Rung", "LadderSelection", "ClassificationMetrics"} <= set(schema["$defs"])
