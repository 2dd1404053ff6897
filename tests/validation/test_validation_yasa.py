"""The report's numbers against YASA's own evaluation framework on the same nights (issue 56).

YASA (``yasa.evaluation``, from yasa#78) is the maintained Python port of Menghini et al.'s framework. Here the nights
go to YASA as YASA hypnograms, YASA computes every sleep statistic and agreement itself, and the report's numbers
must be the same: kappa, accuracy and each stage's numbers (``EpochByEpochAgreement``), PABAK (from YASA's
accuracy), and each measure's bias, limits (parametric, regression, log) and their CIs (``SleepStatsAgreement``).
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from passport_kit.validation import Night, method_report
from tests.validation.test_validation_report import CLASSES, scored_night

yasa = pytest.importorskip("yasa")
from yasa.evaluation import EpochByEpochAgreement, SleepStatsAgreement  # noqa: E402

#: Our class names → YASA's stage strings.
YASA_STAGES = {"W": "WAKE", "N1": "N1", "N2": "N2", "N3": "N3", "REM": "REM"}
#: Our measure keys → YASA's sleep statistics (REM latency: YASA's counts from the record's start, ours from sleep
#: onset: Lat_REM − SOL).
YASA_STATS = {"TST": "TST", "SE": "SE", "SOL": "SOL", "WASO": "WASO", "W_min": "WAKE", "N1_min": "N1",
              "N2_min": "N2", "N3_min": "N3", "REM_min": "REM"}


def device_with_errors(reference: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Return a device that misstages a random share of epochs (each night a different amount)."""
    device = reference.copy()
    wrong = rng.random(reference.size) < rng.uniform(0.05, 0.3)
    device[wrong] = rng.integers(0, 5, int(wrong.sum()))
    device[:int(rng.integers(30, 50))] = 0  # a device that sees a later sleep onset: SOL differs too
    return device


@pytest.fixture(scope="module")
def nights() -> list[Night]:
    rng = np.random.default_rng(56)
    return [Night(name=f"n{i}", reference=(r := scored_night(30 + i, hours=3 + i % 3)), device=device_with_errors(r, rng))
            for i in range(8)]


def _hypnogram(codes: np.ndarray, scorer: str) -> object:
    return yasa.Hypnogram([YASA_STAGES[CLASSES[k]] for k in codes], n_stages=5, freq="30s", scorer=scorer)


@pytest.fixture(scope="module")
def both(nights: list[Night]) -> tuple[dict, EpochByEpochAgreement]:
    ebe = EpochByEpochAgreement([_hypnogram(n.reference, "reference") for n in nights],
                                [_hypnogram(n.device, "device") for n in nights])
    return method_report("device", nights, CLASSES), ebe


def test_epoch_by_epoch_numbers_are_yasas(both: tuple[dict, EpochByEpochAgreement]) -> None:
    report, ebe = both
    per_night = ebe.get_agreement()
    ours = [n["epoch_by_epoch"] for n in report["nights"]]
    assert [a["kappa"] for a in ours] == pytest.approx(per_night["kappa"].tolist(), abs=1e-12)
    assert [a["accuracy"] for a in ours] == pytest.approx((per_night["accuracy"] / 100).tolist(), abs=1e-12)
    pooled = ebe.get_agreement(pooled=True)
    assert report["pooled"]["kappa"] == pytest.approx(pooled["kappa"], abs=1e-12)
    k = len(CLASSES)
    assert report["pooled"]["pabak"] == pytest.approx((k * pooled["accuracy"] / 100 - 1) / (k - 1), abs=1e-12)
    by_stage = ebe.get_agreement_bystage()
    for i, night in enumerate(report["nights"]):
        for ours_name, theirs in (("sensitivity", "recall"), ("ppv", "precision"), ("specificity", "specificity"),
                                  ("npv", "npv")):
            for stage in CLASSES:
                value = night["epoch_by_epoch"]["stages"][stage][ours_name]
                expected = by_stage.loc[(YASA_STAGES[stage], i + 1), theirs] / 100
                assert value == pytest.approx(expected, abs=1e-12), (night["night"], stage, ours_name)


def _yasa_summary(ebe: EpochByEpochAgreement) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return YASA's own summary (parametric CIs, log limits) and assumptions, REM latency counted from sleep onset."""
    logging.getLogger("yasa").setLevel(logging.ERROR)
    stats = ebe.get_sleep_stats()
    stats["REM_latency"] = stats["Lat_REM"] - stats["SOL"]
    ref, dev = stats.loc["reference"], stats.loc["device"]
    keep = [*YASA_STATS.values(), "REM_latency"]
    ssa = SleepStatsAgreement(ref[keep], dev[keep], ref_scorer="reference", obs_scorer="device", log_transform=True)
    return ssa.summary(ci_method="param"), ssa.assumptions


def _same(expected: object) -> object:
    """Return ``pytest.approx`` to YASA's precision: it rounds its sleep statistics (SE) to 4 decimals."""
    return pytest.approx(expected, rel=1e-4, abs=1e-4)


def test_bias_limits_and_their_cis_are_yasas(both: tuple[dict, EpochByEpochAgreement]) -> None:
    report, ebe = both
    summary, assumptions = _yasa_summary(ebe)
    checked = 0
    for ours_key in [*YASA_STATS, "REM_latency"]:
        g, s = report["discrepancy"][ours_key], summary.loc[YASA_STATS.get(ours_key, ours_key)]
        assert g["n"] == 8
        # Parametric: bias and limits, each with its CI.
        assert g["bias"] == _same(s[("bias_mean", "center")])
        assert g["bias_ci"] == _same([s[("bias_mean", "lower")], s[("bias_mean", "upper")]])
        for side in ("lower", "upper"):
            assert g["loa"][side] == _same(s[(f"loa_{side}", "center")])
            assert g["loa_ci"][side] == _same([s[(f"loa_{side}", "lower")], s[(f"loa_{side}", "upper")]])
        # Regression: the bias line and the limits' line, with CIs, and the parallel limits' half-width.
        r = g["regression"]
        for ours, theirs in (("bias_intercept", "bias_intercept"), ("bias_slope", "bias_slope"),
                             ("loa_intercept", "loa_intercept"), ("loa_slope", "loa_slope"),
                             ("halfwidth", "loa_halfwidth")):
            assert r[ours] == _same(s[(theirs, "center")])
            assert r[f"{ours}_ci"] == _same([s[(theirs, "lower")], s[(theirs, "upper")]])
        # Log (Euser): the slope of the limits and its CI.
        assert g["log"]["slope"] == _same(s[("loa_log_slope", "center")])
        assert g["log"]["slope_ci"] == _same([s[("loa_log_slope", "lower")], s[("loa_log_slope", "upper")]])
        a = assumptions.loc[YASA_STATS.get(ours_key, ours_key)]
        assert g["proportional_bias"]["present"] is not bool(a[("constant_bias", "passed")])
        assert g["spread_changes"]["present"] is not bool(a[("homoscedastic", "passed")])
        checked += 1
    assert checked == 10
