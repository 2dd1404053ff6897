"""The ladder (issue 33): the textbook at its base, rungs taken only on a clear paired gain, the record it keeps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from passport_kit.onboard.criteria import MIN_EFFECT
from passport_kit.onboard.ladder import Ladder, fold_score, inner_folds, paired_gain, set_zero_shot, zero_shot_proba
from passport_kit.onboard.ladder_inputs import LadderData
from passport_kit.onboard.probe import ReadOutChoice, fit_read_out
from tests.onboard.ladder_helpers import stage_runs


def _blocks(informative: str, n_subjects: int = 6, per: int = 30, seed: int = 0, d: int = 8
            ) -> tuple[dict, np.ndarray, np.ndarray]:
    """Return read-out inputs ``{"mean": (N, d + 12)}`` where only the ``informative`` block ("backbone",
    "spectral" or "none") carries the class; labels; subjects."""
    rng = np.random.default_rng(seed)
    y = np.tile(np.repeat([0, 1], per // 2), n_subjects)
    subjects = np.repeat([f"s{k}" for k in range(n_subjects)], per)
    backbone = rng.normal(size=(len(y), d))
    spectral = rng.normal(size=(len(y), 12))
    if informative != "none":
        target = backbone if informative == "backbone" else spectral
        target[:, :3] += 1.5 * y[:, None]
    return {"mean": np.concatenate([backbone, spectral], axis=1)}, y, subjects


def _data(plain: dict, y: np.ndarray, subjects: np.ndarray, d: int = 8, **kw) -> LadderData:
    return LadderData(plain=plain, y=y, groups=subjects, recordings=subjects, classes=["a", "b"], d_model=d,
                      poolings=("mean",), **kw)


def test_the_band_power_rung_is_the_textbook_pipeline_exactly() -> None:
    """Item 1 of issue 33: StandardScaler + LogisticRegression(C, class_weight='balanced') on the same features."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    plain, y, subjects = _blocks("spectral", seed=3)
    y = y.copy()
    y[:20] = 0  # unbalanced classes: the balanced weights matter
    ladder = Ladder(_data(plain, y, subjects))
    result = ladder.climb()
    band = result.bandpower.choice
    assert band.backbone_weight == 0 and band.context == 0 and band.prior_weight == 0
    lr, standardise = fit_read_out(plain, y, band, 2, d_model=8)
    ours = lr.predict_proba(standardise(plain["mean"]))
    spectral = plain["mean"][:, 8:]  # the band-power block (the backbone's weight is 0)
    textbook = make_pipeline(StandardScaler(), LogisticRegression(C=band.c, class_weight="balanced", max_iter=2000,
                                                                   random_state=0)).fit(spectral, y)
    assert np.allclose(ours, textbook.predict_proba(spectral), atol=1e-6, rtol=0)
    # C is the best mean inner score of the grid (LogisticRegressionCV's rule), not the one-standard-error rule.
    grid = result.rungs[0].setting
    assert grid["C"] == band.c
    scores = {g["C"]: g["auroc"] for g in result.bandpower.grid}
    assert scores[band.c] == max(scores.values())


def test_the_textbook_head_folded_into_the_model_gives_the_pipelines_probabilities() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from passport_kit.engine.forward import predict_proba
    from passport_kit.model.spectral import band_power_features
    from tests.onboard.test_probe import _meta, _probe_model, _windows

    from passport_kit.onboard.probe import ReadOutChoice, fit_head, plain_features
    from passport_kit.engine.forward import read_out_features

    x, y, _ = _windows(20, 4, seed=1)
    model = _probe_model()
    rows = np.arange(len(y))
    plain = plain_features(read_out_features(model, x, _meta(2), rows, pooling="meanstd"), 200, ("mean", "meanstd"))
    fit_head(model.head, plain, y, ReadOutChoice(0.3), 2, recordings=None, seed=0)
    ours = predict_proba(model, x, _meta(2))
    spectral = band_power_features(torch.from_numpy(x), model.head.bands).numpy().astype(np.float64)
    textbook = make_pipeline(StandardScaler(), LogisticRegression(C=0.3, class_weight="balanced", max_iter=2000,
                                                                   random_state=0)).fit(spectral, y)
    # float32 head and features: agreement to float32's precision
    assert np.allclose(ours, textbook.predict_proba(spectral), atol=2e-4)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("informative", ["spectral", "backbone", "none"])
