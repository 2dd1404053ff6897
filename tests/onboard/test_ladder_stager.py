"""Issue 43: for sleep staging the ladder starts from the zero-shot stager, and the user's nights adapt it."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest
import torch

from tests.onboard.ladder_helpers import stage_runs
from passport_kit.onboard.ladder import Ladder, stager_summary
from passport_kit.onboard.ladder_inputs import LadderData
from passport_kit.onboard.offset import OFFSET_C_GRID, diagonal_mask, fit_offset, softmax
from passport_kit.onboard.probe import ReadOutChoice, fit_head, fit_offset_read_out, offset_inputs
from passport_kit.onboard.rungs import STAGER_FIRST, TEXTBOOK_FIRST, LadderRung, rung_order
from passport_kit.sleep import SleepPrior

CLASSES = ["W", "N1", "N2", "N3", "REM"]


def _nights(seed: int = 0, *, n_nights: int = 4, n: int = 80, stager: str = "good", band: float = 0.5,
            **options: object) -> LadderData:
    """Nights of 5 stages in runs. ``stager``: 'good' (knows the stages, over-calls N2 a little), 'biased' (knows
    them, over-calls N2 a lot: recalibration can fix it), 'useless' (a wrong channel: noise); band power carries
    ``band`` of signal per stage."""
    rng = np.random.default_rng(seed)
    y, recs = stage_runs(rng, n_nights, n)
    onehot = np.eye(5)[y]
    spectral = np.concatenate([onehot * band, np.zeros((len(y), 1))], 1) + rng.normal(size=(len(y), 6))
    if stager == "useless":
        logits = rng.normal(size=(len(y), 5)) * 1.5
    else:
        logits = 2.5 * onehot + rng.normal(size=(len(y), 5)) * 1.2
        logits[:, 2] += 0.5 if stager == "good" else 3.0
    prior = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    backbone = rng.normal(size=(len(y), 4))
    return LadderData(plain={"mean": np.concatenate([backbone, spectral], 1)}, y=y, groups=recs, recordings=recs,
                      classes=CLASSES, d_model=4, sleep=True, contexts=(0, 2), poolings=("mean",), prior=prior,
                      prior_stages=[0, 1, 2, 3, 4],
                      stager_choice={"name": "test", "eeg": "C3", "eog": None, "emg": None}, **options)


def _shipped_reads_stager(result: object) -> bool:
    choice = result.chosen.choice
    return choice is None or choice.offset


def test_a_sleep_task_with_a_stager_climbs_the_stager_first_order_and_records_every_rung() -> None:
    data = _nights(n_nights=2, n=60)
    assert rung_order(data) == STAGER_FIRST
    result = Ladder(data).climb()
    assert [r.name for r in result.rungs] == list(STAGER_FIRST)
    assert result.rungs[0].taken and result.rungs[0].setting["options"]
    summary = stager_summary(result)
    assert summary["base"] == "stager" and summary["order"] == list(STAGER_FIRST)
    assert summary["stager"]["score"] == pytest.approx(result.base.mean, abs=1e-4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_good_stager_with_few_labels_is_kept_recalibrated_or_as_it_is(seed: int) -> None:
    """Two short nights cannot show much: the ladder keeps the stager (possibly recalibrated, smoothed)."""
    result = Ladder(_nights(seed, n_nights=2, n=60, band=0.3)).climb()
    assert _shipped_reads_stager(result)
    assert result.chosen_rung in ("stager", "recalibrated", "stacked", "smoothing", "context")
    assert result.expected >= result.base.mean - 1e-9


def test_a_stager_that_over_calls_a_stage_is_recalibrated_on_enough_nights() -> None:
    result = Ladder(_nights(0, n_nights=6, n=120, stager="biased", band=0.0)).climb()
    taken = [r.name for r in result.rungs if r.taken]
    assert "recalibrated" in taken
    assert result.expected > result.base.mean + 0.05


@pytest.mark.parametrize("seed", [0, 1])
def test_a_useless_stager_is_left_for_band_power(seed: int) -> None:
    result = Ladder(_nights(seed, n_nights=5, n=100, stager="useless", band=1.0)).climb()
    assert result.rungs[0].name == "stager"
    assert any(r.name == "bandpower" and r.taken for r in result.rungs)
    assert not _shipped_reads_stager(result)
    assert result.bandpower is not None and result.bandpower.choice == ReadOutChoice(result.bandpower.choice.c)


@pytest.mark.parametrize("stager", ["good", "biased", "useless"])
def test_the_shipped_models_inner_score_is_never_below_the_stagers(stager: str) -> None:
    for seed in range(2):
        result = Ladder(_nights(seed, n_nights=3, n=60, stager=stager)).climb()
        assert result.expected >= result.base.mean - 1e-9


def test_the_stager_first_order_can_be_switched_off_for_the_ablation() -> None:
    assert rung_order(_nights(n_nights=2, n=40, stager_first=False)) == TEXTBOOK_FIRST
    not_stages = _nights(n_nights=2, n=40)
    not_stages.prior_stages = None  # classes that are not the five AASM stages: no stager to start from
    assert rung_order(not_stages) == TEXTBOOK_FIRST


def test_another_stager_option_replaces_the_default_only_by_the_paired_rule() -> None:
    """Options as good as the default (another draw of the same stager) leave it the base: choosing on noise is not
    allowed more than a rung is."""
    first, second = _nights(0, n_nights=3, n=60), _nights(1, n_nights=3, n=60)
    data = _nights(0, n_nights=3, n=60, stager_options=[
        ({"name": "test", "eeg": "C3"}, first.prior),
        ({"name": "test", "eeg": "C4"}, np.where(np.arange(len(first.y))[:, None] % 7 == 0, second.prior,
                                                 first.prior))])
    ladder = Ladder(data)
    result = ladder.climb()
    assert ladder.stager_choice == {"name": "test", "eeg": "C3"}
    assert "stays" in result.rungs[0].reason


def test_the_base_is_the_best_stager_option_on_the_users_nights() -> None:
    """Several options (channels, stagers): one that clearly beats the default is the base, every one recorded."""
    good = _nights(0, n_nights=3, n=60)
    useless = _nights(0, n_nights=3, n=60, stager="useless")
    data = _nights(0, n_nights=3, n=60, stager_options=[
        ({"name": "test", "eeg": "E1"}, useless.prior), ({"name": "test", "eeg": "C3", "eeg_ref": "A2"}, good.prior)])
    ladder = Ladder(data)
    result = ladder.climb()
    assert ladder.stager_choice == {"name": "test", "eeg": "C3", "eeg_ref": "A2"}
    options = result.rungs[0].setting["options"]
    assert [o["channels"] for o in options] == ["EEG E1", "EEG C3-A2"]
    assert options[1]["score"] > options[0]["score"]


def test_rungs_are_registered_and_a_duplicate_name_is_refused() -> None:
    from passport_kit.onboard.rungs import RUNGS

    assert set(STAGER_FIRST) | set(TEXTBOOK_FIRST) <= set(RUNGS)
    with pytest.raises(ValueError, match="a ladder rung named 'stager' is already registered"):
        type("Again", (LadderRung,), {"name": "stager"})
    assert RUNGS["stager"].__name__ != "Again"


# -- the offset read-out ------------------------------------------------------------------------------------------
def test_an_offset_fit_shrunk_hard_is_the_stager_and_unshrunk_recovers_a_known_recalibration() -> None:
    rng = np.random.default_rng(0)
    n, k = 4000, 3
    logp = np.log(rng.dirichlet(np.ones(k), n))
    scale, bias = np.array([2.0, 0.5, 1.0]), np.array([0.0, 1.0, -0.5])
    truth = softmax(scale * logp + bias)
    y = np.array([rng.choice(k, p=p) for p in truth])
    z = (logp - logp.mean(0)) / logp.std(0)
    mask = diagonal_mask(k, k, [0, 1, 2])
    stiff = fit_offset(z, y, logp, 1e-6, mask=mask)
    assert np.allclose(stiff.predict_proba(z, logp), softmax(logp), atol=1e-3)
    free = fit_offset(z, y, logp, 1e6, mask=mask)
    # the deviation on standardised inputs: (scale - 1) * std on the diagonal
    assert np.allclose(np.diag(free.coef), (scale - 1.0) * logp.std(0), atol=0.15)
    assert np.all(free.coef[~mask] == 0)


def test_offset_gradient_matches_finite_differences() -> None:
    from scipy.optimize import check_grad

    rng = np.random.default_rng(1)
    z, off = rng.normal(size=(50, 4)), rng.normal(size=(50, 3))
    y = rng.integers(0, 3, 50)
    # the objective fit_offset minimises, rebuilt from its pieces (C = 2, all coefficients free)
    def loss(theta: np.ndarray) -> float:
        coef, b = theta[:12].reshape(3, 4), theta[12:]
        logits = off + z @ coef.T + b
        lse = np.log(np.exp(logits).sum(1))
        return float(np.mean(lse - logits[np.arange(50), y]) + theta @ theta / 4.0)

    fit = fit_offset(z, y, off, 2.0)
    theta = np.concatenate([fit.coef.ravel(), fit.intercept])
    grad = lambda t: __import__("scipy.optimize", fromlist=["approx_fprime"]).approx_fprime(t, loss, 1e-7)  # noqa: E731
    assert np.linalg.norm(grad(theta)) < 1e-3  # the optimum of that objective
    assert check_grad(loss, grad, theta) < 1e-3


@pytest.mark.parametrize("context", [0, 2])
def test_an_offset_read_out_folded_into_the_head_gives_the_fitted_probabilities(context: int) -> None:
    from passport_kit.model.heads import ProbeHead

    data = _nights(0, n_nights=2, n=40)
    choice = ReadOutChoice(3.0, prior_weight=1.0, bandpower_weight=1.0, offset=True, context=context)
    head = ProbeHead(4, 5, 1, bands=((0.5, 4.0), (4.0, 8.0), (8.0, 12.0)))
    assert head.n_spectral_features == 6
    rec = list(data.recordings)
    fit_head(head, data.plain, data.y, choice, 5, recordings=rec, seed=0, prior=data.prior,
             stager_choice=data.stager_choice, stages=data.prior_stages)
    fit, standardise = fit_offset_read_out(data.plain, data.y, choice, data.prior, data.prior_stages, d_model=4,
                                           recordings=rec)
    z, _, offset, _ = offset_inputs(data.plain, choice, data.prior, data.prior_stages, rec, 4)
    expected = fit.predict_proba(standardise(z), offset)
    plain = np.concatenate([data.plain["mean"], data.prior], 1)
    got = torch.softmax(head.read_out(torch.from_numpy(plain).float(), rec), -1).detach().numpy()
    assert np.allclose(got, expected, atol=1e-4)
    assert min(OFFSET_C_GRID) < 1.0 < max(OFFSET_C_GRID)


def test_the_ladders_kappa_is_scikit_learns() -> None:
    from sklearn.metrics import cohen_kappa_score

    from passport_kit.onboard.ladder import kappa

    rng = np.random.default_rng(3)
    for _ in range(20):
        y, pred = rng.integers(0, 5, 200), rng.integers(0, 5, 200)
        pred[:100] = y[:100]
        assert kappa(y, pred, 5) == pytest.approx(cohen_kappa_score(y, pred, labels=np.arange(5)), abs=1e-12)
    assert np.isnan(kappa(np.zeros(5, int), np.zeros(5, int), 3))


def _selection(taken: list[str], score: float, stager: float = 0.55) -> dict:
    rungs = [{"rung": r, "tried": True, "taken": r in taken or r == "stager", "score": 0.6, "gain": None,
              "standard_error": None, "reason": "", "setting": None} for r in STAGER_FIRST]
    return {"metric": "kappa", "base": "stager", "score": score, "ladder": rungs, "increment_over_stager":
            score - stager, "stager": {"prior": "yasa", "channels": "EEG C3-A2", "score": stager}}


@pytest.mark.parametrize(("taken", "says"), [
    ([], "your nights did not improve on YASA: shipped YASA as it is"),
    (["recalibrated"], "your nights did not improve on YASA beyond recalibrating it (+0.020 kappa): shipped YASA, "
                       "recalibrated on your nights"),
    (["recalibrated", "stacked", "smoothing"], "your nights improved on YASA by +0.020 kappa: shipped YASA with band "
                                                "power, fitted around its output, with night smoothing"),
    (["bandpower", "context"], "band power beats YASA here"),
])
def test_adapt_says_the_stagers_score_beside_the_shipped_models_and_what_the_labels_did(taken: list[str],
                                                                                       says: str) -> None:
    from passport_kit.cli.onboard import stager_lines

    lines = stager_lines(_selection(taken, 0.57))
    assert lines[0] == ("sleep stager YASA on EEG C3-A2, zero-shot on your nights (same folds): kappa 0.550; the "
                        "model shipped: 0.570")
    assert says in lines[1]
    assert stager_lines({**_selection([], 0.5), "base": "bandpower"}) == []


def test_with_too_few_windows_to_cross_validate_the_stager_ships_as_it_is() -> None:
    data = _nights(0, n_nights=1, n=8)
    result = Ladder(data).climb()
    assert result.folds is None and result.chosen.choice is None and result.chosen_rung == "stager"
    assert stager_summary(result)["base"] == "stager" and stager_summary(result)["stager_score"] is None


class _Flat(SleepPrior):
    """A test stager: every stage equally likely (registered once, when this module is imported)."""

    name: ClassVar[str] = "flat-test"

    def night_log_proba(self, eeg_uv, sfreq, *, eog_uv=None, emg_uv=None):  # noqa: ANN001, ANN201
        return np.log(np.full((int(len(eeg_uv) // (30 * sfreq)), 5), 0.2))


class _Wake(_Flat):
    """A test stager: Wake more likely than the rest."""

    name: ClassVar[str] = "wake-test"

    def night_log_proba(self, eeg_uv, sfreq, *, eog_uv=None, emg_uv=None):  # noqa: ANN001, ANN201
        p = np.full((int(len(eeg_uv) // (30 * sfreq)), 5), 0.1)
        p[:, 0] = 0.6
        return np.log(p)


def test_auto_offers_every_channel_choice_of_every_stager_and_their_average(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 43 item 3: with two stagers installed the options include their averaged log-probabilities."""
    from types import SimpleNamespace

    import passport_kit.onboard.ladder_inputs as inputs

    from passport_kit.sleep.priors import PRIORS, available_priors

    available_priors()  # the shipped stagers registered: out of auto here, the two test stagers in it
    for name in PRIORS:
        monkeypatch.setattr(PRIORS[name], "auto_order", {"flat-test": 0, "wake-test": 1}.get(name))
    montage = SimpleNamespace(ch_names=["L", "R"], positions=np.array([[-0.08, 0.0, 0.0], [0.08, 0.0, 0.0]]),
                              kinds=["eeg", "eeg"])
    windows = SimpleNamespace(config=SimpleNamespace(window_seconds=30.0), montage=montage,
                              x=np.zeros((4, 2, 30, 200), dtype=np.float32), onset_s=np.arange(4) * 30.0,
                              recording=np.array(["a"] * 4))
    options, why = inputs.stager_options(windows, "auto")
    assert why == ""
    names = [(spec["name"], spec.get("eeg_ref")) for spec, _ in options]
    assert names == [("flat-test+wake-test", None), ("flat-test", None), ("wake-test", None),
                     ("flat-test+wake-test", "R"), ("flat-test", "R"), ("wake-test", "R")]  # the default first
    mean = dict((spec["name"], p) for spec, p in options[:3])["flat-test+wake-test"]
    expected = np.exp((np.log(0.2) + np.log(np.r_[0.6, [0.1] * 4])) / 2)
    assert np.allclose(np.exp(mean[0]), expected / expected.sum())
    fixed, _ = inputs.stager_options(windows, "wake-test", "R-L")
    assert [(s["name"], s["eeg"], s.get("eeg_ref")) for s, _ in fixed] == [("wake-test", "R", "L")]
    assert inputs.stager_options(windows, "none") == ([], "no prior asked for (--prior none)")


