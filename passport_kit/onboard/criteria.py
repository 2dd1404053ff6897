"""How a model is chosen: the selection metric, what counts as near chance, and what a step up must clear.

Model selection reads Cohen's kappa, or AUROC for two classes (CBraMod's rule): the training loop keeps its best
state by it (:mod:`passport_kit.onboard.finetune`), and the ladder (:mod:`passport_kit.onboard.ladder`) and LP-FT
(:mod:`passport_kit.onboard.lpft`) score their inner folds by it. A step up (a rung of the ladder, LP-FT included)
replaces the model below it only if its paired inner-CV gain exceeds :data:`SE_MULTIPLE` standard errors and the
minimum effect of that metric (:data:`MIN_EFFECT`). Torch-free (the options read the metric's name at start-up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - an annotation only: this module imports no scikit-learn
    from passport_kit.onboard.metrics import ClassificationMetrics

#: The smallest paired gain a step up must show besides its standard errors (the ladder's rule, LP-FT's too).
MIN_EFFECT = {"auroc": 0.01, "kappa": 0.02}
#: How many standard errors of the paired gain a step up (every rung of the ladder, LP-FT included) must clear.
#: Two, because each rung's own best C and variant are picked on the same folds (its score is optimistic); measured
#: on the dev tasks (docs/RESULTS.md § The ladder): one SE climbed on noise on eegmat-ear (outer AUROC 0.599 vs
#: 0.616 with two; textbook 0.632) and two cost nothing elsewhere (sim-ear 0.943 vs 0.940); three lost sim-ear's
#: backbone rung (0.901).
SE_MULTIPLE = 2.0


def selection_score(metrics: ClassificationMetrics) -> float:
    """Return the model-selection score: kappa, or AUROC for two-class tasks (CBraMod)."""
    if len(metrics.classes) == 2 and metrics.auroc is not None:
        return metrics.auroc
    return metrics.kappa


def selection_metric(n_classes: int) -> str:
    """Return the name of :func:`selection_score`'s metric for ``n_classes`` classes."""
    return "auroc" if n_classes == 2 else "kappa"


def near_chance(score: float, metric: str) -> bool:
    """Return whether a selection score says the model barely beats chance (AUROC < 0.55, kappa < 0.05)."""
    return score < (0.55 if metric == "auroc" else 0.05)


__all__ = ["MIN_EFFECT", "SE_MULTIPLE", "near_chance", "selection_metric", "selection_score"]
