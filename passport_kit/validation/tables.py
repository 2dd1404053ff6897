"""The validation numbers as flat table rows (one CSV each): epoch by epoch, error matrices, discrepancy.

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
                value = (n["discrepancy"] or {}).get(measure, {})
                rows.append({"method": r["method"], "night": n["night"], "measure": measure, "unit": unit,
                             "device": value.get("device"), "reference": value.get("reference"),
                             "difference": value.get("difference"), "withheld": n["discrepancy_withheld"]})
    return rows


def group_discrepancy_rows(reports: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return one row per method × measure: the Bland–Altman numbers, flattened (or why they are withheld)."""
    rows = []
    for r in reports:
        for measure, g in r["discrepancy"].items():
            row: dict[str, Any] = {"method": r["method"], "measure": measure, "unit": MEASURES[measure], "n": g["n"]}
            if "bias" in g:
                log = g["log_scale"] or {}
                row |= {k: g[k] for k in ("device_mean", "device_sd", "reference_mean", "reference_sd", "bias")}
                row |= {"bias_ci_low": g["bias_ci"][0], "bias_ci_high": g["bias_ci"][1], "sd": g["sd"],
                        "loa_lower": g["loa"]["lower"], "loa_lower_ci_low": g["loa_ci"]["lower"][0],
                        "loa_lower_ci_high": g["loa_ci"]["lower"][1], "loa_upper": g["loa"]["upper"],
                        "loa_upper_ci_low": g["loa_ci"]["upper"][0], "loa_upper_ci_high": g["loa_ci"]["upper"][1],
                        "proportional_slope": g["proportional_bias"]["slope"],
                        "proportional_p": g["proportional_bias"]["p"],
                        "proportional_bias": g["proportional_bias"]["present"],
                        "spread_slope": g["spread_grows"]["slope"], "spread_p": g["spread_grows"]["p"],
                        "spread_grows": g["spread_grows"]["present"], "log_ratio": log.get("ratio"),
                        "log_loa_lower": log.get("loa", {}).get("lower"),
                        "log_loa_upper": log.get("loa", {}).get("upper")}
            row["withheld"] = g.get("withheld") or g.get("log_scale_note")
            rows.append(row)
    return rows


__all__ = ["POOLED", "confusion_rows", "epoch_rows", "group_discrepancy_rows", "night_discrepancy_rows"]
