"""The ``probe`` recipe (issue 18): probe head, cross-validated logistic regression, recipe choice, reporting."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.errors import ConfigError
from passport_kit.model import ChannelMeta, build_backbone, model_config
from passport_kit.model.heads import Classifier, log_band_power
from passport_kit.model.spectral import STANDARD_BANDS
from passport_kit.onboard.adapt import make_config
from passport_kit.engine.forward import read_out_features
from passport_kit.onboard.fitting import MAX_CLASS_WEIGHT, class_weights
from tests.onboard.ladder_helpers import fit_read_out_ladder

RUN = CliRunner()


def _meta(n: int) -> ChannelMeta:
    positions = torch.tensor([[0.07 * np.cos(k), 0.07 * np.sin(k), 0.05] for k in range(n)], dtype=torch.float32)
    return ChannelMeta.create([f"C{k}" for k in range(n)], positions, torch.full((n, 3), float("nan")))


def _windows(n_per_class: int, n_subjects: int, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(N, 2, 4, 200)`` windows: class 1 carries a 10 Hz rhythm, class 0 only noise; subjects in turn."""
    rng = np.random.default_rng(seed)
    t = np.arange(800) / 200.0
    x, y = [], []
    for label in (0, 1):
        for _ in range(n_per_class):
            w = rng.normal(0, 0.3, (2, 800))
            if label:
                w += 0.4 * np.sin(2 * np.pi * 10 * t + rng.uniform(0, 6))
            x.append(w.reshape(2, 4, 200))
            y.append(label)
    subjects = np.array([f"s{k % n_subjects}" for k in range(len(y))])
    return np.asarray(x, dtype=np.float32), np.asarray(y), subjects


def _probe_model(seed: int = 0) -> Classifier:
    from passport_kit.onboard.run import build_classifier

    torch.manual_seed(seed)
    return build_classifier(build_backbone(model_config("cbramod-tiny", "mlp-experts")), 2, "adapter",
                            recipe="probe", n_channels=2)


def test_capped_class_weights_never_exceed_the_cap() -> None:
    y = np.array([0] * 300 + [1] * 5 + [3] * 60)
    w = class_weights(y, 5)
    assert w[1] == MAX_CLASS_WEIGHT and w[2] == 0 and w[4] == 0
    assert 0 < w[0] < 1 < w[3] < MAX_CLASS_WEIGHT


def test_log_band_power_finds_a_rhythm_in_its_band() -> None:
    t = torch.arange(800) / 200.0
    x = (torch.sin(2 * torch.pi * 10 * t)).reshape(1, 1, 4, 200)
    bands = log_band_power(x)[0, 0]
    assert int(bands.argmax()) == 3  # 8-12 Hz
    assert bands[3] - bands.max() == 0 and (bands[3] - bands[[0, 1, 5]]).min() > 2


def test_log_band_power_is_welchs_estimate_up_to_a_constant() -> None:
    from scipy.signal import welch

    from passport_kit.model.heads import SPECTRAL_BANDS

    x = np.random.default_rng(0).normal(size=(3, 2, 10, 200)).astype(np.float32)
    freqs, psd = welch(x.reshape(3, 2, -1).astype(np.float64), fs=200, nperseg=400, axis=-1)
    ref = np.log10(np.stack([psd[..., (freqs >= lo) & (freqs < hi)].mean(-1) for lo, hi in SPECTRAL_BANDS], -1))
    diff = log_band_power(torch.from_numpy(x)).numpy() - ref
    assert np.abs(diff - diff.mean()).max() < 1e-5


def test_probe_separates_a_rhythm_and_folds_the_regression_into_the_head() -> None:
    x, y, subjects = _windows(24, 4)
    model = _probe_model()
    rows = np.arange(len(y))
    fitted = fit_read_out_ladder(model, x, y, _meta(2), ["rest", "alpha"], rows, subjects)
    result = fitted.result
    assert result.metric == "auroc" and result.folds.per_draw == 4
    assert result.expected is not None and result.expected > 0.9 and fitted.warnings == []
    assert [r.name for r in result.rungs] == ["bandpower", "context", "prior", "zero-shot", "backbone", "lpft",
                                              "smoothing"]
    assert [r.name for r in result.rungs if r.tried] == ["bandpower", "backbone"]  # no context outside sleep
    # The head's linear layer now computes what the regression computes on standardised features.
    with torch.no_grad():
        logits = model(torch.from_numpy(x), _meta(2))
    assert (logits.argmax(1).numpy() == y).mean() > 0.9
    z = read_out_features(model, x, _meta(2), rows)
    assert z.shape == (len(y), model.head.n_backbone_features + 2 * 2 * 6)  # absolute + relative, 6 bands
    assert model.head.n_backbone_features == (400 if model.head.pooling == "meanstd" else 200)


