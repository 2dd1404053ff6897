"""The validation report as one self-contained HTML page: tables, and figures embedded as base64 PNG (opens offline).

No script, no stylesheet or font fetched: a team can attach the file to a report or open it on a machine without a
network. Numbers are the ones of ``validation.json``, rounded for reading (3 significant digits).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from passport_kit.validation.epochs import STAGE_METRICS
from passport_kit.validation.nights import MEASURES, MIN_HOURS

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
                           "each with its 95 % CI (± t · SD · √(3/n))",
    "proportional bias": "slope of the differences regressed on the pair means; present when p < 0.05",
    "spread grows": "slope of the absolute residuals on the means; where positive at p < 0.05, the limits are also "
                    "given on the log scale as ratios device / reference",
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


def _group_row(measure: str, g: dict[str, Any]) -> list[Any]:
    """Return one measure's row of the group discrepancy table."""
    if "bias" not in g:
        return [measure, g["n"], _Raw(f'<span class="note">{html.escape(g["withheld"])}</span>'), *[""] * 7]
    log = g["log_scale"]
    log_cell = (_Raw(f"{fmt(log['ratio'])} [{fmt(log['loa']['lower'])}, {fmt(log['loa']['upper'])}]") if log
                else _Raw(f"<small>{html.escape(g['log_scale_note'])}</small>"))
    return [f"{measure} ({MEASURES[measure]})", g["n"],
            _Raw(f"{fmt(g['device_mean'])} ± {fmt(g['device_sd'])}"),
            _Raw(f"{fmt(g['reference_mean'])} ± {fmt(g['reference_sd'])}"),
            _Raw(f"{fmt(g['bias'])} {_interval(g['bias_ci'])}"),
            _Raw(f"{fmt(g['loa']['lower'])} {_interval(g['loa_ci']['lower'])}"),
            _Raw(f"{fmt(g['loa']['upper'])} {_interval(g['loa_ci']['upper'])}"),
            _Raw(f"{fmt(g['proportional_bias']['slope'])} (p = {fmt(g['proportional_bias']['p'], 2)})"),
            _Raw(f"{fmt(g['spread_grows']['slope'])} (p = {fmt(g['spread_grows']['p'], 2)})"), log_cell]


def _discrepancy_section(r: dict[str, Any], bland_altman_png: str | None) -> str:
    """Return the discrepancy part of one method: group table, Bland–Altman figure, per-night values."""
    parts = ["<h3>Discrepancy (device − reference)</h3>"]
    if r["discrepancy"]["TST"]["n"] == 0:  # TST is defined on every long night: none, and ten rows would say so
        parts.append(f'<p class="note">No night of {MIN_HOURS:g} h or more: no group discrepancy.</p>')
    else:
        parts.append(table(
            ["measure", "nights", "device mean ± SD", "reference mean ± SD", "bias [95 % CI]", "lower limit [95 % CI]",
             "upper limit [95 % CI]", "proportional bias: slope (p)", "spread grows: slope (p)",
             "log scale: ratio [limits]"], [_group_row(m, g) for m, g in r["discrepancy"].items()]))
    if bland_altman_png:
        parts.append(f'<img alt="Bland–Altman plots of {html.escape(r["method"])}" src="data:image/png;base64,'
                     f'{bland_altman_png}">')
    rows, withheld = [], []
    for n in r["nights"]:
        if n["discrepancy"] is None:
            withheld.append(f"<li>{html.escape(n['night'])}: {html.escape(n['discrepancy_withheld'])}</li>")
            continue
        rows.append([n["night"], *[_Raw(f"{fmt(v['device'])} / {fmt(v['reference'])} "
                                        f"<small>({fmt(v['difference'])})</small>") for v in n["discrepancy"].values()]])
    if rows:
        parts.append("<p>Per night: device / reference (difference)</p>" + table(["night", *MEASURES], rows))
    if withheld:
        parts.append(f'<p class="note">Discrepancy withheld (nights under {MIN_HOURS:g} h):</p><ul>'
                     + "".join(withheld) + "</ul>")
    return "".join(parts)


def validation_page(reports: Sequence[dict[str, Any]], figures: dict[str, dict[str, str | None]], *,
                    context: str) -> str:
    """Return the HTML page of every method's report.

    ``figures``: per method, ``confusion`` and ``bland_altman`` as base64 PNG (None: no figure); ``context``:
    one line on what was compared (the data, the protocol, the reference).
    """
    body = [f"<h1>Device validation report</h1><p>{html.escape(context)}</p>",
            f"<p>Numbers and layout follow the framework of {html.escape(CITATION)}.</p>",
            "<p>Methods: " + ", ".join(f'<a href="#m{i}">{html.escape(r["method"])}</a>'
                                       for i, r in enumerate(reports)) + "</p>"]
    for i, r in enumerate(reports):
        fig = figures.get(r["method"], {})
        body += [f'<h2 id="m{i}">{html.escape(r["method"])}</h2>', _epoch_section(r, fig.get("confusion")),
                 _discrepancy_section(r, fig.get("bland_altman"))]
    body.append("<h2>What each number is</h2><ul>" + "".join(
        f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in GLOSSARY.items()) + "</ul>")
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Device validation report</title>"
            f"<style>{_STYLE}</style></head><body>{''.join(body)}</body></html>\n")


__all__ = ["CITATION", "GLOSSARY", "validation_page"]
