"""LP-FT and the ``auto`` recipe (issue 26): adapter training from the probe's read-out, kept only where it helps."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from passport_kit.errors import ConfigError
from passport_kit.model import ChannelMeta, build_backbone, model_config
from passport_kit.onboard.finetune import _sequence_chunks, fit
from passport_kit.onboard.fitting import FitData
from passport_kit.onboard.lpft import MAX_STEPS, MIN_STEPS, decide, lpft_settings, step_budget
from passport_kit.onboard.recipe import RecipeOptions
from passport_kit.onboard.probe import ReadOutChoice, fit_head
from tests.onboard.ladder_helpers import fit_read_out_ladder


def _meta(n: int) -> ChannelMeta:
    positions = torch.tensor([[0.07 * np.cos(k), 0.07 * np.sin(k), 0.05] for k in range(n)], dtype=torch.float32)
    return ChannelMeta.create([f"C{k}" for k in range(n)], positions, torch.full((n, 3), float("nan")))


def _windows(n_per_class: int, n_subjects: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(N, 2, 2, 200)`` windows: class 1 carries a 10 Hz rhythm, class 0 noise; subjects in turn."""
    rng = np.random.default_rng(seed)
    t = np.arange(400) / 200.0
    x, y = [], []
    for label in (0, 1):
        for _ in range(n_per_class):
            w = rng.normal(0, 0.3, (2, 400)) + (0.3 * np.sin(2 * np.pi * 10 * t + rng.uniform(0, 6)) if label else 0)
            x.append(w.reshape(2, 2, 200))
            y.append(label)
    subjects = np.array([f"s{k % n_subjects}" for k in range(len(y))])
    return np.asarray(x, dtype=np.float32), np.asarray(y), subjects


def _model(seed: int = 0):
    from passport_kit.onboard.run import build_classifier

    torch.manual_seed(seed)
    return build_classifier(build_backbone(model_config("cbramod-tiny", "mlp-experts")), 2, "adapter",
                            recipe="auto", n_channels=2)


def _probed() -> tuple:
    """Return windows, labels, subjects, metadata, a model whose read-out is fitted on every row, the ladder's fit
    and a read-out that reads the backbone (LP-FT's start)."""
    x, y, subjects = _windows(12, 4)
    meta, model = _meta(2), _model()
    fitted = fit_read_out_ladder(model, x, y, meta, ["rest", "task"], np.arange(len(y)), subjects)
    return x, y, subjects, meta, model, fitted, ReadOutChoice(0.3, 0.3)


def test_step_budget_grows_with_the_data_within_bounds() -> None:
    assert step_budget(10, 64) == MIN_STEPS
    assert step_budget(64 * 30, 64) == 120
    assert step_budget(10**6, 64) == MAX_STEPS


def test_sequence_batches_are_runs_of_one_recording_in_time_order() -> None:
    recordings = np.array(["a"] * 5 + ["b"] * 3)
    chunks = _sequence_chunks(np.array([7, 0, 1, 2, 3, 4, 5, 6]), recordings, 2)
    assert [c.tolist() for c in chunks] == [[0, 1], [2, 3], [4], [5, 6], [7]]
    assert all(len(set(recordings[c])) == 1 for c in chunks)


def test_l2sp_keeps_trained_tensors_nearer_their_start() -> None:
    x, y, subjects = _windows(12, 4)
    meta = _meta(2)
    moved = {}
    for l2sp in (0.0, 100.0):
        model = _model()
        start = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
        settings = lpft_settings(steps=15, batch_size=8, lr=1e-2).model_copy(update={"l2sp": l2sp})
        fit(model, FitData(x, y, meta, ["rest", "task"]), settings)
        moved[l2sp] = sum(float((p.detach() - start[n]).pow(2).sum())
                          for n, p in model.named_parameters() if n in start and not n.startswith("head."))
    assert moved[0.0] > 0
    assert moved[100.0] < moved[0.0]


def test_lpft_starts_from_the_probe_read_out_and_trains_the_adapter() -> None:
    x, y, subjects, meta, model, probe, start = _probed()
    fit_head(model.head, probe.features, y, start, 2, recordings=None, seed=0)
    head0 = model.head.linear.weight.detach().clone()
    adapter0 = {n: p.detach().clone() for n, p in model.named_parameters()
                if p.requires_grad and not n.startswith("head.")}
    assert adapter0, "the adapter policy trains adapter tensors"
    fit(model, FitData(x, y, meta, ["rest", "task"]), lpft_settings(steps=5, batch_size=8))
    assert not torch.equal(model.head.linear.weight, head0)
    assert any(not torch.equal(p, adapter0[n]) for n, p in model.named_parameters() if n in adapter0)