def test_probe_layer_reads_the_backbone_at_that_depth() -> None:
    """Layer 0 is the patch and channel embedding's output; the last layer is the backbone's output."""
    torch.manual_seed(0)
    backbone = build_backbone(model_config("cbramod-tiny", "mlp-experts")).eval()
    x = torch.from_numpy(_windows(2, 1)[0])
    meta = _meta(2)
    with torch.no_grad():
        embedded = backbone.patch_embedding(x, meta)
        after_one = backbone.encoder.layers[0](embedded)
        assert torch.equal(backbone(x, meta, depth=0), embedded)
        assert torch.allclose(backbone(x, meta, depth=1), after_one, atol=1e-5)
        assert torch.allclose(backbone(x, meta, depth=2), backbone(x, meta), atol=1e-6)
        for layer, expected in ((0, embedded), (None, backbone(x, meta))):
            clf = Classifier(backbone, 2, kind="probe", n_channels=2, layer=layer, pooling_probe="meanstd").eval()
            z = clf.read_out_features(x, meta)
            assert torch.allclose(z[:, :200], expected.mean(dim=(1, 2)), atol=1e-5)
            assert torch.allclose(z[:, 200:400], expected.std(dim=2, correction=0).mean(dim=1), atol=1e-5)
    with pytest.raises(ConfigError, match="outside 0..2"):
        backbone(x, meta, depth=3)


def test_probe_head_settings_keep_layer_and_pooling_and_old_bundles_read_every_layer() -> None:
    from passport_kit.onboard.adapt import build_classifier

    torch.manual_seed(0)
    backbone = build_backbone(model_config("cbramod-tiny", "mlp-experts"))
    new = build_classifier(backbone, 2, "adapter", recipe="probe", n_channels=2)
    new.head.set_read_out(2, "meanstd")
    settings = new.head_settings
    assert settings["layer"] == 0 and settings["pooling_probe"] == "meanstd" and settings["context"] == 2
    rebuilt = Classifier(backbone, **settings)
    assert rebuilt.head.linear.in_features == new.head.linear.in_features == 2 * (400 + 24)
    assert settings["bands"] == [list(b) for b in STANDARD_BANDS] and rebuilt.head.bands == STANDARD_BANDS
    # A bundle written before issue 24 stores no "bands": its head keeps the old spectral block (6 per channel).
    legacy = Classifier(backbone, 2, kind="probe", n_channels=2, context=2, layer=0, pooling_probe="meanstd")
    assert legacy.head.bands is None and legacy.head_settings["bands"] is None  # written without (checkpoint tests)
    assert legacy.head.linear.in_features == 2 * (400 + 12)
    # A bundle written before the read-out layer existed stores no "layer": its head reads the output.
    old = Classifier(backbone, 2, kind="probe", n_channels=2, context=0)
    assert old.head.layer is None and old.head_settings["layer"] is None
    with pytest.raises(ConfigError, match="beyond this backbone's 2 layers"):
        build_classifier(backbone, 2, "adapter", recipe="probe", n_channels=2, probe_layer=3)


def test_probe_with_one_subject_decides_on_blocked_folds_within_its_recordings_and_says_so() -> None:
    x, y, _ = _windows(10, 1)
    model = _probe_model()
    fitted = fit_read_out_ladder(model, x, y, _meta(2), ["rest", "alpha"], np.arange(len(y)),
                                 np.array(["s0"] * len(y)), recordings=np.array(["rest"] * 10 + ["alpha"] * 10))
    assert fitted.result.folds.kind == "blocks" and "blocked folds within the night" in fitted.result.folds.describe()


def test_probe_warns_about_rare_and_absent_classes() -> None:
    x, y, subjects = _windows(30, 3)
    y = y.copy()
    y[:5] = 2  # a rare third class
    model = Classifier(build_backbone(model_config("cbramod-tiny", "mlp-experts")), 4, kind="probe", n_channels=2)
    result = fit_read_out_ladder(model, x, y, _meta(2), ["a", "b", "c", "d"], np.arange(len(y)), subjects)
    text = " ".join(result.warnings)
    assert "c (5)" in text and "never be predicted: d" in text
    # The absent class gets a bias that keeps it from being predicted.
    assert float(model.head.linear.bias[3].detach()) < -10


