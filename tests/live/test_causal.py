"""Causal staging without a stream: the forward filter, the look-ahead, gaps, bounded history (a scorer of known
answers stands in for the model)."""

from __future__ import annotations

import numpy as np
import pytest

from passport_kit.errors import ConfigError
from passport_kit.inference.night_report import AdapterFacts
from passport_kit.live.causal import CausalSettings, CausalStager
from passport_kit.live.prediction import EpochScorer
from passport_kit.model.night import smooth

SFREQ = 10.0          # 300 samples per epoch: small arrays
N_PER_EPOCH = 300
CLASSES = ["W", "N1", "N2", "N3", "REM"]
RNG = np.random.default_rng(0)
ANSWERS = RNG.dirichlet(np.ones(5), size=30)        # each epoch's own answer, by its index
TRANSITIONS = np.full((5, 5), 0.05) + np.eye(5) * 0.75
PRIOR = np.array([0.3, 0.1, 0.3, 0.1, 0.2])


def scorer(*, smoothing: bool = True, temperature: float = 1.0, history: int = 3, seen: list | None = None
           ) -> EpochScorer:
    """Return a scorer whose answer for an epoch is ANSWERS[its index], read from the samples' value."""

    def score(raw, name, first):  # noqa: ANN001, ANN202
        data = raw.get_data()
        if seen is not None:
            seen.append(data.shape[1])
        k = int(round(data[0, -1] * 1e6))  # the samples of epoch k hold k µV
        return ANSWERS[k], False, np.zeros(1, np.uint8), [], None

    facts = AdapterFacts(classes=CLASSES, window_seconds=30.0, task="sleep-staging", adapter="fake", base_name="fake")
    return EpochScorer(facts=facts, smoothing=(TRANSITIONS, PRIOR) if smoothing else None, temperature=temperature,
                       history=history, _score=score)


def samples(first: int, stop: int) -> np.ndarray:
    """Return epochs ``first``..``stop - 1`` as samples ``(T, 1)`` in volts (epoch k holds k µV)."""
    return np.repeat(np.arange(first, stop, dtype=np.float64), N_PER_EPOCH)[:, None] * 1e-6


def stage(stager: CausalStager, data: np.ndarray, chunk: int | None = None) -> list:
    chunks = [data] if chunk is None else [data[i:i + chunk] for i in range(0, len(data), chunk)]
    return [e for c in chunks for e in stager.push(c)] + stager.finish()


@pytest.mark.parametrize("look_ahead", [0, 1, 3])
def test_each_epoch_is_forward_backward_over_the_night_so_far_plus_its_look_ahead(look_ahead: int) -> None:
    staged = stage(CausalStager(scorer(), ["EL1"], SFREQ, name="s", settings=CausalSettings(look_ahead=look_ahead)),
                   samples(0, 12))
    assert len(staged) == 12
    for t, epoch in enumerate(staged):
        known = min(t + look_ahead, 11) + 1   # the epochs its stage may read
        expected = smooth(ANSWERS[:known], TRANSITIONS, PRIOR)[t]
        np.testing.assert_allclose(epoch.proba, expected, rtol=1e-9, atol=1e-12)
        assert epoch.onset_s == 30.0 * t


def test_the_last_epoch_of_a_night_gets_the_offline_smoothing() -> None:
    staged = stage(CausalStager(scorer(), ["EL1"], SFREQ, name="s"), samples(0, 10))
    np.testing.assert_allclose(staged[-1].proba, smooth(ANSWERS[:10], TRANSITIONS, PRIOR)[-1], rtol=1e-9)
    # and not the first's: its causal stage reads no later epoch, the offline one reads them all
    assert not np.allclose(staged[0].proba, smooth(ANSWERS[:10], TRANSITIONS, PRIOR)[0])


