"""The contact policy (issue 17, item 2): one frozen object for adapt, evaluate and predict."""

from __future__ import annotations

import pytest

from passport_kit.contacts import DEFAULT_DISTRUST, DEFAULT_UNCORRELATED, ContactPolicy
from passport_kit.errors import CheckpointError, ConfigError


def test_run_options_are_a_contact_policy_declared_once() -> None:
    from passport_kit.onboard.recipe import RecipeOptions

    assert issubclass(RecipeOptions, ContactPolicy)
    options = RecipeOptions()
    assert {k: getattr(options, k) for k in ContactPolicy.model_fields} == ContactPolicy(
        distrust_bad_channels=DEFAULT_DISTRUST, mask_uncorrelated_channels=DEFAULT_UNCORRELATED).model_dump()
    with pytest.raises(Exception):  # frozen
        ContactPolicy().mask_bad_channels = 0.3  # type: ignore[misc]


def test_a_bundle_without_a_threshold_was_trained_without_it() -> None:
    policy = ContactPolicy.of_bundle({"mask_bad_channels": 0.4}, adapter="b")
    assert policy == ContactPolicy(mask_bad_channels=0.4, distrust_bad_channels=None, mask_uncorrelated_channels=None)


def test_options_given_replace_the_bundle_values_and_bundle_keeps_them() -> None:
    stored = ContactPolicy.of_bundle({"mask_bad_channels": 0.4, "distrust_bad_channels": 0.5}, adapter="b")
    policy = stored.given(mask_bad_channels=None, distrust_bad_channels="bundle", mask_uncorrelated_channels=0.1)
    assert (policy.mask_bad_channels, policy.distrust_bad_channels, policy.mask_uncorrelated_channels) == (None, 0.5, 0.1)


def test_bad_values_name_the_bundle_key_or_the_option() -> None:
    with pytest.raises(CheckpointError, match="training.distrust_bad_channels"):
        ContactPolicy.of_bundle({"distrust_bad_channels": True}, adapter="b")
    with pytest.raises(ConfigError, match="--mask-uncorrelated-channels takes a correlation"):
        ContactPolicy().given(mask_uncorrelated_channels=2.0)


@pytest.mark.parametrize("reads_activity", [True, False], ids=["expert-kind", "position-kind"])
def test_position_kinds_get_no_distrust_and_the_scores_follow(reads_activity: bool) -> None:
    policy = ContactPolicy(distrust_bad_channels=0.5, mask_uncorrelated_channels=None).for_model(reads_activity)
    assert policy.distrust_bad_channels == (0.5 if reads_activity else None)
    assert policy.scores_needed == reads_activity