@pytest.mark.parametrize(("options", "recipe"), [
    ({}, "auto"),
    ({"recipe": "probe"}, "probe"),
    ({"max_steps": 5}, "finetune"),
    ({"quality_gate": True}, "finetune"),
    ({"recipe": "finetune"}, "finetune"),
])
def test_recipe_follows_the_options_given(options: dict, recipe: str) -> None:
    assert make_config(montage="m", data="d", **options).recipe == recipe


def test_explicit_probe_with_gradient_options_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="only apply to gradient training"):
        make_config(montage="m", data="d", recipe="probe", max_steps=5)


def test_default_adapt_prints_its_selection_and_predicts(tmp_path: Path, montage_yaml: Path, dataset: Path,
                                                         checkpoint: str) -> None:
    out = tmp_path / "adapter"
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                              checkpoint, "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "expected on new subjects: kappa" in result.output and "cross-validation over training subjects" in result.output
    meta = json.loads((out / "adapter.json").read_text())
    assert meta["head"]["kind"] == "probe" and meta["training"]["recipe"] == "auto"
    assert "adapter_training" in meta["metrics"]["selection"]  # the auto recipe's decision (issue 26)
    assert meta["metrics"]["selection"]["metric"] == "kappa" and "warnings" in meta["metrics"]
    assert meta["metrics"]["validation_subjects"] == []  # every subject trains; selection is cross-validated
    # The band-power reference (issue 24): its cross-validated score, the increment, printed and stored.
    sel = meta["metrics"]["selection"]
    assert sel["bandpower_score"] is not None and "band power" in result.output
    assert sel["increment_over_bandpower"] == pytest.approx(sel["score"] - sel["bandpower_score"], abs=2e-4)
    assert sel["scaling"] in ("none", "recording") and [r["rung"] for r in sel["ladder"]][0] == "stager"  # issue 43
    assert meta["head"]["bands"][0] == [0.5, 4.0]
    pred = RUN.invoke(app, ["predict", "--adapter", str(out), str(dataset / "s01.edf"), "--out", str(tmp_path / "p")])
    assert pred.exit_code == 0, pred.output
    assert (tmp_path / "p" / "s01" / "s01_predictions.csv").is_file()


def test_sequence_features_average_within_each_recording_only() -> None:
    from passport_kit.model.heads import sequence_features

    z = torch.arange(6, dtype=torch.float32)[:, None]
    out = sequence_features(z, 1, ["a", "a", "a", "b", "b", "b"])
    assert out.shape == (6, 2) and torch.equal(out[:, 0], z[:, 0])
    assert out[:, 1].tolist() == [0.5, 1.0, 1.5, 3.5, 4.0, 4.5]
    assert torch.equal(sequence_features(z, 0), z)


def test_probe_with_context_predicts_a_recording_as_a_sequence(tmp_path: Path, montage_yaml: Path, dataset: Path,
                                                               checkpoint: str) -> None:
    out = tmp_path / "ctx"
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                              checkpoint, "--out", str(out), "--context", "2", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "+ context" in result.output
    meta = json.loads((out / "adapter.json").read_text())
    assert meta["head"]["context"] == 2 and meta["training"]["context"] == 2
    from passport_kit.checkpoint import load_adapter_bundle

    model, _ = load_adapter_bundle(out)
    assert model.head.context == 2 and model.head.linear.in_features == 2 * (200 + 3 * 2 * 6)  # abs + rel, 6 bands
    pred = RUN.invoke(app, ["predict", "--adapter", str(out), str(dataset / "s01.edf"), "--out", str(tmp_path / "p")])
    assert pred.exit_code == 0, pred.output


def test_context_with_the_finetune_recipe_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="context applies to recipe 'probe'"):
        make_config(montage="m", data="d", recipe="finetune", context=2)
    with pytest.raises(ConfigError, match="probe_layer applies to recipe 'probe'"):
        make_config(montage="m", data="d", recipe="finetune", probe_layer=2)
    with pytest.raises(ConfigError, match="probe_pooling applies to recipe 'probe'"):
        make_config(montage="m", data="d", recipe="finetune", probe_pooling="mean")


def test_an_inner_fold_with_one_class_does_not_stop_the_fit() -> None:
    x, y, subjects = _windows(12, 4)
    y = np.zeros_like(y)
    y[subjects == "s0"] = 1  # only subject s0 holds class 1: the fold that tests on s0 trains on one class
    model = _probe_model()
    result = fit_read_out_ladder(model, x, y, _meta(2), ["a", "b"], np.arange(len(y)), subjects).result
    assert result.folds.per_draw == 4 and result.expected is not None