def test_decide_scores_lpft_against_the_probe_on_paired_folds_and_leaves_the_model() -> None:
    x, y, subjects, meta, model, probe, start = _probed()
    rows = np.arange(len(y))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    three = np.array([f"s{k % 3}" for k in range(len(y))])  # three subjects: three folds
    decision = decide(model, FitData(x, y, meta, ["rest", "task"]), rows, three, chosen=start,
                      start=start, plain=probe.features, settings=lpft_settings(steps=8, batch_size=8))
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())
    assert decision.folds == 3 and decision.budget == 8
    assert [c["steps"] for c in decision.curve] == [2, 4, 8]
    assert decision.gain == pytest.approx(decision.lpft_score - decision.probe_score, abs=1e-9)
    # The rule: trained only when the best gain beats twice its standard error and the minimum effect (0.01 AUROC).
    assert decision.trained == (decision.gain > 2 * decision.standard_error and decision.gain >= 0.01)
    assert decision.steps == (decision.steps if decision.trained else 0)
    block = decision.as_dict()
    assert set(block) >= {"trained", "reason", "probe_score", "lpft_score", "gain", "standard_error", "curve"}


def test_recipe_auto_is_the_default_and_takes_only_the_options_its_adapter_training_uses() -> None:
    assert RecipeOptions().recipe == "auto"
    assert RecipeOptions(lr=1e-3).recipe == "finetune"  # a gradient option alone still means the paper's recipe
    assert RecipeOptions(recipe="auto", lr=1e-3, max_steps=50).lr == 1e-3
    with pytest.raises(ValueError, match="recipe 'auto' ignores epochs"):
        RecipeOptions(recipe="auto", epochs=3)


def test_adapt_auto_records_the_decision_and_both_scores(montage_yaml: Path, tmp_path: Path) -> None:
    from tests.onboard.conftest import make_dataset  # noqa: PLC0415 - the shared writer of tiny data sets

    from passport_kit.onboard.adapt import adapt

    data = make_dataset(tmp_path / "data", n_subjects=4, n_epochs=12)
    result = adapt(montage=str(montage_yaml), data=data, out=tmp_path / "a", checkpoint="tiny-mlp", batch_size=8,
                   recipe="auto", max_steps=8)
    selection = json.loads((tmp_path / "a" / "adapter.json").read_text())["metrics"]["selection"]
    assert selection["recipe"] == "auto"
    block = selection["adapter_training"]
    assert isinstance(block["trained"], bool) and block["reason"]
    if block["probe_score"] is not None:
        assert block["budget"] == 8
    assert result.metrics.selection.adapter_training.as_dict() == block


def test_probe_recipe_refuses_what_auto_would_take() -> None:
    with pytest.raises(ValueError, match="--recipe auto for lr"):
        RecipeOptions(recipe="probe", lr=1e-3)
    with pytest.raises(ConfigError):
        from passport_kit.onboard.recipe import parse_options

        parse_options(RecipeOptions, "adapt", None, {"recipe": "auto", "patience": 2})


def test_a_bundle_whose_adapter_lpft_trained_stores_and_reloads_the_trained_adapter(
        montage_yaml: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Forced decision (the rule is tested above): the bundle holds the trained adapter, and loading it gives
    the trained model's probabilities, not the base's."""
    from tests.onboard.conftest import make_dataset  # noqa: PLC0415

    import passport_kit.onboard.ladder_inputs as inputs_module
    import passport_kit.onboard.lpft as lpft_module
    from passport_kit.checkpoint import load_adapter_bundle, load_base_checkpoint
    from passport_kit.onboard.adapt import adapt
    from passport_kit.onboard.lpft import AdapterTraining

    import passport_kit.onboard.ladder as ladder_module

    # Every rung "pays" (so the backbone rung is taken and LP-FT is offered), and LP-FT's decision is forced.
    monkeypatch.setattr(ladder_module, "paired_gain", lambda a, b, n: (1.0, 0.0, len(a)))
    monkeypatch.setattr(lpft_module, "decide", lambda *a, **k: AdapterTraining(
        trained=True, reason="forced by the test", steps=6, budget=6, folds=2, probe_score=0.5, lpft_score=0.6,
        gain=0.1, standard_error=0.01))
    data = make_dataset(tmp_path / "data", n_subjects=4, n_epochs=12)
    out = tmp_path / "a"
    monkeypatch.setattr(inputs_module, "labels_vary_within_recordings", lambda *a: False)  # no per-night scaling
    result = adapt(montage=str(montage_yaml), data=data, out=out, checkpoint="tiny-mlp", batch_size=8, recipe="auto",
                   lr=1e-2, prior="none", context=0)
    block = result.metrics.selection.adapter_training
    assert block.trained and block.steps == 6 and result.metrics.steps == 6
    assert "fitted: the read-out" not in result.summary  # the adapter was trained, not only the read-out
    model, _ = load_adapter_bundle(out)
    base, _ = load_base_checkpoint("tiny-mlp")
    trained = {n: p for n, p in model.backbone.named_parameters() if ".mixture." in n}
    base_params = dict(base.named_parameters())
    assert trained and set(trained) <= set(base_params)
    assert any(not torch.equal(p, base_params[n]) for n, p in trained.items() if n in base_params), \
        "the bundle's adapter tensors equal the base's: LP-FT's training was not stored"