def test_with_one_training_night_nothing_replaces_the_stager_on_folds_within_it() -> None:
    """Blocked folds within one night say how well its own epochs are told apart, not how a model carries to a new
    night: a stager trained on thousands of nights stays (here band power would win those folds by far)."""
    data = _nights(0, n_nights=1, n=300, stager="useless", band=1.5)
    result = Ladder(data).climb()
    assert result.folds.kind == "blocks"
    assert result.chosen_rung == "stager" and result.chosen.choice is None
    band = next(r for r in result.rungs if r.name == "bandpower")
    assert band.gain > 0.2 and not band.taken and "the stager stays" in band.reason


def test_the_textbook_path_is_what_the_textbook_first_order_ships_on_the_same_folds() -> None:
    """Issue 55 item 5: the composite challenger is the whole textbook-first climb (no LP-FT), on the same folds."""
    alone = Ladder(_nights(2, stager="useless", stager_first=False)).climb()
    ladder = Ladder(_nights(2, stager="useless"))
    ladder.candidates["context"] = marker = object()
    path = ladder.textbook_path()
    assert path.name == "textbook" and path.choice == alone.chosen.choice and path.mean == pytest.approx(alone.expected)
    assert " -> ".join(r.name for r in alone.rungs if r.taken) == path.setting["path"]
    assert ladder.candidates["context"] is marker  # the main climb's record of each rung is left as it was


