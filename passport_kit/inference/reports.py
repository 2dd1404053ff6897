"""Prediction's report writers: per-window CSV, BIDS events, EDF+ annotations, channel quality and the hypnogram plot.

Every writer takes the target path first, writes atomically (a temp file in the same folder,
then ``os.replace``), and returns the path, so a crash never leaves a half-written report that
reads as valid. The figures and tables onboarding writes too (confusion, sweep, learning curve,
the figure writer and its formats) live one floor down, in :mod:`passport_kit.reports`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

import numpy as np

from passport_kit.atomic_io import atomic_output, atomic_write_text as write_text, write_json, write_table
from passport_kit.reports import PLOT_FORMATS, save_figure
from passport_kit.sleep.hypnogram import Hypnogram


def window_rows(
    onsets_s: np.ndarray,
    duration_s: float,
    proba: np.ndarray,
    classes: Sequence[str],
    *,
    flagged: np.ndarray | None = None,
    low_confidence: np.ndarray | None = None,
) -> list[dict[str, Any]]:
    """Return one row per window: onset, duration, predicted class, p_<class>, confidence.

    ``proba`` has shape (N, n_classes); ``confidence`` is the largest probability. ``flagged``
    (N,) bool marks windows whose signal quality checks failed (NaN, flat, clipped channels);
    ``low_confidence`` (N,) bool those whose confidence is low
    (:func:`~passport_kit.sleep.hypnogram.low_confidence`).
    """
    pred = np.argmax(proba, axis=1)
    rows = []
    for i, onset in enumerate(np.asarray(onsets_s, dtype=float)):
        row: dict[str, Any] = {"window": i, "onset_s": onset, "duration_s": float(duration_s),
                               "class": classes[pred[i]]}
        row.update({f"p_{c}": float(proba[i, k]) for k, c in enumerate(classes)})
        row["confidence"] = float(proba[i].max())
        if flagged is not None:
            row["flagged"] = int(bool(flagged[i]))
        if low_confidence is not None:
            row["low_confidence"] = int(bool(low_confidence[i]))
        rows.append(row)
    return rows


def write_window_csv(path: Path | str, rows: Sequence[dict[str, Any]]) -> Path:
    """Write the per-window predictions (rows from :func:`window_rows`) as CSV."""
    return write_table(path, rows)


def write_events_tsv(path: Path | str, events: Sequence[dict[str, Any]]) -> Path:
    """Write BIDS ``*_events.tsv`` rows (onset, duration, value, trial_type); return the path."""
    return write_table(path, events, delimiter="\t")


def write_channel_quality(path: Path | str, quality: Any, *, masked_windows: np.ndarray | None = None) -> Path:
    """Write a recording's per-channel quality (a ``ChannelQuality``) as a BIDS-like channels TSV; return the path.

    Columns as ``passport-kit data quality --out`` (name, status, status_description, score,
    bad_window_fraction, statistics); with ``masked_windows`` ``(C,)`` counts, a
    ``masked_windows`` column says in how many windows ``predict`` masked each channel.
    """
    from passport_kit.signals.quality import TABLE_DIGITS

    rows = quality.rows()
    if masked_windows is not None:
        for row, n in zip(rows, masked_windows):
            row["masked_windows"] = int(n)
    return write_table(path, rows, delimiter="\t", digits=TABLE_DIGITS)


def write_edf_annotations(
    path: Path | str, events: Sequence[dict[str, Any]], *, start: datetime | None = None
) -> Path:
    """Write an annotation-only EDF+ file (one annotation per event row); return the path.

    EDFbrowser and ``mne.read_annotations`` open it next to the recording, so a scorer can
    review and edit the staging. The start time is the recording's (EDF stores local time).
    """
    import datetime as dt

    import edfio

    annotations = [
        edfio.EdfAnnotation(float(e["onset"]), float(e["duration"]), str(e["trial_type"]))
        for e in events
    ]
    kwargs: dict[str, Any] = {}
    if start is not None:
        kwargs["starttime"] = start.time().replace(microsecond=0)
        kwargs["recording"] = edfio.Recording(startdate=start.date())
    else:
        kwargs["starttime"] = dt.time(0, 0, 0)
    edf = edfio.Edf([], annotations=annotations, **kwargs)
    with atomic_output(path) as tmp:
        edf.write(tmp)
    return Path(path)


def plot_hypnogram(path: Path | str, hypnogram: Hypnogram, *, reference: Hypnogram | None = None,
                   title: str = "", note: str = "", stage_table: bool = False) -> Path:
    """Draw the hypnogram (step plot, REM in red) above the hypnodensity; write it as ``path``'s suffix says.

    PNG, SVG or PDF (:data:`~passport_kit.reports.PLOT_FORMATS`).

    With ``reference`` (a scorer's hypnogram), it is drawn under the prediction in grey.
    Low-confidence epochs (:meth:`Hypnogram.low_confidence`) are shaded in the hypnogram. The
    time axis is clock time when the hypnogram's ``start`` is known (as the recording stores
    it), else hours from the start; ``note`` (e.g. the sleep statistics) is printed under the title;
    ``stage_table``: the minutes of each stage (and % of sleep) in a row under the time axis.
    """
    from matplotlib.figure import Figure

    has_density = hypnogram.proba is not None
    table = stage_table_text(hypnogram) if stage_table else ""
    below = 0.3 if table else 0.0  # inches for the stage row under the time axis
    heading = title_lines(title, note)
    above = 0.22 + TITLE_LINE_INCHES * max(len(heading), 2)  # inches for the title's lines (two before issue 58)
    height = (5.5 if has_density else 3) + below + above - 0.55
    fig = Figure(figsize=(11, height))
    axes = fig.subplots(2 if has_density else 1, 1, sharex=True, squeeze=False)[:, 0]
    # Fixed margins (in inches, whatever the height) with room for the title's lines, the clock
    # axis and the hypnodensity's legend on the right: cropping to a tight bounding box instead
    # costs a second drawing of the figure, a third of predict's report time on a short night.
    # The legends sit right of the axes, outside the data (issue 34): 1.45 inches for them.
    fig.subplots_adjust(left=0.7 / 11, right=1 - 1.45 / 11, bottom=(0.6 + below) / height,
                        top=1 - above / height, hspace=0.08)
    origin, unit, xlabel = _time_axis(hypnogram)
    hours = origin + hypnogram.onsets_s / unit  # x positions: matplotlib dates, or hours from the start
    step = hypnogram.epoch_seconds / unit
    # Conventional hypnogram order, top to bottom: W, REM, N1, N2, N3 (UNS/ART above W).
    levels = {"ART": 6, "UNS": 5, "W": 4, "REM": 3, "N1": 2, "N2": 1, "N3": 0}
    ax = axes[0]
    # The scorer's line is a wide light band under the prediction: where they agree it still shows.
    for hyp, style in ((reference, dict(color="0.75", lw=6, label="scorer")),
                       (hypnogram, dict(color="k", lw=1.2, label="predicted"))):
        if hyp is None:
            continue
        if not len(hyp):
            continue
        # Repeat the last stage so the final epoch is drawn over its whole duration.
        y = [levels[s] for s in hyp.stages] + [levels[hyp.stages[-1]]]
        x = origin + np.append(hyp.onsets_s / unit, hyp.onsets_s[-1] / unit + step)
        ax.step(x, y, where="post", **style)
    rem = np.array([s == "REM" for s in hypnogram.stages], dtype=bool)
    if rem.any():
        ax.hlines(np.full(int(rem.sum()), levels["REM"]), hours[rem], hours[rem] + step, color="tab:red", lw=3)
    shown = [levels[s] for s in hypnogram.stages] + ([] if reference is None else [levels[s] for s in reference.stages])
    used = sorted(set(shown) | {0, 1, 2, 3, 4})
    names = {v: k for k, v in levels.items()}
    ax.set_yticks(used, [names[v] for v in used])
    # Every stage keeps its row whatever was predicted: a night staged N2/N3 only still shows where W would be.
    ax.set_ylim(min(used) - 0.5, max(used) + 0.5)
    ax.set_ylabel("stage")
    unsure = hypnogram.low_confidence()
    # A lone 30-s epoch of an 8-h night is under a pixel wide: each span is drawn at least MIN_SPAN of the axis wide.
    least = MIN_SPAN * (len(hypnogram) * step if len(hypnogram) else 0.0)
    for k, (first, stop) in enumerate(_runs(unsure)):
        # One shaded span per run of low-confidence epochs, a lone epoch included (the hypnodensity below shows why).
        left, right = hours[first], hours[stop - 1] + step
        pad = max(0.0, least - (right - left)) / 2
        ax.axvspan(left - pad, right + pad, color="0.7", alpha=0.6, zorder=0, linewidth=0,
                   label="low confidence" if k == 0 else None, gid="low-confidence")
    if reference is not None or unsure.any():
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    if heading:
        # wrap: should a line still be wider than the figure (wide glyphs), matplotlib breaks it at the figure's edge.
        ax.set_title("\n".join(heading), fontsize=10, wrap=True)
    if has_density:
        ax2 = axes[1]
        proba = np.asarray(hypnogram.proba)
        colors = {"W": "#f2d16b", "N1": "#9ecae1", "N2": "#4292c6", "N3": "#08306b", "REM": "#e34a33"}
        if len(hours):
            # One filled band per class over the epoch edges (the last epoch's values repeated to
            # close it): a few polygons, where one bar per epoch and class made an 8-h night's
            # plot take 6-8 s (benchmarks/bench_predict.py --plot-only).
            edges = np.append(hours, hours[-1] + step)
            bands = np.vstack([proba, proba[-1:]]).T
            ax2.stackplot(edges, bands, step="post", colors=[colors.get(c, f"C{k}") for k, c in
                                                             enumerate(hypnogram.classes)],
                          labels=list(hypnogram.classes), linewidth=0)
            ax2.set_xlim(edges[0], edges[-1])
        ax2.set_ylim(0, 1)
        ax2.set_ylabel("probability")
        ax2.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    axes[-1].set_xlabel(xlabel)
    if table:
        fig.text(0.7 / 11, 0.12 / height, table, fontsize=9, family="monospace", va="bottom")
    if hypnogram.start is not None:
        from matplotlib.dates import AutoDateFormatter, AutoDateLocator

        # The x values are plain date numbers, so the axis needs the date locator to tick on round times; ticks
        # under a minute apart (a recording of a few minutes) carry seconds, not '00:00 00:00 00:01' (issue 45).
        locator = AutoDateLocator(minticks=4, maxticks=12)
        clock = AutoDateFormatter(locator, defaultfmt="%H:%M")
        clock.scaled = {1 / 86400: "%H:%M:%S", 1 / 1440: "%H:%M"}  # tick spacing in days -> format
        axes[-1].xaxis.set_major_locator(locator)
        axes[-1].xaxis.set_major_formatter(clock)
    return save_figure(fig, path, tight=False)


#: Characters of a title line of the hypnogram plot (10-pt DejaVu Sans, centred over the 8.85-inch axes of the
#: 11-inch figure): a longer note was clipped on both sides (issue 58: 'tatistics withheld: ...').
TITLE_CHARACTERS = 110
#: Height of one 10-pt title line, inches.
TITLE_LINE_INCHES = 0.165


def title_lines(title: str, note: str, width: int = TITLE_CHARACTERS) -> list[str]:
    """Return the plot's title lines: ``title``, then ``note`` packed into lines of at most ``width`` characters,
    broken at its ' · ' separators first, at spaces within a part longer than a line."""
    import textwrap

    lines = textwrap.wrap(title, width, break_on_hyphens=False) if title else []
    current = ""
    for part in (p for p in note.split(" · ") if p) if note else ():
        joined = f"{current} · {part}" if current else part
        if len(joined) <= width:
            current = joined
            continue
        lines += [current] if current else []
        *full, current = textwrap.wrap(part, width, break_on_hyphens=False)
        lines += full
    return lines + ([current] if current else [])


def stage_table_text(hypnogram: Hypnogram) -> str:
    """Return one row of minutes per stage, sleep stages with their % of total sleep time.

    Example: ``'W 42.0 min | N1 20.5 min (5 %) | N2 210.0 min (48 %) | N3 ... | REM ... | TST 437.5 min'``.
    """
    stats = hypnogram.sleep_statistics()
    cells = []
    for stage in ("W", "N1", "N2", "N3", "REM"):
        pct = stats.get(f"{stage}_pct")
        cells.append(f"{stage} {stats[f'{stage}_min']:.1f} min" + (f" ({pct:.0f} %)" if pct is not None else ""))
    return " | ".join(cells + [f"TST {stats['TST']:.1f} min"])


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """Return ``(first, stop)`` index pairs of the runs of True in ``mask`` (N,): ``[1, 1, 0, 1]`` -> [(0, 2), (3, 4)]."""
    edges = np.diff(np.concatenate([[0], np.asarray(mask, dtype=np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist()))


#: Recordings shorter than this (seconds) get a time axis in minutes, not hours.
MINUTES_BELOW_S = 3600.0
#: The narrowest a shaded low-confidence span is drawn, as a share of the time axis.
MIN_SPAN = 0.004
#: The date EDF writes when a recording's date is unknown (EDF+ specification: startdate 01.01.85).
EDF_NO_DATE = date(1985, 1, 1)


def _time_axis(hypnogram: Hypnogram) -> tuple[float, float, str]:
    """Return ``(origin, seconds per x unit, axis label)``: clock time (matplotlib dates) if the start is known."""
    if hypnogram.start is None:
        if len(hypnogram) * hypnogram.epoch_seconds < MINUTES_BELOW_S:
            return 0.0, 60.0, "time from recording start (min)"
        return 0.0, 3600.0, "time from recording start (h)"
    from matplotlib.dates import date2num

    # The wall-clock time the recording stores (EDF: local time, which MNE labels UTC), shown as is.
    start = hypnogram.start.replace(tzinfo=None)
    when = (f"{start:%H:%M:%S}; the file gives no date" if start.date() == EDF_NO_DATE else
            f"{start:%Y-%m-%d %H:%M:%S}")
    return float(date2num(start)), 86400.0, f"clock time (recording started {when})"


__all__ = [
    "PLOT_FORMATS",
    "atomic_output",
    "plot_hypnogram",
    "stage_table_text",
    "title_lines",
    "window_rows",
    "write_channel_quality",
    "write_edf_annotations",
    "write_events_tsv",
    "write_json",
    "write_table",
    "write_text",
    "write_window_csv",
]
