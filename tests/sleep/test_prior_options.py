"""Issue 43 items 3-4: the channels a stager reads (derivations, EOG-like pairs) and several stagers averaged."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from passport_kit.errors import ConfigError, DataError
from passport_kit.sleep import (SleepPrior, StagerChoice, combine_log_proba, get_prior, parse_prior_channels,
                                prior_channel_options, prior_log_proba)
from passport_kit.sleep.priors import MAX_CHANNEL_OPTIONS, MeanPrior


def _ear_montage() -> tuple[list[str], np.ndarray, list[str]]:
    from passport_kit.montage import get_montage

    m = get_montage("eesm17-ear")
    return list(m.ch_names), np.asarray(m.positions), list(m.kinds)


def test_an_ear_montage_offers_the_central_channel_then_derivations_across_the_head() -> None:
    names, pos, kinds = _ear_montage()
    options = prior_channel_options(names, pos, kinds)
    assert 2 <= len(options) <= MAX_CHANNEL_OPTIONS
    assert options[0].eeg_ref is None  # the positions' best guess first, as predict --zero-shot reads
    refs = [o for o in options if o.eeg_ref is not None]
    assert refs, "a montage with electrodes on both sides offers a derivation"
    index = {n: i for i, n in enumerate(names)}
    for o in refs:
        span = np.linalg.norm(pos[index[o.eeg]] - pos[index[o.eeg_ref]])
        assert span >= 0.05
    assert len(set(options)) == len(options)
    assert all(c in names for o in options for c in (o.eeg, o.eeg_ref, o.eog, o.eog_ref) if c is not None)


def test_a_one_channel_montage_has_one_option_and_a_headband_an_eog_like_frontal_pair() -> None:
    one = prior_channel_options(["Cz"], np.array([[0.0, 0.0, 0.088]]), ["eeg"])
    assert one == [StagerChoice("", "Cz")]
    # Muse-like: AF7, AF8 (frontal, low), TP9, TP10 (behind the ears)
    names = ["TP9", "AF7", "AF8", "TP10"]
    pos = np.array([[-0.080, -0.030, -0.010], [-0.055, 0.065, 0.010], [0.055, 0.065, 0.010],
                    [0.080, -0.030, -0.010]])
    options = prior_channel_options(names, pos, ["eeg"] * 4)
    assert any(o.eog == "AF7" and o.eog_ref == "AF8" for o in options)


def test_prior_channels_names_a_channel_or_a_derivation_and_refuses_others() -> None:
    names, kinds = ["ELA", "ERA", "Cz-A1", "EMG1"], ["eeg", "eeg", "eeg", "emg"]
    assert parse_prior_channels("ELA-ERA", names, kinds) == StagerChoice("", "ELA", None, "EMG1", "ERA")
    assert parse_prior_channels("Cz-A1", names, kinds).eeg == "Cz-A1"  # a channel whose name holds a dash
    both = parse_prior_channels("ELA,ERA-ELA", names, kinds)
    assert (both.eeg, both.eeg_ref, both.eog, both.eog_ref) == ("ELA", None, "ERA", "ELA")
    with pytest.raises(DataError, match="neither a channel"):
        parse_prior_channels("C3-A2", names, kinds)
    with pytest.raises(ConfigError, match="EEG\\[-REF\\]"):
        parse_prior_channels("a,b,c", names, kinds)


class _Mean(SleepPrior):
    """A test stager whose 'stage' is the sign of each epoch's mean signal: W if positive, N3 if negative."""

    name: ClassVar[str] = "sign-test"

    def night_log_proba(self, eeg_uv, sfreq, *, eog_uv=None, emg_uv=None):  # noqa: ANN001, ANN201
        n = int(len(eeg_uv) // (30 * sfreq))
        means = eeg_uv[: int(n * 30 * sfreq)].reshape(n, -1).mean(1)
        p = np.full((n, 5), 1e-3)
        p[means > 0, 0] = 1.0
        p[means <= 0, 3] = 1.0
        return np.log(p / p.sum(1, keepdims=True))


def test_the_stager_reads_a_derivation_as_the_difference_of_its_two_channels() -> None:
    x = np.zeros((2, 2, 30, 200), dtype=np.float32)
    x[:, 0] = 1.0   # A
    x[:, 1] = 2.0   # B: A - B is negative, A alone positive
    onsets = np.array([0.0, 30.0])
    alone = prior_log_proba(_Mean(), x, onsets, ["A", "B"], StagerChoice("sign-test", "A"), window_seconds=30)
    derived = prior_log_proba(_Mean(), x, onsets, ["A", "B"], StagerChoice("sign-test", "A", eeg_ref="B"),
                              window_seconds=30)
    assert alone.argmax(1).tolist() == [0, 0] and derived.argmax(1).tolist() == [3, 3]
    with pytest.raises(ConfigError, match="lacks"):
        prior_log_proba(_Mean(), x, onsets, ["A", "B"], StagerChoice("sign-test", "A", eeg_ref="C"), window_seconds=30)


def test_a_spec_with_references_round_trips_and_one_without_keeps_the_old_keys() -> None:
    spec = StagerChoice("yasa+gssc", "ELA", "E1", None, "ERA", "E2")
    assert StagerChoice.from_dict(spec.as_dict()) == spec
    assert set(StagerChoice("yasa", "C3").as_dict()) == {"name", "eeg", "eog", "emg"}
    assert spec.channels() == "EEG ELA-ERA, EOG E1-E2"


def test_several_stagers_average_their_log_probabilities_renormalised() -> None:
    a = np.log(np.array([[0.7, 0.1, 0.1, 0.05, 0.05], [0.2, 0.2, 0.2, 0.2, 0.2]]))
    b = np.log(np.array([[0.1, 0.7, 0.1, 0.05, 0.05], [0.6, 0.1, 0.1, 0.1, 0.1], [0.2] * 5]))
    out = combine_log_proba([a, b])
    assert out.shape == (2, 5)  # nights of different lengths are cut to the shortest
    assert np.allclose(np.exp(out).sum(1), 1.0)
    expected = np.exp((a + b[:2]) / 2)
    assert np.allclose(np.exp(out), expected / expected.sum(1, keepdims=True))
    mean = get_prior("sign-test+sign-test")
    assert isinstance(mean, MeanPrior) and len(mean.members) == 2
    with pytest.raises(ConfigError, match="unknown sleep prior"):
        get_prior("sign-test+nope")


def test_a_channel_named_after_a_central_site_is_read_before_positions_are() -> None:
    """tuh-19's positions sit in another head frame than the templates: T8 was nearer the C4 template than C4."""
    from passport_kit.montage import get_montage
    from passport_kit.sleep import pick_channels

    m = get_montage("tuh-19")
    assert pick_channels(list(m.ch_names), np.asarray(m.positions), list(m.kinds)).eeg == "C4"
    names = ["EEG Fpz-Cz", "EEG Cz-A1"]
    assert pick_channels(names, np.zeros((2, 3)), ["eeg", "eeg"]).eeg == "EEG Cz-A1"


def test_a_derivation_and_its_reverse_are_one_option() -> None:
    from passport_kit.montage import get_montage

    m = get_montage("tuh-19")
    options = prior_channel_options(list(m.ch_names), np.asarray(m.positions), list(m.kinds))
    pairs = [frozenset((o.eeg, o.eeg_ref)) for o in options if o.eog is None]
    assert len(pairs) == len(set(pairs))


@pytest.mark.parametrize(("text", "message"), [
    ("ELA-ELA", "subtracts channel 'ELA' from itself"),              # issue 57: an all-zero signal, shipped
    ("ELA,ELA", "the same channel as EEG and as EOG"),
    ("ELA-ERA,ERA-ELA", "the same channels as EEG and as EOG"),
])
def test_prior_channels_that_mean_nothing_are_refused(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_prior_channels(text, ["ELA", "ERA", "EMG1"], ["eeg", "eeg", "emg"])


def test_a_long_prior_channels_value_is_cut_in_the_message() -> None:
    # Issue 57: a 100,000-character value was echoed as a 100 KB error line.
    with pytest.raises(DataError) as caught:
        parse_prior_channels("X" * 100_000, ["ELA", "ERA"], ["eeg", "eeg"])
    assert len(str(caught.value)) < 300 and "100,000 characters" in str(caught.value)
