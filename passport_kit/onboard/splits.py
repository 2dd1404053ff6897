"""Subject-disjoint splits: LOSO folds, fixed splits, validation hold-outs, sweep subsets.

Every split here works on *subject names*, never on windows, so that windows of one person
never sit on both sides of a split (windows of one night are strongly correlated; a window-level
split reports scores that no new user will see). All randomness takes an explicit ``seed``.

Example::

    >>> folds = loso_folds(["s01", "s02", "s03"])
    >>> [(f.test, f.train) for f in folds][0]
    (('s01',), ('s02', 's03'))
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict

from passport_kit.errors import ConfigError, DataError


class SubjectSplit(BaseModel):
    """Subjects on each side of one split; ``name`` labels the fold in reports."""

    model_config = ConfigDict(frozen=True)

    name: str
    train: tuple[str, ...]
    test: tuple[str, ...]
    validation: tuple[str, ...] = ()

    def masks(self, subjects: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return boolean masks (train, validation, test) over a per-window subject array (N,)."""
        subjects = np.asarray(subjects).astype(str)
        return (
            np.isin(subjects, self.train),
            np.isin(subjects, self.validation),
            np.isin(subjects, self.test),
        )


def unique_subjects(subjects: np.ndarray | list[str]) -> list[str]:
    """Return the distinct subject names, sorted, from a per-window array."""
    return sorted({str(s) for s in np.asarray(subjects).tolist()})


def loso_folds(subjects: np.ndarray | list[str]) -> list[SubjectSplit]:
    """Return one fold per subject: that subject is the test set, all others train.

    Raises DataError with fewer than two subjects (nothing would be left to train on).
    """
    names = unique_subjects(subjects)
    if len(names) < 2:
        raise DataError(
            f"leave-one-subject-out needs at least 2 subjects, the data has {len(names)}; "
            "add recordings of more subjects"
        )
    return [
        SubjectSplit(name=f"loso-{s}", train=tuple(n for n in names if n != s), test=(s,))
        for s in names
    ]


def fixed_split(
    subjects: np.ndarray | list[str],
    *,
    test_fraction: float = 0.2,
    seed: int = 0,
) -> SubjectSplit:
    """Return one subject-disjoint train/test split (at least one subject on each side)."""
    names = unique_subjects(subjects)
    if len(names) < 2:
        raise DataError(f"a train/test split needs at least 2 subjects, the data has {len(names)}")
    if not 0.0 < test_fraction < 1.0:
        raise ConfigError(f"test fraction must lie in (0, 1), got {test_fraction}")
    order = np.random.default_rng(seed).permutation(len(names))
    n_test = min(len(names) - 1, max(1, round(test_fraction * len(names))))
    test = sorted(names[i] for i in order[:n_test])
    train = sorted(names[i] for i in order[n_test:])
    return SubjectSplit(name=f"split-seed{seed}", train=tuple(train), test=tuple(test))


def with_validation(
    split: SubjectSplit,
    *,
    fraction: float = 0.2,
    seed: int = 0,
) -> SubjectSplit:
    """Return ``split`` with some of its training subjects moved to a validation set.

    At least one subject goes to validation and at least one stays in training; with a single
    training subject there is nothing to hold out and the validation set stays empty (the
    caller then trains for a fixed number of steps instead of early stopping).
    """
    train = list(split.train)
    if len(train) < 2:
        return split.model_copy(update={"validation": ()})
    order = np.random.default_rng(seed).permutation(len(train))
    n_val = min(len(train) - 1, max(1, round(fraction * len(train))))
    validation = sorted(train[i] for i in order[:n_val])
    rest = sorted(train[i] for i in order[n_val:])
    return split.model_copy(update={"train": tuple(rest), "validation": tuple(validation)})


def subsample_training(split: SubjectSplit, n_subjects: int, *, seed: int = 0) -> SubjectSplit:
    """Return ``split`` with its training set cut to ``n_subjects`` randomly drawn subjects.

    This draws the subsets of a sample-efficiency sweep: test and validation are unchanged,
    so points of the curve differ only in how many people the adapter saw.
    """
    if n_subjects < 1:
        raise ConfigError(f"number of training subjects must be at least 1, got {n_subjects}")
    if n_subjects > len(split.train):
        raise ConfigError(
            f"asked for {n_subjects} training subjects but only {len(split.train)} are available "
            f"in fold {split.name}; lower --subjects or the sweep values"
        )
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(sorted(split.train), size=n_subjects, replace=False).tolist())
    return split.model_copy(update={"train": tuple(chosen), "name": f"{split.name}-n{n_subjects}"})
