"""Subject-disjoint splits."""

from __future__ import annotations

import numpy as np
import pytest

from passport_kit.errors import ConfigError, DataError
from passport_kit.onboard.splits import (
    fixed_split,
    loso_folds,
    subsample_training,
    with_validation,
)

SUBJECTS = np.array([f"s{i:02d}" for i in range(1, 10) for _ in range(3)])  # 9 subjects x 3 windows


def _disjoint(split) -> bool:
    sides = [set(split.train), set(split.validation), set(split.test)]
    return all(not (a & b) for i, a in enumerate(sides) for b in sides[i + 1 :])


def test_loso_has_one_fold_per_subject_and_each_is_disjoint() -> None:
    folds = loso_folds(SUBJECTS)
    assert [f.test for f in folds] == [(f"s{i:02d}",) for i in range(1, 10)]
    assert all(_disjoint(f) and len(f.train) == 8 for f in folds)


def test_loso_needs_two_subjects() -> None:
    with pytest.raises(DataError, match="at least 2 subjects"):
        loso_folds(["s01", "s01"])


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_fixed_split_is_disjoint_and_covers_everyone(seed: int) -> None:
    split = fixed_split(SUBJECTS, test_fraction=0.3, seed=seed)
    assert _disjoint(split)
    assert set(split.train) | set(split.test) == set(SUBJECTS)
    assert len(split.test) == 3


def test_fixed_split_is_reproducible_with_a_seed() -> None:
    assert fixed_split(SUBJECTS, seed=3) == fixed_split(SUBJECTS, seed=3)


@pytest.mark.parametrize("fold", range(9))
def test_validation_comes_from_training_subjects_only(fold: int) -> None:
    base = loso_folds(SUBJECTS)[fold]
    split = with_validation(base, fraction=0.25, seed=fold)
    assert _disjoint(split) and split.validation
    assert set(split.train) | set(split.validation) == set(base.train)


def test_validation_is_empty_with_one_training_subject() -> None:
    base = subsample_training(loso_folds(SUBJECTS)[0], 1, seed=0)
    assert with_validation(base).validation == ()


def test_masks_select_windows_of_each_side() -> None:
    split = with_validation(loso_folds(SUBJECTS)[0], seed=0)
    train, val, test = split.masks(SUBJECTS)
    assert not (train & val).any() and not (train & test).any() and not (val & test).any()
    assert (train | val | test).all()
    assert set(SUBJECTS[test]) == {"s01"}


@pytest.mark.parametrize("n", [1, 2, 4])
def test_sweep_subset_draws_n_training_subjects(n: int) -> None:
    base = loso_folds(SUBJECTS)[0]
    sub = subsample_training(base, n, seed=5)
    assert len(sub.train) == n and set(sub.train) <= set(base.train) and sub.test == base.test


def test_sweep_subsets_differ_across_seeds() -> None:
    base = loso_folds(SUBJECTS)[0]
    draws = {subsample_training(base, 2, seed=s).train for s in range(6)}
    assert len(draws) > 1


def test_sweep_larger_than_training_set_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="only 8 are available"):
        subsample_training(loso_folds(SUBJECTS)[0], 9)
