"""Issue 43: for sleep staging the ladder starts from the zero-shot stager, and the user's nights adapt it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from passport_kit.onboard.ladder import Ladder, LadderData, stager_summary
from passport_kit.onboard.offset import OFFSET_C_GRID, diagonal_mask, fit_offset, softmax
from passport_kit.onboard.probe import ReadOutChoice, fit_head, fit_offset_read_out, offset_inputs
from passport_kit.onboard.rungs import STAGER_FIRST, TEXTBOOK_FIRST, LadderRung, rung_order

CLASSES = ["W", "N1", "N2", "N3", "REM"]


def _stages(rng: np.random.Generator, n_nights: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    ys, recs = [], []
    for night in range(n_nights):
        stage, seq = 0, []
        for _ in range(n):
            if rng.random() < 0.1:
                stage = int(rng.integers(0, 5))
            seq.append(stage)
        ys += seq
        recs += [f"n{night}"] * n
    return np.asarray(ys), np.asarray(recs)


def _nights(seed: int = 0, *, n_nights: int = 4, n: int = 80, stager: str = "good", band: float = 0.5,
            **options: object) -> LadderData:
    """Nights of 5 stages in runs. ``stager``: 'good' (knows the stages, over-calls N2 a little), 'biased' (knows
    them, over-calls N2 a lot: recalibration can fix it), 'useless' (a wrong channel: noise); band power carries
    ``band`` of signal per stage."""
    rng = np.random.default_rng(seed)
    y, recs = _stages(rng, n_nights, n)
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
                      prior_stages=[0, 1, 2, 3, 4], prior_spec={"name": "test", "eeg": "C3", "eog": None, "emg": None},
                      **options)


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


def test_the_base_is_the_best_stager_option_on_the_users_nights() -> None:
    """Several options (channels, stagers): the one that scores best zero-shot is the base, every one recorded."""
    good = _nights(0, n_nights=3, n=60)
    useless = _nights(0, n_nights=3, n=60, stager="useless")
    data = _nights(0, n_nights=3, n=60, stager_options=[
        ({"name": "test", "eeg": "E1"}, useless.prior), ({"name": "test", "eeg": "C3", "eeg_ref": "A2"}, good.prior)])
    ladder = Ladder(data)
    result = ladder.climb()
    assert ladder.prior_spec == {"name": "test", "eeg": "C3", "eeg_ref": "A2"}
    options = result.rungs[0].setting["options"]
    assert [o["channels"] for o in options] == ["EEG E1", "EEG C3-A2"]
    assert options[1]["score"] > options[0]["score"]


def test_rungs_are_registered_and_a_duplicate_name_is_refused() -> None:
    with pytest.raises(ValueError, match="already registered"):
        type("Again", (LadderRung,), {"name": "stager"})


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
             prior_spec=data.prior_spec, stages=data.prior_stages)
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
