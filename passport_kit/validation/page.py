"""The validation report as one self-contained HTML page: tables, and figures embedded as base64 PNG (opens offline).

No script, no stylesheet or font fetched: a team can attach the file to a report or open it on a machine without a
network. Numbers are the ones of ``validation.json``, rounded for reading (3 significant digits).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from passport_kit.validation.epochs import STAGE_METRICS
from passport_kit.validation.nights import MEASURE_NAMES, MEASURES, MIN_HOURS, measure_label

CITATION = ("Menghini L, Cellini N, Goldstone A, Baker FC, de Zambotti M. A standardized framework for testing the "
            "performance of sleep-tracking technology: step-by-step guidelines and open-source code. SLEEP 2021;44(2):"
            "zsaa170. doi:10.1093/sleep/zsaa170")

#: One line per number, the same words as docs/onboarding.md's section on the validation report.
GLOSSARY: dict[str, str] = {
    "error matrix": "epochs the scorer gave a stage (rows) by the stage the device gave them (columns); "
                    "proportions: each row divided by its total",
    "sensitivity": "share of the scorer's epochs of a stage that the device also put in that stage",
    "specificity": "share of the scorer's epochs of the other stages that the device kept out of that stage",
    "PPV": "share of the device's epochs of a stage that the scorer also put in that stage",
    "NPV": "share of the device's epochs of the other stages that the scorer also kept out of that stage",
    "accuracy": "share of epochs on which device and scorer agree",
    "Cohen's κ": "agreement beyond the agreement expected by chance from each side's stage shares (1: perfect, 0: "
                 "chance)",
    "PABAK": "κ with chance fixed at 1/K (K stages): (K · accuracy − 1)/(K − 1); per stage, 2 · accuracy − 1",
    "bias": "mean of device − reference over nights, with its 95 % CI (t distribution)",
    "limits of agreement": "bias ± 1.96 SD of the differences: where 95 % of a night's differences should fall, "
                           "each with its 95 % CI (± t · SD · √(3/n)); computed by YASA's SleepStatsAgreement",
    "proportional bias": "the differences regressed on the reference's value; present when p < 0.05 and the "
                         "reference explains more than 10 % of their variance (R² > 0.1, YASA's gate)",
    "spread": "the absolute residuals of that regression on the reference's value; the spread grows or shrinks "
              "when p < 0.05 and the fitted spread changes by more than 1.5× across the range (YASA's gate)",
    "limits the tests chose": "parametric where the bias and spread are constant; the bias line ± 1.96 SD of its "
                              "residuals where only the bias is proportional; bias ± 2.46 (c0 + c1 · reference) "
                              "where the spread changes (Bland and Altman 1999; Menghini et al. 2021)",
    "log limits": "Euser et al. 2008: bias ± slope · reference, the slope 2(e^z − 1)/(e^z + 1), z = 1.96 SD of "
                  "ln(device / reference); not given where a value is 0",
    "ICC": "intraclass correlation of device and reference values, two-way random effects, absolute agreement, "
           "single measurement (ICC(A,1)), with its F-based 95 % CI (McGraw and Wong 1996)",
    "MDC": "minimal detectable change, 1.96 · √2 · SEM with SEM = SD · √(1 − ICC) (Weir 2005): the smallest change "
           "between two nights of one person beyond the device's disagreement with the reference; its CI is the "
           "ICC's CI carried through the same formula",
}

_STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
          "table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:13px}"
          "th,td{border:1px solid #bbb;padding:3px 7px;text-align:right}th{background:#eee}"
          "td:first-child,th:first-child{text-align:left}.note{color:#8a4b00}img{max-width:100%}")


def fmt(value: Any, digits: int = 3) -> str:
    """Return ``value`` for a table cell: floats to ``digits`` significant digits, None as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return html.escape(str(value))


def _interval(ci: Sequence[float]) -> str:
    """Return a CI as ``[low, high]``."""
    return f"[{fmt(ci[0])}, {fmt(ci[1])}]"