def test_the_chosen_inner_score_is_never_below_band_powers(informative: str, seed: int) -> None:
    plain, y, subjects = _blocks(informative, seed=seed)
    result = Ladder(_data(plain, y, subjects), seed=seed).climb()
    assert result.expected >= result.bandpower.mean - 1e-12
    taken = [r for r in result.rungs if r.taken and r.name != "bandpower"]
    for rung in taken:  # a rung taken only on a paired gain above twice its standard error and the minimum effect
        assert rung.gain > 2 * rung.standard_error and rung.gain >= MIN_EFFECT["auroc"]
    if informative == "backbone":
        assert result.chosen_rung == "backbone" and result.expected > result.bandpower.mean + 0.2
    elif informative == "spectral":
        assert result.chosen_rung == "bandpower"  # the textbook, exactly, where the backbone adds nothing
    # (pure noise: either is chance; the rule may climb on a lucky draw, measured in docs/RESULTS.md § The ladder)


def test_lpft_is_tried_only_from_a_backbone_read_out_the_ladder_took() -> None:
    calls = []

    def lpft(choice):
        calls.append(choice)
        return None

    plain, y, subjects = _blocks("spectral")
    result = Ladder(_data(plain, y, subjects)).climb(lpft)
    assert calls == [] and not [r for r in result.rungs if r.name == "lpft"][0].tried
    plain, y, subjects = _blocks("backbone")
    Ladder(_data(plain, y, subjects)).climb(lpft)
    assert len(calls) == 1 and calls[0].backbone_weight > 0


def test_a_gain_within_the_minimum_effect_does_not_climb() -> None:
    gain, se, n = paired_gain(np.array([0.805, 0.806, 0.805, 0.806]), np.full(4, 0.80), 4)
    assert n == 4 and 0 < se < gain < MIN_EFFECT["auroc"]
    plain, y, subjects = _blocks("spectral")
    ladder = Ladder(_data(plain, y, subjects), min_effect=0.5)
    plain_b, y_b, s_b = _blocks("backbone")
    result = Ladder(_data(plain_b, y_b, s_b), min_effect=0.9).climb()
    assert result.chosen_rung == "bandpower" and "minimum effect" in result.rungs[4].reason
    assert ladder.min_effect == 0.5


def test_repeated_grouped_folds_and_blocked_folds_for_one_subject() -> None:
    subjects = np.repeat(["a", "b", "c", "d", "e", "f", "g"], 10)
    folds = inner_folds(subjects, subjects, seed=0)
    assert folds.kind == "subjects" and folds.per_draw == 5 and len(folds.draws) == 3
    for draw in folds.draws:  # no subject split over fit and test
        for fit, test in draw:
            assert not set(subjects[fit]) & set(subjects[test])
    one = inner_folds(np.array(["s"] * 40), np.array(["n1"] * 20 + ["n2"] * 20), seed=0)
    assert one.kind == "blocks" and one.per_draw == 5
    for fit, test in one.draws[0]:  # each test fold is a contiguous block of each night
        assert len(test) == 8 and np.all(np.diff(test[:4]) == 1)


def test_fold_score_is_nan_where_auroc_cannot_be_scored() -> None:
    assert np.isnan(fold_score(np.zeros(4, int), np.full((4, 2), 0.5), "auroc"))
    assert fold_score(np.array([0, 1, 2]), np.eye(3), "kappa") == pytest.approx(1.0)


def _sleep_like(seed: int = 0, n_nights: int = 4, n: int = 80, stager_first: bool = True) -> LadderData:
    """Nights of 5 stages in runs; band power weakly informative, a 'prior' strongly informative."""
    rng = np.random.default_rng(seed)
    y, recs = stage_runs(rng, n_nights, n)
    onehot = np.eye(5)[y]
    spectral = onehot[:, :3] * 0.3 + rng.normal(size=(len(y), 3))
    prior = np.log(np.clip(0.7 * onehot + 0.3 * rng.dirichlet(np.ones(5), len(y)), 1e-4, None))
    prior -= np.log(np.exp(prior).sum(axis=1, keepdims=True))
    backbone = rng.normal(size=(len(y), 4))
    return LadderData(plain={"mean": np.concatenate([backbone, spectral], 1)}, y=y, groups=recs,
                      recordings=recs, classes=["W", "N1", "N2", "N3", "REM"], d_model=4,
                      sleep=True, contexts=(0, 2), poolings=("mean",), prior=prior, prior_stages=[0, 1, 2, 3, 4],
                      stager_choice={"name": "test", "eeg": "C3", "eog": None, "emg": None}, stager_first=stager_first)


def test_sleep_rungs_the_prior_is_taken_when_it_knows_the_stages_and_every_rung_is_recorded() -> None:
    """The textbook-first order (the ablation of issue 43's stager-first order) as issue 33 built it."""
    result = Ladder(_sleep_like(stager_first=False)).climb()
    names = [r.name for r in result.rungs]
    assert names == ["bandpower", "context", "prior", "zero-shot", "backbone", "lpft", "smoothing"]
    prior = result.rungs[2]
    assert prior.tried and prior.taken and prior.setting["prior_weight"] > 0
    assert result.rungs[3].tried  # zero-shot scored on the same folds
    assert result.expected >= result.bandpower.mean
    cal = result.calibration
    assert 0.05 <= cal["temperature"] <= 20 and 0 <= cal["ece_after"] <= 1
    # applied only where a temperature fitted on other folds lowered the held-out folds' calibration error
    assert cal["calibrated"] == (cal["ece_after"] < cal["ece_before"])
    assert result.temperature == pytest.approx(cal["temperature"] if cal["calibrated"] else 1.0, abs=1e-4)


