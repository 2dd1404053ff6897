"""A night of sleep stages: a Markov chain steered by the ultradian NREM-REM cycle.

A night starts awake (sleep latency 8-30 min), then runs through cycles of about 90 min
(per-subject length 80-105 min). Each cycle has a *programme*: a short N1 descent, N2, an
N3 block that shrinks from cycle to cycle (32-48 min in the first, x 0.55 per cycle), N2
again, and a REM block that grows from cycle to cycle (5-12 min in the first, +8 min per
cycle, at most about 38 min), ending with a brief awakening in most cycles. The programme is
only a target: the stage of each 30-s epoch follows a time-inhomogeneous Markov chain whose
transition matrix depends on the current stage and the programme's stage, so the chain lags
behind, takes neighbouring routes (N3 -> N2 -> REM), and shows brief arousals to W or N1
from any sleep stage. Over 30 simulated 8-h nights: W 7%, N1 6%, N2 51%, N3 17%, REM 19%
(checked in ``tests/simulator/test_simulator_hypnogram.py``), with more N3 in the first half
and more REM in the second.

Stages are integer indices into :data:`STAGES` (0=W, 1=N1, 2=N2, 3=N3, 4=REM).
"""

from __future__ import annotations

import numpy as np

from passport_kit.signals.labels import AASM_STAGES as STAGES

W, N1, N2, N3, REM = range(5)

EPOCH_SECONDS = 30.0
_EPOCHS_PER_MIN = 2

# Probability per epoch of leaving the programme's stage for a brief intrusion, and where to.
# Rows: current stage (= programme stage); columns: the intrusion stage.
_INTRUSION = np.array([
    #  W     N1    N2    N3    REM
    [0.00, 0.04, 0.00, 0.00, 0.00],   # W: drowsy N1 in the wake block
    [0.06, 0.00, 0.10, 0.00, 0.00],   # N1: back to W, or ahead to N2
    [0.012, 0.008, 0.00, 0.01, 0.00],  # N2: arousals, lightening, dips into N3
    [0.002, 0.00, 0.04, 0.00, 0.00],  # N3: lightening to N2
    [0.012, 0.010, 0.010, 0.00, 0.00],  # REM: arousals and N1/N2 intrusions
])
# Probability per epoch of taking one step toward the programme's stage when not in it.
_CATCH_UP = 0.35
# Route from a stage toward a target stage: the next stage taken (rows: from, columns: target).
# Deep sleep is reached through N2, REM is entered from N2 (or N1), awakenings are direct.
_ROUTE = np.array([
    #  W   N1  N2  N3  REM  (target)
    [W, N1, N1, N1, N1],    # from W
    [W, N1, N2, N2, REM],   # from N1
    [W, N1, N2, N3, REM],   # from N2
    [W, N2, N2, N3, N2],    # from N3
    [W, N1, N2, N2, REM],   # from REM
])


def night_programme(n_epochs: int, rng: np.random.Generator) -> np.ndarray:
    """Return the target stage of every epoch, shape (n_epochs,) int: the cycle programme."""
    minutes: list[tuple[int, float]] = [(W, rng.uniform(8.0, 30.0))]
    cycle_length = rng.uniform(80.0, 105.0)
    n3_first = rng.uniform(32.0, 48.0)
    rem_first = rng.uniform(5.0, 12.0)
    total = minutes[0][1]
    cycle = 0
    while total < n_epochs / _EPOCHS_PER_MIN:
        length = cycle_length * rng.uniform(0.9, 1.1)
        n1 = rng.uniform(2.0, 5.0) if cycle == 0 else rng.uniform(0.5, 2.0)
        n3 = n3_first * 0.55**cycle * rng.uniform(0.7, 1.3)
        rem = min(rem_first + 8.0 * cycle, 38.0) * rng.uniform(0.8, 1.2)
        wake = rng.uniform(1.0, 4.0) if (cycle > 0 and rng.random() < 0.7) else 0.0
        n2 = max(length - n1 - n3 - rem - wake, 8.0)
        split = rng.uniform(0.35, 0.6)
        minutes += [(N1, n1), (N2, n2 * split), (N3, n3), (N2, n2 * (1 - split)),
                    (REM, rem), (W, wake)]
        total += n1 + n2 + n3 + rem + wake
        cycle += 1
    stages = np.array([s for s, _ in minutes], dtype=np.int64)
    ends = np.round(np.cumsum([m for _, m in minutes]) * _EPOCHS_PER_MIN).astype(np.int64)
    counts = np.diff(np.concatenate([[0], ends]))
    return np.repeat(stages, counts)[:n_epochs]


def simulate_hypnogram(n_epochs: int, rng: np.random.Generator) -> np.ndarray:
    """Return one stage index per 30-s epoch, shape (n_epochs,) int64, starting at lights-off.

    The chain starts in W. At each epoch: if it sits in the programme's stage it may make a
    brief intrusion (``_INTRUSION``); otherwise it steps toward the programme's stage along
    ``_ROUTE`` with probability ``_CATCH_UP``. Short recordings cover only the start of a
    night (mostly W, N1, N2 and the first N3; REM appears after about 70-100 min).
    """
    programme = night_programme(n_epochs, rng)
    draws = rng.random((n_epochs, 2))
    stages = np.empty(n_epochs, dtype=np.int64)
    current = W
    # One step per epoch of a chain with 5 states: a loop over epochs (960 per 8-h night),
    # not over samples, so it costs well under a millisecond.
    for k in range(n_epochs):
        target = programme[k]
        if current == target:
            row = np.cumsum(_INTRUSION[current])
            jump = int(np.searchsorted(row, draws[k, 0], side="right"))
            if jump < len(STAGES):
                current = jump
        elif draws[k, 1] < _CATCH_UP or current in (W, N1) and target in (W, N1):
            current = int(_ROUTE[current, target])
        stages[k] = current
    return stages