class _Raw(str):
    """A cell already written as HTML (an interval, a mean ± SD)."""


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Return an HTML table (cells through :func:`fmt`; a header cell is escaped text)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c if isinstance(c, _Raw) else fmt(c)}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _mean_sd(spread: dict[str, Any]) -> _Raw:
    """Return ``mean ± SD`` of a per-night spread."""
    return _Raw(f"{fmt(spread['mean'])} ± {fmt(spread['sd'])}")


def _epoch_section(r: dict[str, Any], confusion_png: str | None) -> str:
    """Return the epoch-by-epoch part of one method: pooled summary, stages, error matrices, nights."""
    pooled, spread, classes = r["pooled"], r["per_night_spread"], r["classes"]
    k = spread["kappa"]
    parts = ["<h3>Epoch by epoch</h3>", table(
        ["epochs", "accuracy", "κ", "PABAK", "nights", "per-night κ mean ± SD", "per-night κ range"],
        [[pooled["epochs"], pooled["accuracy"], pooled["kappa"], pooled["pabak"], k["n"], _mean_sd(k),
          _Raw(f"{fmt(k['min'])} – {fmt(k['max'])}")]])]
    parts.append("<p>Per stage against the others, pooled (per-night mean ± SD below each):</p>")
    parts.append(table(["stage", *STAGE_METRICS], [
        [s, *[_Raw(f"{fmt(pooled['stages'][s][m])}<br><small>{_mean_sd(spread['stages'][s][m])}</small>")
              for m in STAGE_METRICS]] for s in classes]))
    counts = [[s, *pooled["confusion"][i]] for i, s in enumerate(classes)]
    shares = [[s, *(pooled["proportions"][i] or [None] * len(classes))] for i, s in enumerate(classes)]
    parts += ["<p>Error matrix, pooled (scorer's stage down, device's across): counts, then proportions of each row"
              "</p>", table(["scorer \\ device", *classes], counts), table(["scorer \\ device", *classes], shares)]
    if confusion_png:
        parts.append(f'<img alt="error matrix of {html.escape(r["method"])}" src="data:image/png;base64,'
                     f'{confusion_png}">')
    parts.append("<p>Per night:</p>" + table(["night", "hours", "epochs", "accuracy", "κ", "PABAK"], [
        [n["night"], n["hours"], n["epoch_by_epoch"]["epochs"], n["epoch_by_epoch"]["accuracy"],
         n["epoch_by_epoch"]["kappa"], n["epoch_by_epoch"]["pabak"]] for n in r["nights"]]))
    return "".join(parts)


def _ci(value: Any, ci: Sequence[Any] | None) -> _Raw:
    """Return ``value [low, high]`` (the value alone where the CI is absent)."""
    if ci is None or None in ci:
        return _Raw(fmt(value))
    return _Raw(f"{fmt(value)} {_interval(ci)}")


def _chosen_limits(g: dict[str, Any]) -> _Raw:
    """Return the limits the assumption tests chose, as the formula a reader can apply to a reference value."""
    r, how = g["regression"], g["limits_chosen"]
    if how == "parametric" or r is None:
        return _Raw(f"{fmt(g['loa']['lower'])} to {fmt(g['loa']['upper'])} <small>(parametric)</small>")
    bias = (f"{fmt(r['bias_intercept'])} + {fmt(r['bias_slope'])} · ref" if g["proportional_bias"]["present"]
            else fmt(g["bias"]))
    if how == "parallel":
        return _Raw(f"{bias} ± {fmt(r['halfwidth'])} <small>(regression bias)</small>")
    return _Raw(f"{bias} ± {fmt(r['agreement'])} ({fmt(r['loa_intercept'])} + {fmt(r['loa_slope'])} · ref) "
                "<small>(regression)</small>")


def _spread_words(g: dict[str, Any]) -> _Raw:
    """Return what the spread test found, in words: grows, shrinks, or no material change (with slope and p)."""
    sp = g["spread_changes"]
    if sp["p"] is None:
        return _Raw("–")
    numbers = f"slope {fmt(sp['slope'])}, p = {fmt(sp['p'], 2)}"
    if sp["present"]:
        return _Raw(f"{sp['direction']} with the reference ({numbers})")
    if sp["p"] < 0.05:  # significant but under YASA's effect-size gate: say which way, and why it does not count
        return _Raw(f"{sp['direction'] or 'changes'} slightly: significant, but the fitted spread changes by less "
                    f"than 1.5× ({numbers})")
    return _Raw(f"constant ({numbers})")


