"""Train/serve parity: the head ``adapt`` writes must give the probabilities of the model its ladder fitted (issue 55).

Why: the ladder scores read-outs fitted by a solver (scikit-learn's logistic regression, or the offset read-out
around a sleep stager) on numpy inputs, then folds the winner into the head's linear layer, which ``predict``
runs on inputs it computes itself. Where the two disagree, what ships is another model than the one scored: on
real nights a context read-out around the stager scored kappa 0.33 on its *own training nights* where its fit
scored 0.57, because the head scaled the stager's block per night and the fit had not. So before a bundle is
written, the head is run the way ``predict`` runs it (:func:`~passport_kit.engine.forward.predict_proba`: its own
band power and backbone features, the stager's block, smoothing and temperature) on the training windows, and
compared with the fit's own probabilities; a disagreement refuses the bundle in one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from passport_kit.errors import PassportError

#: The largest difference of any probability between the fit and the head allowed (fp32 head, fp64 fit).
PARITY_ATOL = 1e-4


class ParityError(PassportError):
    """The head a fit was folded into does not give the fit's probabilities: no bundle is written."""


def fitted_probabilities(proba: np.ndarray, smoothing: dict[str, Any] | None, temperature: float,
                         groups: Sequence[Any]) -> np.ndarray:
    """Return the fit's probabilities ``(N, K)`` after the night smoothing and temperature the ladder chose
    (:mod:`passport_kit.model.night`, computed here from the ladder's record, not from the head)."""
    from passport_kit.model.night import smooth, temper

    out = np.asarray(proba, dtype=np.float64)
    if smoothing is not None:
        out = smooth(out, np.asarray(smoothing["transitions"]), np.asarray(smoothing["emission_prior"]), list(groups))
    return temper(out, float(temperature)) if float(temperature) != 1.0 else out


def head_probabilities(model: Any, windows: Any, rows: np.ndarray, groups: Sequence[Any], prior: np.ndarray | None,
                       forward: dict[str, Any] | None = None) -> np.ndarray:
    """Return the model's probabilities of ``rows`` of ``windows`` as ``predict`` computes them (``prior``: the
    stager's log-probabilities of those rows, where the head reads them)."""
    from passport_kit.engine.forward import predict_proba

    full = None
    if prior is not None and getattr(model.head, "n_prior", 0):
        full = np.zeros((len(windows.x), prior.shape[1]))
        full[rows] = prior
    return predict_proba(model, windows.x, windows.meta, index=rows, groups=list(groups), prior=full,
                         channel_mask=windows.channel_mask, distrust=windows.distrust, **(forward or {}))


def parity_gap(fit: np.ndarray, served: np.ndarray) -> float:
    """Return the largest absolute difference between two ``(N, K)`` probability tables (inf if their shapes differ
    or the head's holds a non-finite value)."""
    fit, served = np.asarray(fit, dtype=np.float64), np.asarray(served, dtype=np.float64)
    if fit.shape != served.shape or not np.isfinite(served).all():
        return float("inf")
    return float(np.max(np.abs(fit - served))) if fit.size else 0.0


def check_parity(fit: np.ndarray, served: np.ndarray, what: str, atol: float = PARITY_ATOL) -> float:
    """Return the gap between the fit's and the head's probabilities; raise :class:`ParityError` above ``atol``."""
    gap = parity_gap(fit, served)
    if not gap <= atol:
        served = np.asarray(served)
        changed = int((np.asarray(fit).argmax(1) != served.argmax(1)).sum()) if served.shape == np.shape(fit) else -1
        raise ParityError(f"the model to be written ({what}) does not reproduce its own fit on the training windows "
                          f"(largest probability difference {gap:.3g}, {changed} of {len(served)} windows staged "
                          "differently), so no bundle was written; this is a bug in passport-kit - please report it "
                          "with the command that gave it")
    return gap


__all__ = ["PARITY_ATOL", "ParityError", "check_parity", "fitted_probabilities", "head_probabilities", "parity_gap"]