def test_chunks_of_any_size_stage_the_same() -> None:
    whole = stage(CausalStager(scorer(), ["EL1"], SFREQ, name="s", settings=CausalSettings(look_ahead=2)),
                  samples(0, 8))
    chunked = stage(CausalStager(scorer(), ["EL1"], SFREQ, name="s", settings=CausalSettings(look_ahead=2)),
                    samples(0, 8), chunk=77)
    assert [e.onset_s for e in whole] == [e.onset_s for e in chunked]
    assert all(np.array_equal(a.proba, b.proba) for a, b in zip(whole, chunked))


def test_a_gap_is_never_bridged() -> None:
    stager = CausalStager(scorer(), ["EL1"], SFREQ, name="s", settings=CausalSettings(look_ahead=1))
    before = stager.push(samples(0, 5)) + stager.push(samples(5, 6)[:100])   # a third of epoch 5, then the break
    before += stager.gap(400.0)
    after = stager.push(samples(6, 10)) + stager.finish()
    assert [e.onset_s for e in before] == [0.0, 30.0, 60.0, 90.0, 120.0]      # the part-epoch is dropped
    assert [e.onset_s for e in after] == [400.0, 430.0, 460.0, 490.0]
    assert {e.segment for e in before} == {0} and {e.segment for e in after} == {1}
    # the last epoch before the gap had no look-ahead; after it, the filter starts afresh from epoch 6
    np.testing.assert_allclose(before[-1].proba, smooth(ANSWERS[:5], TRANSITIONS, PRIOR)[4], rtol=1e-9)
    for i, epoch in enumerate(after):
        expected = smooth(ANSWERS[6:6 + min(i + 1, 3) + 1], TRANSITIONS, PRIOR)[i]
        np.testing.assert_allclose(epoch.proba, expected, rtol=1e-9)


def test_the_history_the_scorer_reads_is_bounded() -> None:
    seen: list[int] = []
    stager = CausalStager(scorer(history=3, seen=seen), ["EL1"], SFREQ, name="s")
    stage(stager, samples(0, 20))
    assert seen == [300, 600] + [900] * 18      # at most 3 epochs, whatever the length of the night
    assert stager._buffer.shape == (900, 1)


def test_settings_history_overrides_the_scorers() -> None:
    seen: list[int] = []
    stage(CausalStager(scorer(history=3, seen=seen), ["EL1"], SFREQ, name="s", settings=CausalSettings(history=1)),
          samples(0, 4))
    assert seen == [300] * 4


def test_without_smoothing_each_epoch_is_its_own_answer_tempered() -> None:
    from passport_kit.model.night import temper

    staged = stage(CausalStager(scorer(smoothing=False, temperature=2.0), ["EL1"], SFREQ, name="s",
                                settings=CausalSettings(look_ahead=2)), samples(0, 5))
    np.testing.assert_allclose(np.stack([e.proba for e in staged]), temper(ANSWERS[:5], 2.0), rtol=1e-12)


@pytest.mark.parametrize(("settings", "message"), [
    ({"look_ahead": -1}, "--look-ahead must be 0 or more"), ({"history": 0}, "--history must be at least 1")])
def test_bad_settings_are_one_line(settings: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        CausalSettings(**settings)


def test_a_rate_without_whole_samples_per_epoch_is_refused() -> None:
    with pytest.raises(ConfigError, match="does not give a whole number of samples per 30-s epoch"):
        CausalStager(scorer(), ["EL1"], 100.01, name="s")


def test_the_terminal_line_says_a_flags_reasons_once() -> None:
    from passport_kit.live.causal import StagedEpoch
    from passport_kit.live.outputs import terminal_line

    epoch = StagedEpoch(onset_s=3725.0, proba=np.array([0.1, 0.1, 0.6, 0.1, 0.1]), flagged=True,
                        flags=np.zeros(1, np.uint8), notes=("half the channels are flat",), segment=0)
    first = terminal_line(epoch, CLASSES, elapsed_s=61.0, lag_s=0.25)
    assert first == "1:02:05  N2    60.0 %  elapsed 0:01:01  lag 0.25 s  FLAGGED: half the channels are flat"
    assert terminal_line(epoch, CLASSES, elapsed_s=62.0, lag_s=None, said=epoch.notes).endswith(
        "lag n/a  FLAGGED: as above")
