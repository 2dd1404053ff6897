"""Write the validation report of one or more methods into a folder: JSON, CSV tables, PNG figures, one HTML page.

Files (every one written atomically, :mod:`passport_kit.atomic_io`):

- ``validation.json``: every number of every method (:func:`~passport_kit.validation.nights.method_report`);
- ``validation_methods.csv`` (the methods side by side), ``validation_epochs.csv``, ``validation_error_matrix.csv``,
  ``validation_discrepancy_nights.csv``, ``validation_discrepancy.csv``, ``validation_subgroups.csv`` (when nights
  carry a dataset column): the same as tables (:mod:`~passport_kit.validation.tables`);
- ``bland_altman_<method>.png``: the Bland–Altman plots of a method (when a night has its discrepancy);
- ``hypnogram_<night>.png``: a night's hypnograms, the reference scorer's over each method's;
- ``validation.html``: tables and figures in one self-contained page (:mod:`~passport_kit.validation.page`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from passport_kit.atomic_io import atomic_write_bytes, atomic_write_text, write_json, write_table
from passport_kit.validation import tables
from passport_kit.validation.page import CITATION, validation_page


def file_stem(method: str) -> str:
    """Return a method's name as a file-name part ('band power' → 'band-power'): no quoting in shells or URLs."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", method).strip("-") or "method"


def _png(fig: Any) -> bytes:
    """Return ``fig`` as PNG bytes (120 dpi, cropped to what is drawn)."""
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    return buffer.getvalue()


def _hypnograms(folder: Path, reports: Sequence[dict[str, Any]], files: dict[str, Path]) -> dict[str, str]:
    """Write ``hypnogram_<night>.png`` for every night (the scorer's and each method's); return them as base64."""
    import base64

    from passport_kit.validation.figures import hypnogram_figure
    from passport_kit.validation.nights import stage_codes
    from passport_kit.validation.page import method_title

    nights: dict[str, dict[str, Any]] = {}
    for r in reports:
        for n in r["nights"]:
            entry = nights.setdefault(n["night"], {"reference": stage_codes(n["stages"]["reference"]), "devices": {},
                                                   "classes": r["classes"], "epoch_seconds": n["epoch_seconds"]})
            if len(n["stages"]["device"]) == len(entry["reference"]):  # the same night on the same grid
                entry["devices"][method_title(r)] = stage_codes(n["stages"]["device"])
    shown: dict[str, str] = {}
    for name, e in nights.items():
        png = _png(hypnogram_figure(name, e["reference"], e["devices"], e["classes"], epoch_seconds=e["epoch_seconds"]))
        stem = file_stem(name)
        files[f"hypnogram_{stem}"] = atomic_write_bytes(folder / f"hypnogram_{stem}.png", png)
        shown[name] = base64.b64encode(png).decode("ascii")
    return shown


def write_validation(folder: Path | str, reports: Sequence[dict[str, Any]], *, context: str) -> dict[str, Path]:
    """Return the files written into ``folder`` for ``reports`` (one :func:`method_report` per method).

    ``context``: one line the JSON and the page carry, saying what was compared (data, protocol, reference).
    """
    import base64

    from passport_kit.reports import confusion_figure
    from passport_kit.validation.figures import bland_altman_figure

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {"validation_json": write_json(folder / "validation.json", {
        "framework": CITATION, "context": context, "methods": list(reports)})}
    for name, rows in (("methods", tables.method_rows(reports)), ("epochs", tables.epoch_rows(reports)),
                       ("error_matrix", tables.confusion_rows(reports)),
                       ("discrepancy_nights", tables.night_discrepancy_rows(reports)),
                       ("discrepancy", tables.group_discrepancy_rows(reports)),
                       ("subgroups", tables.subgroup_rows(reports))):
        if rows:
            files[f"validation_{name}"] = write_table(folder / f"validation_{name}.csv", rows)
    figures: dict[str, dict[str, str | None]] = {}
    for r in reports:
        stem = file_stem(r["method"])
        confusion = _png(confusion_figure(r["pooled"]["confusion"], r["classes"], title=f"{r['method']} (pooled)"))
        fig = bland_altman_figure(r)
        bland_altman = None if fig is None else _png(fig)
        if bland_altman is not None:
            files[f"bland_altman_{stem}"] = atomic_write_bytes(folder / f"bland_altman_{stem}.png", bland_altman)
        figures[r["method"]] = {k: None if v is None else base64.b64encode(v).decode("ascii")
                                for k, v in (("confusion", confusion), ("bland_altman", bland_altman))}
    hypnograms = _hypnograms(folder, reports, files)
    files["validation_html"] = atomic_write_text(folder / "validation.html", validation_page(
        reports, figures, context=context, hypnograms=hypnograms))
    return files


__all__ = ["file_stem", "write_validation"]