def _composite(incumbent: float, challenger: float, stager: float = 0.3, holds_base: bool = False):
    """Return the climb after the textbook rung, where per-fold scores are the given means plus the same small noise."""
    from types import SimpleNamespace

    from passport_kit.onboard.ladder import paired_gain
    from passport_kit.onboard.rungs import Climb, Scored, TextbookPathRung

    noise = np.array([0.01, -0.02, 0.015, -0.005, 0.0])

    def scored(name: str, mean: float) -> Scored:
        return Scored(name, ReadOutChoice(1.0, context=2) if name != "stager" else None, mean + noise, [])

    base, top, mine = scored("stager", stager), scored("backbone", incumbent), scored("textbook", challenger)
    candidates = {"stager": base}
    ladder = SimpleNamespace(candidate=candidates.get, keep=candidates.__setitem__, textbook_path=lambda: mine,
                             holds_base=holds_base,
                             se_multiple=2.0, min_effect=0.02, gain=lambda a, b: paired_gain(a.scores, b.scores, 5),
                             clears=lambda g, se: not holds_base and g > 2 * se and g >= 0.02)
    climb = Climb(incumbent=top, template=top.choice, rungs=[])
    TextbookPathRung().run(ladder, climb)
    return climb


def test_the_textbook_paths_model_ships_where_it_left_the_stager_and_scores_above_the_climb_from_it() -> None:
    taken = _composite(incumbent=0.85, challenger=0.90)
    assert taken.rungs[-1].taken and taken.incumbent.name == "textbook" and "better of the two" in taken.rungs[-1].reason
    assert not _composite(incumbent=0.85, challenger=0.80).rungs[-1].taken  # the climb from the stager did better
    kept = _composite(incumbent=0.31, challenger=0.315)  # not clear of the stager: the burden of leaving it
    assert not kept.rungs[-1].taken and "over the stager" in kept.rungs[-1].reason
    assert not _composite(incumbent=0.85, challenger=0.95, holds_base=True).rungs[-1].taken
