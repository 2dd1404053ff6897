"""Agreement with a scorer: a recording's predictions against its hypnogram (or per-window labels).

``predict --labels FILE`` reads the scorer's labels of a recording (:func:`scorer_labels`),
scores the predictions against them window by window (:func:`agreement`: Cohen's kappa,
accuracy, confusion table), and draws the scorer's hypnogram under the predicted one.

Example::

    reference = scorer_labels("s01_hypnogram.csv", ["W", "N1", "N2", "N3", "REM"], n_windows=960,
                              window_seconds=30)
    agreement(reference, predicted, classes)["kappa"]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from passport_kit.errors import LabelError
from passport_kit.signals.labels import (BUILTIN_LABEL_MAPS, check_label_path, encode_labels, get_label_map,
                                         label_lines_bound, read_label_file, shown_values)


def scorer_labels(path: str | Path, classes: Sequence[str], *, n_windows: int, window_seconds: float,
                  label_map: str | None = None) -> np.ndarray:
    """Return the scorer's class index per window, ``(n_windows,)`` int64 (``-1``: unscored or not a class).

    ``path``: a label file (one value per line or first column: ``.csv``/``.tsv``/``.txt``,
    DREAMS ``[Hypnogram]`` files too). ``label_map``: a built-in map (``aasm``, ``rk``: R&K
    numbers per 5 s, ``eesm``); None: AASM stage names, or class names of the adapter.
    """
    source = f"labels '{path}'"
    # The path checks in the words of the command line (issue 57: they said "check 'labels:' in dataset.yaml").
    check_label_path(Path(path), "--labels file", "check the path given to --labels")
    values = read_label_file(path, max_lines=label_lines_bound(n_windows, window_seconds))
    if label_map is not None:
        lm = get_label_map(label_map)
    else:
        lm = get_label_map("aasm")
        unknown = sorted({v for v in values if v is not None and not lm.lookup(v)[0] and v not in classes})
        if unknown:
            shown = shown_values(unknown)  # issue 46: `--labels /etc/passwd` printed 8 whole lines of it
            raise LabelError(f"{source}: values {shown} are neither AASM stage names nor the adapter's classes; give "
                             f"--label-map ({', '.join(BUILTIN_LABEL_MAPS)}; rk: R&K numbers, one per 5 s)")
        lm = lm.model_copy(update={"mapping": {**lm.mapping, **{c.casefold(): c for c in classes}}})
    return encode_labels(values, lm.model_copy(update={"on_unknown": "drop"}), classes, n_windows=n_windows,
                         window_seconds=window_seconds, source=source)


def agreement(reference: np.ndarray, predicted: np.ndarray, classes: Sequence[str]) -> dict[str, Any]:
    """Return the agreement of ``predicted`` with ``reference`` (class indices ``(N,)``; ``-1`` in either: skipped).

    ``{"windows": n, "kappa": Cohen's kappa, "accuracy": share, "confusion": {scorer class:
    {predicted class: count}}}``; kappa and accuracy are None without a window to compare.
    """
    from sklearn.metrics import cohen_kappa_score

    reference, predicted = np.asarray(reference), np.asarray(predicted)
    both = (reference >= 0) & (predicted >= 0)
    ref, pred = reference[both], predicted[both]
    confusion = {c: {d: int(np.sum((ref == i) & (pred == j))) for j, d in enumerate(classes)}
                 for i, c in enumerate(classes)}
    if not both.any():
        return {"windows": 0, "kappa": None, "accuracy": None, "confusion": confusion}
    labels = list(range(len(classes)))
    # One class on both sides: kappa is undefined (0/0); say it is perfect agreement or none.
    same = len(set(ref.tolist()) | set(pred.tolist())) == 1
    kappa = 1.0 if same else float(cohen_kappa_score(ref, pred, labels=labels))
    return {"windows": int(both.sum()), "kappa": kappa, "accuracy": float(np.mean(ref == pred)),
            "confusion": confusion}


def confusion_lines(confusion: dict[str, dict[str, int]]) -> list[str]:
    """Return the confusion table as aligned text lines: scorer classes down, predicted across."""
    classes = list(confusion)
    width = max(6, *(len(c) for c in classes)) + 1
    head = "scorer \\ predicted".ljust(20) + "".join(c.rjust(width) for c in classes)
    return [head] + [c.ljust(20) + "".join(str(confusion[c][d]).rjust(width) for d in classes) for c in classes]


__all__ = ["agreement", "confusion_lines", "scorer_labels"]
