"""Each formula of the validation report against a case computed by hand (issue 44)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from passport_kit.validation.discrepancy import bland_altman, limits, log_limits
from passport_kit.validation.epochs import epoch_agreement, night_spread, pabak, stage_metrics

#: Student's t (0.975, 4 degrees of freedom) and the normal 0.975 quantile, from printed tables.
T_975_4, Z_975 = 2.7764451, 1.9599640
#: A 3-stage error matrix (scorer down, device across), N = 20.
CONFUSION = np.array([[5, 1, 0], [2, 6, 2], [0, 1, 3]])


def _labels(confusion: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (reference, device) index arrays with exactly ``confusion``'s counts."""
    pairs = [(i, j) for (i, j), n in np.ndenumerate(confusion) for _ in range(n)]
    ref, dev = zip(*pairs)
    return np.array(ref), np.array(dev)


@pytest.mark.parametrize(("observed", "k", "expected"), [(0.8, 5, 0.75), (0.9, 2, 0.8), (0.2, 5, 0.0), (1.0, 3, 1.0)])
def test_pabak_fixes_chance_at_one_over_k(observed: float, k: int, expected: float) -> None:
    assert pabak(observed, k) == pytest.approx(expected)


def test_stage_metrics_one_stage_against_the_others() -> None:
    # Stage A: TP 5, FN 1, FP 2, TN 12.
    a = stage_metrics(CONFUSION, ["A", "B", "C"])["A"]
    assert a == pytest.approx({"sensitivity": 5 / 6, "specificity": 12 / 14, "ppv": 5 / 7, "npv": 12 / 13,
                               "accuracy": 17 / 20, "pabak": 2 * 17 / 20 - 1})


def test_a_stage_the_scorer_never_gave_has_no_sensitivity() -> None:
    m = stage_metrics(np.array([[4, 1], [0, 0]]), ["W", "N1"])["N1"]
    assert m["sensitivity"] is None and m["ppv"] == 0.0 and m["specificity"] == pytest.approx(4 / 5)


def test_epoch_agreement_kappa_pabak_and_proportions_by_hand() -> None:
    ref, dev = _labels(CONFUSION)
    a = epoch_agreement(ref, dev, ["A", "B", "C"])
    p_o, p_e = 14 / 20, (6 * 7 + 10 * 8 + 4 * 5) / 400
    assert a["epochs"] == 20 and a["confusion"] == CONFUSION.tolist()
    assert a["accuracy"] == pytest.approx(p_o)
    assert a["kappa"] == pytest.approx((p_o - p_e) / (1 - p_e))
    assert a["pabak"] == pytest.approx((3 * p_o - 1) / 2)
    assert a["proportions"][1] == pytest.approx([0.2, 0.6, 0.2])


def test_unscored_epochs_are_left_out_and_one_stage_has_no_kappa() -> None:
    a = epoch_agreement(np.array([0, 0, -1, 0]), np.array([0, 0, 1, -1]), ["W", "N1"])
    assert a["epochs"] == 2 and a["accuracy"] == 1.0 and a["kappa"] is None and a["proportions"][1] is None


def test_night_spread_is_mean_sd_and_range_of_defined_values() -> None:
    s = night_spread([0.5, None, 0.7, 0.9])
    assert s == pytest.approx({"n": 3, "mean": 0.7, "sd": 0.2, "min": 0.5, "max": 0.9})


def test_limits_of_agreement_by_hand() -> None:
    out = limits(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    sd = math.sqrt(2.5)
    assert out["bias"] == 3.0 and out["sd"] == pytest.approx(sd)
    assert out["bias_ci"] == pytest.approx([3 - T_975_4 * sd / math.sqrt(5), 3 + T_975_4 * sd / math.sqrt(5)])
    assert out["loa"] == pytest.approx({"lower": 3 - Z_975 * sd, "upper": 3 + Z_975 * sd})
    half = T_975_4 * sd * math.sqrt(3 / 5)
    assert out["loa_ci"]["upper"] == pytest.approx([3 + Z_975 * sd - half, 3 + Z_975 * sd + half])


def test_log_limits_are_ratios_by_hand() -> None:
    out = log_limits(np.array([50.0, 200.0]), np.array([100.0, 100.0]))  # ratios 1/2 and 2
    sd = math.sqrt(2) * math.log(2)
    assert out["ratio"] == pytest.approx(1.0)
    assert out["loa"] == pytest.approx({"lower": math.exp(-Z_975 * sd), "upper": math.exp(Z_975 * sd)})
    assert log_limits(np.array([0.0, 1.0]), np.array([1.0, 1.0])) is None


def test_a_device_off_by_a_tenth_has_proportional_bias() -> None:
    reference = np.array([300.0, 350.0, 400.0, 420.0, 480.0])
    out = bland_altman(1.1 * reference, reference)
    # diff = 0.1 ref and mean = 1.05 ref: the line diff = (0.1 / 1.05) mean, exactly.
    assert out["proportional_bias"]["present"] and out["proportional_bias"]["slope"] == pytest.approx(0.1 / 1.05)


def test_differences_that_grow_with_the_mean_get_log_scale_limits() -> None:
    reference = np.array([50.0, 80.0, 120.0, 180.0, 250.0, 330.0, 420.0, 520.0])
    ratio = np.array([0.9, 1.1] * 4)
    out = bland_altman(ratio * reference, reference)
    assert out["spread_grows"]["present"] and out["log_scale"] is not None
    logs = np.log(ratio)
    assert out["log_scale"]["ratio"] == pytest.approx(math.exp(logs.mean()))
    even = bland_altman(reference + np.array([-5.0, 5.0] * 4), reference)
    assert not even["spread_grows"]["present"] and even["log_scale"] is None and even["log_scale_note"]


def test_a_constant_error_has_no_slope_to_test_and_zero_width_limits() -> None:
    out = bland_altman([290.0, 310.0, 350.0], [300.0, 320.0, 360.0])
    assert out["bias"] == -10.0 and out["loa"] == {"lower": -10.0, "upper": -10.0}
    assert out["proportional_bias"]["p"] is None and not out["proportional_bias"]["present"]


def test_fewer_than_three_nights_is_refused() -> None:
    with pytest.raises(ValueError, match="3 nights"):
        bland_altman([1.0, 2.0], [1.0, 2.0])

