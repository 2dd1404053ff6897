"""Issue 48: the selection record is typed, built where the selection is made, and described by its recipe."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from passport_kit.onboard.ladder import Ladder, LadderData, ladder_record
from passport_kit.onboard.recipes import AutoRecipe, describe_selection, get_recipe
from passport_kit.checkpoint.adapter_metrics import ClassificationMetrics, LadderSelection, Selection, read_selection

#: The keys every ladder record has held since the stager-first order (docs/formats.md, metrics.selection).
LADDER_KEYS = {"recipe", "metric", "score", "chosen", "method", "C", "backbone_weight", "context", "pooling",
               "scaling", "prior_weight", "zero_shot", "smoothing", "calibration", "expected", "bandpower_score",
               "increment_over_bandpower", "base", "order", "min_effect", "ladder", "seconds"}
STAGER_KEYS = {"stager", "stager_score", "increment_over_stager"}
READ_OUT_AROUND_STAGER = {"bandpower_weight", "offset", "diagonal"}


def _rung(name: str, taken: bool, score: float | None, gain: float | None = None, reason: str = "") -> dict[str, Any]:
    return {"rung": name, "tried": score is not None, "taken": taken, "score": score, "baseline": None, "gain": gain,
            "standard_error": None if gain is None else 0.01, "setting": None, "reason": reason}


def _ladder_block(**extra: Any) -> dict[str, Any]:
    """Return a textbook-first ladder block as adapter.json holds it (before the stager-first order: no base)."""
    return {"recipe": "probe", "metric": "kappa", "score": 0.8861, "chosen": "backbone",
            "method": "3-fold cross-validation over training subjects; a rung replaces the one below only on ...",
            "C": 0.3, "backbone_weight": 0.3, "context": 0, "pooling": "meanstd", "scaling": "none",
            "prior_weight": 0.0, "zero_shot": False, "smoothing": False,
            "calibration": {"calibrated": True, "temperature": 1.25, "ece_before": 0.05, "ece_after": 0.02,
                            "bins": 10, "method": "temperature scaling"},
            "expected": {"metric": "kappa", "score": 0.8861, "folds": 3, "draws": 1, "kind": "subjects"},
            "bandpower_score": 0.8059, "increment_over_bandpower": 0.0802, "min_effect": 0.02,
            "ladder": [_rung("bandpower", True, 0.8059, reason="the textbook"),
                       _rung("context", False, 0.781, -0.0249, "not above"),
                       _rung("prior", False, None, reason="no prior asked for (--prior none)"),
                       _rung("backbone", True, 0.8861, 0.0802, "gains +0.080")],
            "seconds": 6.41, **extra}


def test_a_finetune_record_is_its_score_its_method_and_the_kept_models_scores() -> None:
    record = Selection(recipe="finetune", metric="kappa", score=0.71234,
                       method="best of every evaluation on 2 validation subject(s)", best_step=40)
    validation = ClassificationMetrics.model_construct(auroc=None, kappa=0.7, balanced_accuracy=0.75, macro_f1=0.7)
    assert record.as_dict() == {"recipe": "finetune", "metric": "kappa", "score": 0.71234, "method":
                                "best of every evaluation on 2 validation subject(s)", "best_step": 40}
    assert record.stepped
    assert describe_selection(record, validation=validation) == [
        "selected by kappa 0.712: best of every evaluation on 2 validation subject(s)",
        "validation: kappa 0.700  balanced accuracy 0.750  macro-F1 0.700"]


def test_a_textbook_first_ladder_record_says_its_rungs_and_the_expected_score_of_the_model_shipped() -> None:
    record = read_selection(_ladder_block())
    assert isinstance(record, LadderSelection) and not record.stepped
    assert get_recipe("probe").describe(record) == [
        "ladder (kappa, 3-fold cross-validation over training subjects): band power 0.806; + context 0.781 not "
        "taken; + backbone 0.886 taken",
        "expected on new subjects: kappa 0.886 (cross-validated, 3 folds; the model shipped: backbone)",
        "band power alone (the textbook, same folds): kappa 0.806"]


def test_verbose_adds_each_rungs_reason_and_the_calibration() -> None:
    lines = describe_selection(read_selection(_ladder_block()), verbose=True)
    assert "  prior: not taken: no prior asked for (--prior none)" in lines
    assert "  backbone 0.886: taken: gains +0.080" in lines
    assert ("  calibration: temperature 1.25; inner expected calibration error 0.050 before, 0.020 after"
            in lines)


def test_a_stager_first_record_adds_the_stagers_score_and_what_your_nights_did() -> None:
    block = _ladder_block(recipe="auto", chosen="recalibrated", base="stager", score=0.57,
                          stager={"prior": "yasa", "channels": "EEG C3-A2", "score": 0.55, "spec": None},
                          stager_score=0.55, increment_over_stager=0.02,
                          ladder=[_rung("stager", True, 0.55), _rung("recalibrated", True, 0.57, 0.02)])
    lines = describe_selection(read_selection(block))
    assert lines[-2:] == [
        "sleep stager YASA on EEG C3-A2, zero-shot on your nights (same folds): kappa 0.550; the model shipped: "
        "0.570",
        "your nights did not improve on YASA beyond recalibrating it (+0.020 kappa): shipped YASA, recalibrated on "
        "your nights"]


def test_an_older_record_reads_back_with_defaults_and_is_written_unchanged() -> None:
    """A ladder block from before the stager-first order (no base, order, stager) and one before records named
    their recipe: read, described by their kind, and written back key for key."""
    older = _ladder_block()
    older.pop("recipe")
    record = read_selection(older)
    assert isinstance(record, LadderSelection) and record.base is None and record.stager is None
    assert json.dumps(record.as_dict(), sort_keys=True) == json.dumps(older, sort_keys=True)
    assert describe_selection(record)[0].startswith("ladder (kappa, 3-fold")
    assert get_recipe("probe").stager_lines(record) == []
    before_the_ladder = read_selection({"recipe": "probe", "metric": "auroc", "score": 0.81, "method": "inner CV",
                                        "C": 1.0})
    assert type(before_the_ladder) is Selection and not before_the_ladder.stepped
    assert describe_selection(before_the_ladder) == ["selected by auroc 0.810: inner CV"]
    assert read_selection(None) is None and read_selection({}) is None


def test_a_record_of_a_recipe_not_registered_here_is_described_by_its_kind() -> None:
    assert describe_selection(read_selection(_ladder_block(recipe="mine")))[0].startswith("ladder (kappa")
    assert describe_selection(Selection(recipe="mine", metric="kappa", method="m")) == ["selected by kappa n/a: m"]


def _sleep_data(*, stager: bool) -> LadderData:
    rng = np.random.default_rng(0)
    y = np.repeat(rng.integers(0, 5, 24), 5)
    recs = np.repeat(["a", "b", "c"], 40)
    onehot = np.eye(5)[y]
    plain = {"mean": np.concatenate([rng.normal(size=(120, 4)), onehot + rng.normal(size=(120, 5))], 1)}
    logits = 2.5 * onehot + rng.normal(size=(120, 5))
    prior = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return LadderData(plain=plain, y=y, groups=recs, recordings=recs, classes=["W", "N1", "N2", "N3", "REM"],
                      d_model=4, sleep=True, contexts=(0,), poolings=("mean",),
                      prior=prior if stager else None, prior_stages=[0, 1, 2, 3, 4] if stager else None,
                      stager_choice={"name": "test", "eeg": "C3", "eog": None, "emg": None} if stager else None)


@pytest.mark.parametrize("stager", [False, True], ids=["textbook first", "stager first"])
def test_the_ladder_builds_the_record_adapter_json_has_held(stager: bool) -> None:
    result = Ladder(_sleep_data(stager=stager)).climb()
    fitted = SimpleNamespace(result=result)
    block = ladder_record(fitted, "probe").as_dict()
    around = READ_OUT_AROUND_STAGER if result.fitted.offset or result.fitted.bandpower_weight != 1.0 else set()
    assert set(block) == LADDER_KEYS | (STAGER_KEYS if stager else set()) | around
    assert block["base"] == ("stager" if stager else "bandpower")
    assert read_selection(block).as_dict() == block
    auto = AutoRecipe().record(fitted).as_dict()
    assert set(auto) == set(block) | {"adapter_training"}
    assert auto["adapter_training"]["reason"] == next(r.reason for r in result.rungs if r.name == "lpft")
