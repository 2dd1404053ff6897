"""Metrics against values computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from passport_kit.errors import LabelError
from passport_kit.onboard.metrics import classification_metrics

CLASSES = ["A", "B", "C"]
# Reference / prediction chosen so every number is easy to work out on paper.
Y_TRUE = np.array([0, 0, 0, 0, 1, 1, 2, 2])
Y_PRED = np.array([0, 0, 0, 1, 1, 1, 2, 0])


def test_accuracy_is_fraction_correct() -> None:
    assert classification_metrics(Y_TRUE, Y_PRED, CLASSES).accuracy == pytest.approx(6 / 8)


def test_balanced_accuracy_is_mean_recall() -> None:
    # recalls: A 3/4, B 2/2, C 1/2
    m = classification_metrics(Y_TRUE, Y_PRED, CLASSES)
    assert m.balanced_accuracy == pytest.approx((0.75 + 1.0 + 0.5) / 3)


def test_kappa_matches_hand_computation() -> None:
    # p_o = 6/8; row totals (4,2,2), column totals (4,3,1): p_e = (16+6+2)/64 = 24/64
    p_o, p_e = 6 / 8, 24 / 64
    m = classification_metrics(Y_TRUE, Y_PRED, CLASSES)
    assert m.kappa == pytest.approx((p_o - p_e) / (1 - p_e))


def test_per_class_and_macro_f1() -> None:
    # A: P 3/4 R 3/4 -> 0.75; B: P 2/3 R 1 -> 0.8; C: P 1 R 1/2 -> 2/3
    m = classification_metrics(Y_TRUE, Y_PRED, CLASSES)
    assert m.per_class_f1 == pytest.approx({"A": 0.75, "B": 0.8, "C": 2 / 3})
    assert m.macro_f1 == pytest.approx((0.75 + 0.8 + 2 / 3) / 3)


def test_confusion_rows_are_reference() -> None:
    m = classification_metrics(Y_TRUE, Y_PRED, CLASSES)
    assert m.confusion == [[3, 1, 0], [0, 2, 0], [1, 0, 1]]


def test_confusion_keeps_absent_classes() -> None:
    m = classification_metrics(np.array([0, 0]), np.array([0, 0]), ["W", "N1", "N2"])
    assert m.confusion == [[2, 0, 0], [0, 0, 0], [0, 0, 0]]
    assert m.macro_f1 == pytest.approx(1.0)


def test_unlabeled_windows_are_skipped() -> None:
    m = classification_metrics(np.array([0, -1, 1]), np.array([0, 1, 1]), ["A", "B"])
    assert (m.n, m.accuracy) == (2, 1.0)


def test_auroc_for_two_classes() -> None:
    proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.7, 0.3], [0.2, 0.8]])
    # positives {3: .8, 1: .4}, negatives {0: .1, 2: .3}: every positive outranks every negative
    m = classification_metrics(np.array([0, 1, 0, 1]), np.array([0, 0, 0, 1]), ["rest", "task"], proba)
    assert m.auroc == pytest.approx(1.0)


def test_auroc_absent_for_multiclass() -> None:
    proba = np.full((8, 3), 1 / 3)
    assert classification_metrics(Y_TRUE, Y_PRED, CLASSES, proba).auroc is None


def test_no_labels_is_a_user_error() -> None:
    with pytest.raises(LabelError, match="no labeled windows"):
        classification_metrics(np.array([-1, -1]), np.array([0, 1]), ["A", "B"])


def test_single_class_agreement_gives_zero_kappa() -> None:
    assert classification_metrics(np.array([1, 1]), np.array([1, 1]), ["A", "B"]).kappa == 0.0
