"""Night structure and calibration of a read-out's probabilities: an HMM pass over the epochs, then a temperature.

Sleep stages follow each other in a known way (N2 rarely jumps to REM through N3, wake
comes in runs). :func:`smooth` treats a read-out's per-epoch class probabilities as the
emissions of a hidden Markov chain whose transitions were counted on the training nights
(:func:`transition_counts`), and returns each epoch's posterior given the whole night
(forward-backward): the "hybrid" HMM of speech recognition, emission likelihood ∝
p(stage | epoch) / p(stage), where p(stage) is the class prior the read-out's probabilities
carry (uniform for a read-out fitted with balanced class weights).

Why by hand and not hmmlearn: hmmlearn fits its own emission models (Gaussian, categorical)
and has no emission that takes another classifier's posteriors; the forward-backward pass over
five states is a few lines of numpy.

:func:`temper` is temperature scaling (Guo et al. 2017): probabilities ∝ p^(1/T), i.e. logits
divided by T, fitted on out-of-fold predictions (:func:`fit_temperature`) so that a read-out's
confidence means what it says; :func:`expected_calibration_error` measures it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: Added to every transition count (a transition never seen on a few training nights is rare, not impossible).
PSEUDO_COUNT = 1.0
#: Bins of the expected calibration error (equal-width over the top-class confidence).
ECE_BINS = 10


def transition_counts(y: np.ndarray, groups: Sequence[Any], n_classes: int) -> np.ndarray:
    """Return ``(K, K)`` counts of stage ``i`` followed by stage ``j`` over consecutive rows of each recording.

    ``y`` ``(N,)`` labels in time order within each run of equal ``groups`` (rows with a
    negative label break the chain).
    """
    counts = np.zeros((n_classes, n_classes))
    y = np.asarray(y)
    keys = list(groups)
    for t in range(1, len(y)):
        if keys[t] == keys[t - 1] and y[t] >= 0 and y[t - 1] >= 0:
            counts[y[t - 1], y[t]] += 1
    return counts


def transition_matrix(counts: np.ndarray, pseudo: float = PSEUDO_COUNT) -> np.ndarray:
    """Return the row-stochastic transition matrix of ``counts`` with ``pseudo`` added to every cell."""
    c = np.asarray(counts, dtype=np.float64) + pseudo
    return c / c.sum(axis=1, keepdims=True)


def smooth(proba: np.ndarray, transitions: np.ndarray, emission_prior: np.ndarray | None = None,
           groups: Sequence[Any] | None = None) -> np.ndarray:
    """Return the forward-backward posteriors ``(N, K)`` of per-epoch probabilities ``proba`` ``(N, K)``.

    Rows are epochs in time order within each run of equal ``groups`` (None: one night);
    ``transitions`` ``(K, K)`` row-stochastic; ``emission_prior`` ``(K,)`` the class prior in
    ``proba`` (None: uniform). The chain starts from the transitions' stationary distribution.
    """
    p = np.asarray(proba, dtype=np.float64)
    a = np.asarray(transitions, dtype=np.float64)
    emitted = emission(p, emission_prior)
    start = _stationary(a)
    out = np.empty_like(p)
    keys = list(groups) if groups is not None else [0] * len(p)
    begin = 0
    for t in range(1, len(p) + 1):
        if t == len(p) or keys[t] != keys[begin]:
            out[begin:t] = _forward_backward(emitted[begin:t], a, start)
            begin = t
    return out


def emission(proba: np.ndarray, emission_prior: np.ndarray | None = None) -> np.ndarray:
    """Return the hybrid HMM's emission likelihoods ``p(stage | epoch) / p(stage)`` of probabilities ``proba`` ``(..., K)``
    (``emission_prior`` None: uniform), as :func:`smooth` uses them."""
    p = np.asarray(proba, dtype=np.float64)
    k = p.shape[-1]
    prior = np.full(k, 1.0 / k) if emission_prior is None else np.asarray(emission_prior, dtype=np.float64)
    return np.maximum(p, 1e-12) / np.maximum(prior, 1e-12)


def predicted_state(filtered: np.ndarray | None, transitions: np.ndarray) -> np.ndarray:
    """Return the stage distribution ``(K,)`` of the next epoch before its emission: ``filtered @ transitions``, or the
    chain's stationary start when there is no previous epoch (``filtered`` None: a night's, or a segment's, first)."""
    a = np.asarray(transitions, dtype=np.float64)
    return _stationary(a) if filtered is None else np.asarray(filtered) @ a