def _group_row(measure: str, g: dict[str, Any]) -> list[Any]:
    """Return one measure's row of the group discrepancy table."""
    if "bias" not in g:
        return [measure_label(measure), g["n"], _Raw(f'<span class="note">{html.escape(g["withheld"])}</span>'),
                *[""] * 9]
    pb = g["proportional_bias"]
    log = g["log"]
    return [measure_label(measure), g["n"],
            _Raw(f"{fmt(g['device_mean'])} ± {fmt(g['device_sd'])}"),
            _Raw(f"{fmt(g['reference_mean'])} ± {fmt(g['reference_sd'])}"),
            _ci(g["bias"], g["bias_ci"]),
            _Raw(f"{_ci(g['loa']['lower'], g['loa_ci']['lower'])}<br>{_ci(g['loa']['upper'], g['loa_ci']['upper'])}"),
            _chosen_limits(g),
            _Raw(f"bias ± {_ci(log['slope'], log['slope_ci'])} · ref") if log else _Raw(
                f"<small>{html.escape(g['note'] or '–')}</small>"),
            _Raw("–" if pb["p"] is None else f"{'yes' if pb['present'] else 'no'} (slope {fmt(pb['slope'])}, "
                                             f"p = {fmt(pb['p'], 2)})"),
            _spread_words(g), _ci(g["icc"], g["icc_ci"]), _ci(g["mdc"], g["mdc_ci"])]


def _night_rows(r: dict[str, Any]) -> list[list[Any]]:
    """Return one row per night: device / reference (difference) of each measure, '–' where withheld."""
    rows = []
    for n in r["nights"]:
        cells = []
        for m in MEASURES:
            v = n["discrepancy"].get(m)
            cells.append("–" if v is None else _Raw(f"{fmt(v['device'])} / {fmt(v['reference'])} "
                                                    f"<small>({fmt(v['difference'])})</small>"))
        rows.append([n["night"], *cells])
    return rows


def _discrepancy_section(r: dict[str, Any], bland_altman_png: str | None) -> str:
    """Return the discrepancy part of one method: group table, Bland–Altman figure, per-night values."""
    parts = ["<h3>Discrepancy of the sleep measures (device − reference)</h3>", table(
        ["measure", "nights", "device mean ± SD", "reference mean ± SD", "bias [95 % CI]",
         "limits of agreement [95 % CIs]", "limits the tests chose", "log limits (Euser) [95 % CI]",
         "proportional bias", "spread", "ICC [95 % CI]", "MDC [95 % CI]"],
        [_group_row(m, g) for m, g in r["discrepancy"].items()])]
    if bland_altman_png:
        parts.append(f'<img alt="Bland–Altman plots of {html.escape(r["method"])}" src="data:image/png;base64,'
                     f'{bland_altman_png}">')
    parts.append("<p>Per night: device / reference (difference)</p>" + table(
        ["night", *[MEASURE_NAMES[m] for m in MEASURES]], _night_rows(r)))
    withheld = [f"<li>{html.escape(n['night'])}: {html.escape(n['discrepancy_withheld'])}</li>"
                for n in r["nights"] if n["discrepancy_withheld"]]
    if withheld:
        parts.append(f'<p class="note">Whole-night measures withheld (records under {MIN_HOURS:g} h):</p><ul>'
                     + "".join(withheld) + "</ul>")
    return "".join(parts)


