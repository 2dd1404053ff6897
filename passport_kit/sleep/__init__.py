"""Pretrained sleep stagers as priors: the knowledge researchers already trust, as a block of the read-out.

A *sleep prior* (:class:`~passport_kit.sleep.priors.SleepPrior`) turns one night of EEG into
per-epoch log-probabilities of the five AASM stages with no labels at all. ``adapt`` scores it
zero-shot on the training nights and stacks its log-probabilities into the read-out (the
ladder decides which helps, :mod:`passport_kit.onboard.ladder`); ``predict`` can stage a night
with it alone (``predict --zero-shot``). YASA is built in (BSD-3, a dependency); other stagers
are plugins (:mod:`passport_kit.sleep.gssc`: used only where the user installed it).

This room sits under onboarding and prediction and above the signals: it reads a recording's
own signal (or, where only they exist, its windows), never a model.
"""

from passport_kit.sleep.priors import (PRIORS, STAGES, PriorSpec, SleepPrior, available_priors, classes_to_stages,
                                       combine_log_proba, get_prior, native_rates, parse_prior_channels,
                                       pick_channels, prior_channel_options, prior_log_proba)

__all__ = ["PRIORS", "STAGES", "PriorSpec", "SleepPrior", "available_priors", "classes_to_stages", "combine_log_proba",
           "get_prior", "native_rates", "parse_prior_channels", "pick_channels", "prior_channel_options", "prior_log_proba"]