def lagged_posterior(predicted: np.ndarray, emissions: np.ndarray, transitions: np.ndarray) -> np.ndarray:
    """Return the posterior ``(K,)`` of the first of ``emissions`` ``(L + 1, K)`` given them all (fixed-lag smoothing).

    ``predicted``: its stage distribution before its emission (:func:`predicted_state`). With one
    row this is the forward filter; over a whole night from its first epoch, it is row 0 of
    :func:`smooth`'s forward-backward pass over those ``L + 1`` epochs.
    """
    return _forward_backward(np.asarray(emissions, dtype=np.float64), np.asarray(transitions, dtype=np.float64),
                             np.asarray(predicted, dtype=np.float64))[0]


def _stationary(a: np.ndarray) -> np.ndarray:
    values, vectors = np.linalg.eig(a.T)
    v = np.abs(np.real(vectors[:, np.argmin(np.abs(values - 1.0))]))
    return v / v.sum()


def _forward_backward(e: np.ndarray, a: np.ndarray, start: np.ndarray) -> np.ndarray:
    n, k = e.shape
    alpha = np.empty((n, k))
    alpha[0] = start * e[0]
    alpha[0] /= alpha[0].sum()
    for t in range(1, n):  # scaled: each step normalised, so a night of any length stays finite
        alpha[t] = (alpha[t - 1] @ a) * e[t]
        alpha[t] /= alpha[t].sum()
    beta = np.ones((n, k))
    for t in range(n - 2, -1, -1):
        beta[t] = a @ (e[t + 1] * beta[t + 1])
        beta[t] /= beta[t].sum()
    post = alpha * beta
    return post / post.sum(axis=1, keepdims=True)


def temper(proba: np.ndarray, temperature: float) -> np.ndarray:
    """Return ``proba`` ``(N, K)`` with temperature ``temperature``: ∝ p^(1/T) (T = 1: unchanged)."""
    p = np.asarray(proba, dtype=np.float64)
    if temperature == 1.0:
        return p
    logp = np.log(np.maximum(p, 1e-12)) / temperature
    logp -= logp.max(axis=1, keepdims=True)
    q = np.exp(logp)
    return q / q.sum(axis=1, keepdims=True)


def fit_temperature(proba: np.ndarray, y: np.ndarray, bounds: tuple[float, float] = (0.05, 20.0)) -> float:
    """Return the temperature that minimises the negative log-likelihood of labels ``y`` under ``proba``."""
    from scipy.optimize import minimize_scalar

    logp = np.log(np.maximum(np.asarray(proba, dtype=np.float64), 1e-12))
    y = np.asarray(y, dtype=np.int64)

    def nll(log_t: float) -> float:
        z = logp / np.exp(log_t)
        z = z - z.max(axis=1, keepdims=True)
        return float(-(z[np.arange(len(y)), y] - np.log(np.exp(z).sum(axis=1))).mean())

    res = minimize_scalar(nll, bounds=(np.log(bounds[0]), np.log(bounds[1])), method="bounded")
    return float(np.exp(res.x))


def expected_calibration_error(proba: np.ndarray, y: np.ndarray, bins: int = ECE_BINS) -> float:
    """Return the expected calibration error of the top class: Σ_bins (n_b / N) · |accuracy_b − confidence_b|."""
    p = np.asarray(proba, dtype=np.float64)
    conf, pred = p.max(axis=1), p.argmax(axis=1)
    hit = (pred == np.asarray(y)).astype(np.float64)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(conf, edges[1:-1], right=True), 0, bins - 1)
    total = 0.0
    for b in range(bins):
        sel = which == b
        if sel.any():
            total += sel.mean() * abs(hit[sel].mean() - conf[sel].mean())
    return float(total)


__all__ = ["ECE_BINS", "PSEUDO_COUNT", "expected_calibration_error", "fit_temperature", "smooth", "temper",
           "transition_counts", "transition_matrix"]