def test_zero_shot_head_is_an_identity_on_the_prior_block() -> None:
    from passport_kit.model.heads import ProbeHead

    prior = np.log(np.random.default_rng(0).dirichlet(np.ones(5), 6))
    head = ProbeHead(4, 3, 1, bands=((0.5, 4.0),))
    set_zero_shot(head, [0, 2, 4], {"name": "yasa", "eeg": "C3"}, 5)
    z = torch.cat([torch.zeros(6, head.linear.in_features - 5), torch.from_numpy(prior).float()], dim=1)
    proba = torch.softmax(head.read_out(z), -1).detach().numpy()
    assert np.allclose(proba, zero_shot_proba(prior, [0, 2, 4]), atol=1e-5)


def test_adapt_prints_one_expected_score_for_the_model_it_ships_and_says_when_folds_are_few() -> None:
    """Issue 34 item 2: one number per model (the shipped one), the ladder's others under --verbose."""
    from passport_kit.cli.onboard import ladder_lines

    def selection(folds: int, kind: str = "subjects") -> dict:
        rungs = [{"rung": "bandpower", "tried": True, "taken": True, "score": 0.7, "gain": None,
                  "standard_error": None, "reason": "the textbook"},
                 {"rung": "backbone", "tried": True, "taken": True, "score": 0.8, "gain": 0.1,
                  "standard_error": 0.02, "reason": "gains"},
                 {"rung": "lpft", "tried": True, "taken": False, "score": 0.9, "gain": 0.004,
                  "standard_error": 0.01, "reason": "not above"}]
        return {"metric": "auroc", "ladder": rungs, "method": f"{folds}-fold cross-validation; a rung ...",
                "chosen": "backbone", "bandpower_score": 0.7,
                "expected": {"score": 0.8, "folds": folds, "kind": kind}, "calibration": {}}

    lines = ladder_lines(selection(5))
    expected = [line for line in lines if line.startswith("expected on new subjects")]
    assert expected == ["expected on new subjects: auroc 0.800 (cross-validated, 5 folds; the model shipped: "
                        "backbone)"]
    assert "+ LP-FT +0.004 not taken" in lines[0]  # LP-FT's own-fold gain, not a score beside the read-outs'
    assert not any("gains" in line for line in lines)  # the reasons are --verbose's
    assert any("gains" in line for line in ladder_lines(selection(5), verbose=True))
    assert "rough guide" in ladder_lines(selection(2))[1]
    assert "blocked folds within the training night" in ladder_lines(selection(5, "blocks"))[1]


def test_c_by_log_loss_picks_the_grids_smallest_inner_log_loss() -> None:
    plain, y, subjects = _blocks("spectral", seed=2)
    ladder = Ladder(_data(plain, y, subjects), c_by="log_loss")
    scored = ladder.score("bandpower", ReadOutChoice(1.0))
    losses = {g["C"]: g["log_loss"] for g in scored.grid}
    assert losses[scored.choice.c] == min(losses.values())


def test_the_expected_score_says_how_sure_it_is_and_how_many_candidates_it_beat() -> None:
    """Issue 55 item 3: the shipped model's inner score comes with its interval over the folds and the number of
    candidates it was chosen from (adapt prints both)."""
    from passport_kit.onboard.ladder import C_GRID, expected_interval
    from passport_kit.onboard.recipes import ProbeRecipe
    from passport_kit.checkpoint.adapter_metrics import ExpectedScore, LadderSelection

    plain, y, subjects = _blocks("backbone")
    ladder = Ladder(_data(plain, y, subjects), seed=0)
    res = ladder.climb()
    low, high = expected_interval(res)
    assert low < res.expected < high and high - low > 0
    scores = res.chosen.scores
    assert high == pytest.approx(min(1.0, res.expected + 2.776 * scores.std(ddof=1) / np.sqrt(5)), abs=2e-4)  # t(.975, 4)
    assert high <= 1.0  # a score's own range
    assert res.candidates >= 2 * len(C_GRID)  # band power and the backbone rung's read-outs, each at every C
    record = LadderSelection(recipe="probe", metric="auroc", score=0.9, chosen="backbone", ladder=[],
                             expected=ExpectedScore(metric="auroc", score=0.9, folds=5, draws=3, kind="subjects",
                                                    interval=[0.8, 0.95], candidates=40))
    lines = ProbeRecipe().ladder_lines(record)
    assert any("0.800 to 0.950" in line and "best of 40 candidates" in line for line in lines)
