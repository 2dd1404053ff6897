"""A read-out fitted around a pretrained stager's output: multinomial logistic regression with a fixed offset.

Why (issue 43): a stager trained on thousands of nights is the base for sleep staging, and a user's
few nights should adapt it, not replace it. The logits of class ``k`` are

    stager log-probability of k's stage  +  w_k · z  +  b_k

where ``z`` are the standardised read-out inputs (band power, the stager's own log-probabilities,
context, backbone features) and the deviation ``(w, b)`` is penalised by ``||w||² + ||b||²`` (bias
included: the stager's class balance is knowledge too). So with strong shrinkage the read-out *is*
the stager, and the data can only pull it as far as the penalty lets them: the linear form of the
KL term with which Phan et al. (2020) personalised a pretrained stager to one night. ``c``, the
inverse strength, is chosen by the ladder's inner cross-validation.

The loss is the mean (optionally weighted) cross-entropy, so ``c`` means the same on one night and
on twenty: objective = mean loss + (||w||² + ||b||²) / (2 c). ``diagonal``: class ``k`` may only
re-weight its own stage's log-probability (per-class scale and bias: the recalibration one night
can support).

scikit-learn's ``LogisticRegression`` has no offset term, so this small problem is solved here
with SciPy's L-BFGS on the exact gradient (well-kept solver, hand-written objective: 30 lines).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Inverse penalty strengths (on the *mean* loss) the ladder scores an offset read-out at: from "the stager,
#: barely moved" (0.01) to "nearly unpenalised" (1000).
OFFSET_C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 1000.0)
#: The solver's iteration cap (each fit starts from the previous, stronger-shrunk one along the grid).
MAX_ITER = 500


@dataclass
class OffsetFit:
    """A fitted deviation: ``coef`` ``(K, F)`` (zeros outside ``mask``) and ``intercept`` ``(K,)``."""

    coef: np.ndarray
    intercept: np.ndarray

    def logits(self, z: np.ndarray, offset: np.ndarray) -> np.ndarray:
        """Return ``(N, K)`` logits of standardised inputs ``z`` ``(N, F)`` around ``offset`` ``(N, K)``."""
        return offset + z @ self.coef.T + self.intercept

    def predict_proba(self, z: np.ndarray, offset: np.ndarray) -> np.ndarray:
        """Return ``(N, K)`` probabilities (softmax of :meth:`logits`)."""
        return softmax(self.logits(z, offset))


def softmax(logits: np.ndarray) -> np.ndarray:
    """Return the row-wise softmax of ``logits`` ``(N, K)``."""
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def fit_offset(z: np.ndarray, y: np.ndarray, offset: np.ndarray, c: float, *, weight: np.ndarray | None = None,
               mask: np.ndarray | None = None, warm: OffsetFit | None = None) -> OffsetFit:
    """Return the deviation from ``offset`` fitted on standardised inputs ``z`` ``(N, F)`` and labels ``y`` ``(N,)``.

    ``offset`` ``(N, K)``: the stager's log-probabilities of the ``K`` classes; ``c`` the inverse penalty
    (module docstring); ``weight`` ``(N,)`` per-row loss weights (None: each row alike); ``mask`` ``(K, F)``:
    which coefficients may move (None: all); ``warm``: a fit to start from (the previous ``c`` of a grid).
    """
    from scipy.optimize import minimize

    z = np.asarray(z, dtype=np.float64)
    offset = np.asarray(offset, dtype=np.float64)
    n, f = z.shape
    k = offset.shape[1]
    mask = np.ones((k, f), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    w = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    w = w / w.sum()
    onehot = np.zeros((n, k))
    onehot[np.arange(n), np.asarray(y, dtype=np.int64)] = 1.0
    n_coef = int(mask.sum())

    def unpack(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        coef = np.zeros((k, f))
        coef[mask] = theta[:n_coef]
        return coef, theta[n_coef:]

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        coef, bias = unpack(theta)
        logits = offset + z @ coef.T + bias
        top = logits.max(axis=1, keepdims=True)
        log_norm = top[:, 0] + np.log(np.exp(logits - top).sum(axis=1))
        loss = float(np.dot(w, log_norm - (logits * onehot).sum(axis=1)))
        resid = (np.exp(logits - log_norm[:, None]) - onehot) * w[:, None]  # d loss / d logits
        grad = np.concatenate([(resid.T @ z)[mask], resid.sum(axis=0)]) + theta / c
        return loss + float(theta @ theta) / (2.0 * c), grad

    theta0 = (np.concatenate([warm.coef[mask], warm.intercept]) if warm is not None
              else np.zeros(n_coef + k))
    result = minimize(objective, theta0, jac=True, method="L-BFGS-B", options={"maxiter": MAX_ITER})
    coef, bias = unpack(result.x)
    return OffsetFit(coef, bias)


def diagonal_mask(n_classes: int, n_features: int, columns: list[int]) -> np.ndarray:
    """Return the ``(K, F)`` mask of a per-class recalibration: class ``k`` reads only column ``columns[k]``."""
    mask = np.zeros((n_classes, n_features), dtype=bool)
    for k, col in enumerate(columns):
        mask[k, col] = True
    return mask


__all__ = ["MAX_ITER", "OFFSET_C_GRID", "OffsetFit", "diagonal_mask", "fit_offset", "softmax"]