def test_a_bundle_from_a_base_folder_predicts_without_naming_the_base(tmp_path: Path, montage_yaml: Path,
                                                                      dataset: Path) -> None:
    from passport_kit.checkpoint import save_base_checkpoint

    torch.manual_seed(3)
    base = save_base_checkpoint(build_backbone(model_config("cbramod-tiny", "mlp-experts")), tmp_path / "my-base",
                                name="not-registered")
    out = tmp_path / "adapter"
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                              str(base), "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    pred = RUN.invoke(app, ["predict", "--adapter", str(out), str(dataset / "s01.edf"), "--out", str(tmp_path / "p")])
    assert pred.exit_code == 0, pred.output


def test_the_torch_free_recipe_options_name_what_the_trainer_takes() -> None:
    # onboard.recipe (read by the CLI at startup) imports no torch, so it spells these itself.
    from typing import get_args

    from passport_kit.model.heads import PROBE_LAYER
    from passport_kit.onboard import fitting, recipe

    assert recipe.PROBE_LAYER == PROBE_LAYER == recipe.RecipeOptions().probe_layer
    assert get_args(recipe.TrainPolicy) == get_args(fitting.TrainPolicy)
    assert get_args(recipe.Balance) == get_args(fitting.Balance)


def test_recording_scaling_is_per_recording_and_the_head_applies_it_as_fitted() -> None:
    from passport_kit.model.heads import read_out_inputs, recording_scaled

    z = torch.tensor([[1.0], [2.0], [3.0], [10.0], [30.0], [50.0]])
    out = recording_scaled(z, ["a"] * 3 + ["b"] * 3)
    assert out[:, 0].tolist() == pytest.approx([-1.0, 0.0, 1.0, -1.0, 0.0, 1.0])
    assert torch.equal(read_out_inputs(z, 0, "none"), z)
    # A head with scaling reads a batch as one recording: scoring two recordings apart = scoring them with groups.
    from passport_kit.onboard.run import build_classifier

    torch.manual_seed(0)
    model = build_classifier(build_backbone(model_config("cbramod-tiny", "mlp-experts")), 2, "adapter",
                             recipe="probe", n_channels=2)
    model.head.set_read_out(1, "mean", "recording")
    torch.nn.init.normal_(model.head.linear.weight)
    x, _, _ = _windows(6, 1)
    from passport_kit.engine.forward import predict_proba

    together = predict_proba(model, x, _meta(2), groups=["r1"] * 6 + ["r2"] * 6)
    apart = np.concatenate([predict_proba(model, x, _meta(2), index=np.arange(6)),
                            predict_proba(model, x, _meta(2), index=np.arange(6, 12))])
    assert np.allclose(together, apart, atol=1e-5)
    rebuilt = Classifier(model.backbone, **model.head_settings)
    assert rebuilt.head.scaling == "recording" and rebuilt.head.context == 1


def test_per_recording_scaling_is_offered_only_where_labels_vary_within_a_recording() -> None:
    from types import SimpleNamespace

    from passport_kit.onboard.ladder_inputs import labels_vary_within_recordings

    eegmat_like = SimpleNamespace(y=np.array([0, 0, 1, 1]), recording=np.array(["r", "r", "a", "a"]))
    night = SimpleNamespace(y=np.array([0, 1, 2, 1]), recording=np.array(["n", "n", "n", "n"]))
    assert not labels_vary_within_recordings(eegmat_like, np.arange(4))
    assert labels_vary_within_recordings(night, np.arange(4))


def test_a_new_read_out_layer_is_made_where_the_head_lives() -> None:
    # A head on a GPU kept its read-out on the CPU after set_read_out, and evaluate --device cuda failed in its first
    # scoring; the "meta" device stands in for the GPU here (no data, the same placement rule).
    from passport_kit.model.heads import ProbeHead

    head = ProbeHead(4, 3, 1, bands=((0.5, 4.0),)).to("meta")
    head.set_read_out(1, "mean")
    assert head.linear.weight.device.type == "meta" and head.linear.bias.device.type == "meta"
    cpu = ProbeHead(4, 3, 1, bands=((0.5, 4.0),))
    cpu.set_read_out(1, "mean")
    assert cpu.linear.weight.device.type == "cpu" and not cpu.linear.weight.any()