def _subgroup_section(r: dict[str, Any]) -> str:
    """Return the agreement by subgroup (a dataset column: sex, age group, site), empty when no night has one."""
    if not r.get("subgroups"):
        return ""
    rows = []
    for column, values in r["subgroups"].items():
        for value, g in values.items():
            tst = g["TST"]
            rows.append([column, value, g["nights"], g["epochs"], g["accuracy"], g["kappa"], g["pabak"],
                         _ci(tst["bias"], tst["bias_ci"]) if "bias" in tst else _Raw(
                             f'<small class="note">{html.escape(tst["withheld"])}</small>'),
                         _Raw(f"{fmt(tst['loa']['lower'])} to {fmt(tst['loa']['upper'])}") if "bias" in tst else ""])
    return "<h3>By subgroup</h3>" + table(
        ["column", "group", "nights", "epochs", "accuracy", "κ", "PABAK", "TST bias [95 % CI]", "TST limits"], rows)


def method_title(r: dict[str, Any]) -> str:
    """Return a method's name with what it shipped: 'passport-small-mlp → band power (12/12 folds)'."""
    return r["method"] + (f" → {r['shipped']}" if r.get("shipped") else "")


def _methods_table(reports: Sequence[dict[str, Any]]) -> str:
    """Return the side-by-side table of every method: the first table a reader looks for."""
    rows = []
    for i, r in enumerate(reports):
        tst, k = r["discrepancy"]["TST"], r["per_night_spread"]["kappa"]
        has = "bias" in tst
        rows.append([_Raw(f'<a href="#m{i}">{html.escape(method_title(r))}</a>'), len(r["nights"]),
                     r["pooled"]["epochs"], r["pooled"]["accuracy"], r["pooled"]["kappa"], r["pooled"]["pabak"],
                     _mean_sd(k) if k["n"] else "–", _ci(tst["bias"], tst["bias_ci"]) if has else "–",
                     _Raw(f"{fmt(tst['loa']['lower'])} to {fmt(tst['loa']['upper'])}") if has else "–",
                     _ci(tst["icc"], tst["icc_ci"]) if has else "–", tst["mdc"] if has else None])
    return "<h2>Methods side by side</h2>" + table(
        ["method", "nights", "epochs", "accuracy", "κ (pooled)", "PABAK", "per-night κ mean ± SD",
         "TST bias, min [95 % CI]", "TST limits of agreement, min", "TST ICC [95 % CI]", "TST MDC, min"], rows)


def _hypnogram_section(hypnograms: dict[str, str]) -> str:
    """Return each night's hypnograms (reference scorer and every method), as embedded PNGs."""
    if not hypnograms:
        return ""
    return "<h2>Hypnograms, night by night</h2>" + "".join(
        f'<h4>{html.escape(name)}</h4><img alt="hypnograms of {html.escape(name)}" src="data:image/png;base64,{png}">'
        for name, png in hypnograms.items())


def validation_page(reports: Sequence[dict[str, Any]], figures: dict[str, dict[str, str | None]], *,
                    context: str, hypnograms: dict[str, str] | None = None) -> str:
    """Return the HTML page of every method's report, opening with the methods side by side.

    ``figures``: per method, ``confusion`` and ``bland_altman`` as base64 PNG (None: no figure); ``hypnograms``:
    per night, its hypnograms as base64 PNG; ``context``: one line on what was compared (the data, the protocol,
    the reference).
    """
    body = [f"<h1>Device validation report</h1><p>{html.escape(context)}</p>", _methods_table(reports),
            f"<p>Numbers and layout follow the framework of {html.escape(CITATION)}; the group discrepancy is YASA's "
            "(yasa.evaluation.SleepStatsAgreement, parametric CIs).</p>"]
    for i, r in enumerate(reports):
        fig = figures.get(r["method"], {})
        body += [f'<h2 id="m{i}">{html.escape(method_title(r))}</h2>', _epoch_section(r, fig.get("confusion")),
                 _discrepancy_section(r, fig.get("bland_altman")), _subgroup_section(r)]
    body.append(_hypnogram_section(hypnograms or {}))
    body.append("<h2>What each number is</h2><ul>" + "".join(
        f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in GLOSSARY.items()) + "</ul>")
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Device validation report</title>"
            f"<style>{_STYLE}</style></head><body>{''.join(body)}</body></html>\n")


__all__ = ["CITATION", "GLOSSARY", "method_title", "validation_page"]
