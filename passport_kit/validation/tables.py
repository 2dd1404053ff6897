"""The validation numbers as flat table rows (one CSV each): methods side by side, epoch by epoch, error matrices,
discrepancy (per night and per group), subgroups.

Every function takes :func:`~passport_kit.validation.nights.method_report` results and returns rows for
:func:`passport_kit.atomic_io.write_table`; ``night`` is ``pooled`` on the rows of all nights together.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from passport_kit.validation.epochs import STAGE_METRICS
from passport_kit.validation.nights import MEASURES

POOLED = "pooled"


def _agreements(report: dict[str, Any]) -> list[tuple[str, float | None, dict[str, Any]]]:
    """Return (night, hours, agreement) for every night of ``report``, then the pooled one."""
    return [(n["night"], n["hours"], n["epoch_by_epoch"]) for n in report["nights"]] + [
        (POOLED, sum(n["hours"] for n in report["nights"]), report["pooled"])]


def epoch_rows(reports: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return one row per method × night (and pooled): epochs, accuracy, kappa, PABAK, each stage's numbers."""
    return [{"method": r["method"], "night": night, "hours": hours, "epochs": a["epochs"], "accuracy": a["accuracy"],
             "kappa": a["kappa"], "pabak": a["pabak"],
             **{f"{s}_{m}": a["stages"][s][m] for s in r["classes"] for m in STAGE_METRICS}}
            for r in reports for night, hours, a in _agreements(r)]


def confusion_rows(reports: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return one row per method × night × reference stage: counts (``n_<stage>``) and proportions (``p_<stage>``)."""
    rows = []
    for r in reports:
        for night, _, a in _agreements(r):
            for i, stage in enumerate(r["classes"]):
                shares = a["proportions"][i] or [None] * len(r["classes"])
                rows.append({"method": r["method"], "night": night, "reference": stage,
                             **{f"n_{s}": a["confusion"][i][j] for j, s in enumerate(r["classes"])},
                             **{f"p_{s}": shares[j] for j, s in enumerate(r["classes"])}})
    return rows


def night_discrepancy_rows(reports: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return one row per method × night × measure: device, reference, difference (or why it is withheld)."""
    rows = []
    for r in reports:
        for n in r["nights"]:
            for measure, unit in MEASURES.items():
                value = n["discrepancy"].get(measure)
                rows.append({"method": r["method"], "night": n["night"], "measure": measure, "unit": unit,
                             "device": (value or {}).get("device"), "reference": (value or {}).get("reference"),
                             "difference": (value or {}).get("difference"),
                             "withheld": None if value is not None else n["discrepancy_withheld"]})
    return rows


def _ci_columns(prefix: str, ci: Sequence[float | None] | None) -> dict[str, float | None]:
    """Return ``{prefix_ci_low, prefix_ci_high}`` of a CI (None where absent)."""
    low, high = ci if ci is not None else (None, None)
    return {f"{prefix}_ci_low": low, f"{prefix}_ci_high": high}


def _group_columns(g: dict[str, Any]) -> dict[str, Any]:
    """Return one measure's group discrepancy flattened: parametric, regression and log limits, tests, ICC, MDC."""
    row = {k: g[k] for k in ("device_mean", "device_sd", "reference_mean", "reference_sd", "bias", "sd")}
    row |= _ci_columns("bias", g["bias_ci"]) | {"loa_lower": g["loa"]["lower"], "loa_upper": g["loa"]["upper"]}
    row |= _ci_columns("loa_lower", g["loa_ci"]["lower"]) | _ci_columns("loa_upper", g["loa_ci"]["upper"])
    row |= {"proportional_slope": g["proportional_bias"]["slope"], "proportional_p": g["proportional_bias"]["p"],
            "proportional_r2": g["proportional_bias"]["r2"], "proportional_bias": g["proportional_bias"]["present"],
            "spread_slope": g["spread_changes"]["slope"], "spread_p": g["spread_changes"]["p"],
            "spread_sd_ratio": g["spread_changes"]["sd_ratio"], "spread_changes": g["spread_changes"]["present"],
            "spread_direction": g["spread_changes"]["direction"], "limits_chosen": g["limits_chosen"]}
    regression = g["regression"] or {}
    for key in ("bias_intercept", "bias_slope", "loa_intercept", "loa_slope", "halfwidth"):
        row[f"regr_{key}"] = regression.get(key)
        row |= _ci_columns(f"regr_{key}", regression.get(f"{key}_ci"))
    log = g["log"] or {}
    row |= {"log_slope": log.get("slope"), **_ci_columns("log_slope", log.get("slope_ci"))}
    row |= {"icc": g["icc"], **_ci_columns("icc", g["icc_ci"]), "sem": g["sem"], "mdc": g["mdc"],
            **_ci_columns("mdc", g["mdc_ci"])}
    return row


def group_discrepancy_rows(reports: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return one row per method × measure: the group discrepancy, flattened (or why it is withheld)."""
    rows = []
    for r in reports:
        for measure, g in r["discrepancy"].items():
            row: dict[str, Any] = {"method": r["method"], "measure": measure, "unit": MEASURES[measure], "n": g["n"]}
            if "bias" in g:
                row |= _group_columns(g)
            row["withheld"] = g.get("withheld") or g.get("note")
            rows.append(row)
    return rows


def method_rows(reports: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return one row per method, side by side: what it shipped, pooled kappa, PABAK, accuracy, the per-night kappa,
    and the TST bias, limits and ICC."""
    rows = []
    for r in reports:
        tst, k = r["discrepancy"]["TST"], r["per_night_spread"]["kappa"]
        row = {"method": r["method"], "shipped": r.get("shipped"), "nights": len(r["nights"]),
               "epochs": r["pooled"]["epochs"], "accuracy": r["pooled"]["accuracy"], "kappa": r["pooled"]["kappa"],
               "pabak": r["pooled"]["pabak"], "night_kappa_mean": k["mean"], "night_kappa_sd": k["sd"],
               "tst_nights": tst["n"]}
        if "bias" in tst:
            row |= {"tst_bias": tst["bias"], **_ci_columns("tst_bias", tst["bias_ci"]),
                    "tst_loa_lower": tst["loa"]["lower"], "tst_loa_upper": tst["loa"]["upper"], "tst_icc": tst["icc"],
                    **_ci_columns("tst_icc", tst["icc_ci"]), "tst_mdc": tst["mdc"]}
        rows.append(row)
    return rows


def subgroup_rows(reports: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return one row per method × dataset column × value: nights, pooled agreement and the TST bias and limits."""
    rows = []
    for r in reports:
        for column, values in r.get("subgroups", {}).items():
            for value, g in values.items():
                tst = g["TST"]
                rows.append({"method": r["method"], "column": column, "value": value, "nights": g["nights"],
                             "epochs": g["epochs"], "accuracy": g["accuracy"], "kappa": g["kappa"], "pabak": g["pabak"],
                             "tst_bias": tst.get("bias"), "tst_loa_lower": tst.get("loa", {}).get("lower"),
                             "tst_loa_upper": tst.get("loa", {}).get("upper"), "withheld": tst.get("withheld")})
    return rows


__all__ = ["POOLED", "confusion_rows", "epoch_rows", "group_discrepancy_rows", "method_rows", "night_discrepancy_rows",
           "subgroup_rows"]
