"""Each formula of the validation report against a case computed by hand (issues 44 and 56)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from passport_kit.validation.discrepancy import bland_altman, limits_at
from passport_kit.validation.reliability import agreement_icc, icc_a1
from passport_kit.validation.epochs import epoch_agreement, night_spread, pabak, stage_metrics

#: Student's t (0.975, 4 degrees of freedom), from printed tables.
T_975_4 = 2.7764451
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
    out = bland_altman(np.array([1.0, 2.0, 3.0, 4.0, 5.0]) + 100, np.full(5, 100.0) + [0, 0.5, 0, 0.5, 0])
    d = np.array([1.0, 1.5, 3.0, 3.5, 5.0])
    bias, sd = d.mean(), d.std(ddof=1)
    assert out["bias"] == pytest.approx(bias) and out["sd"] == pytest.approx(sd)
    assert out["bias_ci"] == pytest.approx([bias - T_975_4 * sd / math.sqrt(5), bias + T_975_4 * sd / math.sqrt(5)])
    # YASA's and the papers' 1.96, not the normal quantile's 1.95996.
    assert out["loa"] == pytest.approx({"lower": bias - 1.96 * sd, "upper": bias + 1.96 * sd})
    half = T_975_4 * sd * math.sqrt(3 / 5)
    assert out["loa_ci"]["upper"] == pytest.approx([bias + 1.96 * sd - half, bias + 1.96 * sd + half])


def test_log_limits_are_euser_slopes_by_hand() -> None:
    reference = np.array([100.0, 200.0, 300.0, 400.0])
    ratio = np.array([0.9, 1.1, 0.95, 1.2])
    out = bland_altman(ratio * reference, reference)
    z = 1.96 * np.log(ratio).std(ddof=1)
    assert out["log"]["slope"] == pytest.approx(2 * (math.exp(z) - 1) / (math.exp(z) + 1))
    with_zero = bland_altman([0.0, 5.0, 12.0, 3.0], [2.0, 4.0, 10.0, 6.0])
    assert with_zero["log"] is None and "0" in with_zero["note"]


def test_regression_limits_by_hand() -> None:
    reference = np.array([50.0, 80.0, 120.0, 180.0, 250.0, 330.0, 420.0, 520.0])
    device = reference * np.array([0.9, 1.1] * 4) + 5
    out = bland_altman(device, reference)
    diff = device - reference
    fit = np.polyfit(reference, diff, 1)
    spread = np.polyfit(reference, np.abs(diff - np.polyval(fit, reference)), 1)
    r = out["regression"]
    assert [r["bias_slope"], r["bias_intercept"]] == pytest.approx(fit)
    assert [r["loa_slope"], r["loa_intercept"]] == pytest.approx(spread)
    assert r["agreement"] == pytest.approx(1.96 * math.sqrt(math.pi / 2))


def test_a_device_off_by_a_tenth_has_proportional_bias() -> None:
    reference = np.array([300.0, 350.0, 400.0, 420.0, 480.0])
    out = bland_altman(1.1 * reference + np.array([0.0, 1.0, -1.0, 0.5, 0.0]), reference)
    # diff ≈ 0.1 ref: the differences regressed on the reference's value (Menghini's and YASA's x axis).
    assert out["proportional_bias"]["present"] and out["proportional_bias"]["slope"] == pytest.approx(0.1, abs=0.01)
    assert out["limits_chosen"] in ("parallel", "regression")


def test_a_spread_that_grows_or_shrinks_is_said_so() -> None:
    reference = np.array([50.0, 80.0, 120.0, 180.0, 250.0, 330.0, 420.0, 520.0])
    grows = bland_altman(reference * np.array([0.9, 1.1] * 4), reference)
    assert grows["spread_changes"]["present"] and grows["spread_changes"]["direction"] == "grows"
    assert grows["limits_chosen"] == "regression"
    shrinks = bland_altman(reference + np.array([-60.0, 50.0, -30, 25, -10, 8, -2, 2]), reference)
    assert shrinks["spread_changes"]["direction"] == "shrinks"
    even = bland_altman(reference + np.array([-5.0, 5.0] * 4), reference)
    assert not even["spread_changes"]["present"] and even["limits_chosen"] == "parametric"


def test_icc_of_shrout_and_fleiss() -> None:
    """Shrout and Fleiss 1979, Table 2 (6 targets, 4 judges): ICC(2,1) = 0.29 (their Table 4); its 95 % CI
    [0.019, 0.76] as R's psych::ICC prints it for these data (the sf example of its help page)."""
    ratings = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]])
    icc, ci = icc_a1(ratings)
    assert icc == pytest.approx(0.29, abs=0.005) and ci == pytest.approx([0.019, 0.76], abs=0.005)


def test_mdc_is_1_96_root_2_sem() -> None:
    dev, ref = np.array([410.0, 395.0, 420.0, 380.0, 450.0]), np.array([420.0, 400.0, 435.0, 385.0, 440.0])
    r = agreement_icc(dev, ref)
    sd = np.concatenate([dev, ref]).std(ddof=1)
    assert r["sem"] == pytest.approx(sd * math.sqrt(1 - r["icc"]))
    assert r["mdc"] == pytest.approx(1.96 * math.sqrt(2) * r["sem"])
    assert r["mdc_ci"][0] < r["mdc"] < r["mdc_ci"][1] and r["icc_ci"][0] < r["icc"] < r["icc_ci"][1]
    assert agreement_icc(ref, ref)["icc"] == 1.0


def test_a_constant_error_has_no_slope_to_test_and_zero_width_limits() -> None:
    out = bland_altman([290.0, 310.0, 350.0], [300.0, 320.0, 360.0])
    assert out["bias"] == -10.0 and out["loa"] == {"lower": -10.0, "upper": -10.0}
    assert out["proportional_bias"]["p"] is None and not out["proportional_bias"]["present"]


def test_fewer_than_three_nights_is_refused() -> None:
    with pytest.raises(ValueError, match="3 nights"):
        bland_altman([1.0, 2.0], [1.0, 2.0])



def test_limits_at_a_reference_value_follow_the_chosen_method() -> None:
    reference = np.array([50.0, 80.0, 120.0, 180.0, 250.0, 330.0, 420.0, 520.0])
    g = bland_altman(reference * np.array([0.9, 1.1] * 4) + 5, reference)
    r, x = g["regression"], np.array([100.0, 400.0])
    bias, lower, upper = limits_at(g, x, "regression")
    assert upper - bias == pytest.approx(r["agreement"] * (r["loa_intercept"] + r["loa_slope"] * x))
    bias, lower, upper = limits_at(g, x, "log")
    assert upper - bias == pytest.approx(g["log"]["slope"] * x)
    assert limits_at(g, x, "parametric")[1] == pytest.approx([g["loa"]["lower"]] * 2)
