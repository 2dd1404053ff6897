"""Sleep's own vocabulary: pretrained sleep stagers as priors, and the hypnogram with its statistics.

A *sleep prior* (:class:`~passport_kit.sleep.priors.SleepPrior`) turns one night of EEG into
per-epoch log-probabilities of the five AASM stages with no labels at all. ``adapt`` scores it
zero-shot on the training nights and stacks its log-probabilities into the read-out (the
ladder decides which helps, :mod:`passport_kit.onboard.ladder`); ``predict`` can stage a night
with it alone (``predict --zero-shot``). YASA is built in (BSD-3, a dependency); other stagers
are plugins (:mod:`passport_kit.sleep.stagers.gssc`: used only where the user installed it); each stager is one
module of :mod:`passport_kit.sleep.stagers`, listed from the registry wherever stagers are named.

The :class:`~passport_kit.sleep.hypnogram.Hypnogram` (:mod:`passport_kit.sleep.hypnogram`: stages per epoch, AASM
sleep statistics) is what prediction writes and the validation report compares; it lives here, under both, since
issue 60 (in prediction, it had the validation report import prediction).

This room sits under onboarding, prediction and the validation report: a stager reads a recording's own signal
(or, where only they exist, its windows) as arrays, never a model; of the package it imports only the ground floor.
Importing :mod:`passport_kit.sleep.hypnogram` loads this package's stager interface too (NumPy and the registry,
no stager's own package).
"""

from passport_kit.sleep.priors import (PRIORS, STAGES, SleepPrior, StagerChoice, auto_stagers, available_priors,
                                       classes_to_stages, combine_log_proba, get_prior, native_rates,
                                       parse_prior_channels, pick_channels, prior_channel_options, prior_log_proba,
                                       stager_help)

__all__ = ["PRIORS", "STAGES", "SleepPrior", "StagerChoice", "auto_stagers", "available_priors", "classes_to_stages",
           "combine_log_proba", "get_prior", "native_rates", "parse_prior_channels", "pick_channels",
           "prior_channel_options", "prior_log_proba", "stager_help"]
