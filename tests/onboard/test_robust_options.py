"""Robust adaptation options (issue 8, item 2): synthetic corruption and the quality-gated mixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.errors import ConfigError
from passport_kit.engine.forward import gate_meta
from passport_kit.model import ChannelMeta, Classifier, apply_policy, build_backbone, model_config
from passport_kit.model.quality_gate import enable_quality_gate, has_quality_gate
from passport_kit.engine.corruption import corrupt_windows, drop_channels

RUN = CliRunner()
POSITIONS = [[-0.08, -0.005, 0.01], [-0.078, 0.002, -0.003], [-0.075, 0.01, 0.0], [-0.082, -0.01, 0.005],
             [0.08, -0.005, 0.01], [0.078, 0.002, -0.003], [0.075, 0.01, 0.0], [0.082, -0.01, 0.005]]


def _windows(b: int = 6, c: int = 8, seed: int = 0) -> torch.Tensor:
    """Return correlated EEG-like windows ``(b, c, 2, 200)`` in 100 µV units."""
    g = torch.Generator().manual_seed(seed)
    common = 0.2 * torch.randn(b, 1, 2, 200, generator=g)
    return common + 0.05 * torch.randn(b, c, 2, 200, generator=g)


@pytest.mark.parametrize("prob", [0.0, 0.5, 1.0])
def test_corruption_hits_the_requested_share_and_never_all_channels(prob: float) -> None:
    x = _windows(b=400)
    before = x.clone()
    out, which = corrupt_windows(x, prob, torch.Generator().manual_seed(1))
    assert torch.equal(x, before)  # the input is not modified
    per_window = which.sum(1)
    assert ((per_window >= 1) & (per_window <= 2)).float().mean().item() == pytest.approx(prob, abs=0.07)
    changed = (out != x).flatten(2).any(-1)
    assert torch.equal(changed & ~which, torch.zeros_like(changed))  # only the reported channels change


def test_corruption_is_reproducible_per_seed() -> None:
    x = _windows()
    a, _ = corrupt_windows(x, 1.0, torch.Generator().manual_seed(3))
    b, _ = corrupt_windows(x, 1.0, torch.Generator().manual_seed(3))
    c, _ = corrupt_windows(x, 1.0, torch.Generator().manual_seed(4))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_corruption_amplitudes_are_relative_to_the_window() -> None:
    x = _windows(b=300)
    for scale in (1.0, 50.0):  # raw 100-µV units and an instance-normalised-like scale
        out, which = corrupt_windows(x * scale, 1.0, torch.Generator().manual_seed(5))
        rms = (out * 1.0).flatten(2).pow(2).mean(-1).sqrt()
        clean = (x * scale).flatten(2).pow(2).mean(-1).sqrt().median()
        bad = rms[which]
        assert (bad == 0).any()                                # flat faults
        assert bad.max() <= 10.5 * clean and bad[bad > 0].min() >= 0.9 * clean


def _classifier(kind: str = "mlp-experts") -> Classifier:
    torch.manual_seed(0)
    model = Classifier(build_backbone(model_config("cbramod-tiny", kind)), 3)
    apply_policy(model, "adapter")
    return model


def test_gate_adds_one_adapter_tensor_and_base_names_stay() -> None:
    model = _classifier()
    base_names = set(build_backbone(model_config("cbramod-tiny", "mlp-experts")).state_dict())
    assert not any("noise_expert" in n for n in base_names)
    assert enable_quality_gate(model.backbone) and not enable_quality_gate(model.backbone)
    apply_policy(model, "adapter")
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert "backbone.patch_embedding.positional_encoding.noise_expert" in trainable
    assert has_quality_gate(model.backbone)


@pytest.mark.parametrize("bad", [False, True])
def test_gate_changes_only_bad_channels(bad: bool) -> None:
    meta = ChannelMeta.create([f"E{i}" for i in range(8)], POSITIONS)
    x = _windows(b=2, seed=2)
    if bad:
        x[:, 3] = 5.0 * torch.randn(2, 2, 200)   # a loose contact: loud and uncorrelated
    plain = _classifier().eval()
    gated = _classifier().eval()
    enable_quality_gate(gated.backbone)
    scored = gate_meta(gated, x, meta)  # the scores travel with the batch, as adapt and predict pass them
    with torch.no_grad():
        gated.backbone.channel_embedding.noise_expert.fill_(3.0)
        same = torch.allclose(plain(x, meta), gated(x, scored), atol=1e-5)
    quality = scored.quality
    assert same is (not bad)
    assert (quality[:, 3] < 0.5).all().item() is bad and (quality[:, [0, 1, 2, 4]] == 1).all()


def test_a_gated_model_fed_without_scores_is_a_bug_not_a_silent_ungated_run() -> None:
    gated = _classifier().eval()
    enable_quality_gate(gated.backbone)
    with pytest.raises(RuntimeError, match="needs each window's channel quality"):
        gated(_windows(b=2), ChannelMeta.create([f"E{i}" for i in range(8)], POSITIONS))


def test_gate_refuses_non_expert_kinds() -> None:
    with pytest.raises(ConfigError, match="expert-kind checkpoint"):
        enable_quality_gate(_classifier("acpe").backbone)


def test_adapt_with_gate_and_corruption_writes_loadable_bundle(montage_yaml: Path, dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "gated"
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint", "tiny-mlp",
                              "--max-steps", "2", "--batch-size", "8", "--out", str(out), "--no-progress",
                              "--quality-gate", "--corrupt-prob", "0.5"])
    assert result.exit_code == 0, result.output
    assert "backbone.patch_embedding.positional_encoding.noise_expert" in load_file(out / "adapter.safetensors")
    training = json.loads((out / "adapter.json").read_text())["training"]
    assert training["quality_gate"] is True and training["corrupt_prob"] == 0.5
    pred = RUN.invoke(app, ["predict", "--adapter", str(out), str(dataset / "s01.edf"), "--out", str(tmp_path / "p")])
    assert pred.exit_code == 0, pred.output


@pytest.mark.parametrize(("args", "message"), [
    (["--corrupt-prob", "1.5"], "corrupt_prob"),
    (["--quality-gate", "--checkpoint", "tiny-acpe"], "expert-kind checkpoint"),
])
def test_robust_options_errors_are_one_line(montage_yaml: Path, dataset: Path, tmp_path: Path, args: list[str],
                                            message: str) -> None:
    base = ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--max-steps", "1", "--batch-size", "4",
            "--out", str(tmp_path / "o"), "--no-progress"]
    result = RUN.invoke(app, base + (args if "--checkpoint" in args else ["--checkpoint", "tiny-mlp", *args]))
    assert result.exit_code == 2 and message in result.output


@pytest.mark.parametrize("prob", [0.0, 0.5, 1.0])
def test_channel_dropout_share_and_never_the_last_present_channel(prob: float) -> None:
    present = torch.ones(600, 8, dtype=torch.bool)
    present[:200, 2:] = False           # windows with 2 channels left: at most 1 may go
    present[200:250, 1:] = False        # 1 channel left: never dropped
    drop = drop_channels(present, prob, torch.Generator().manual_seed(4))
    assert not (drop & ~present).any()                       # only present channels
    assert ((present & ~drop).sum(1) >= 1).all()             # a channel always stays
    assert not drop[200:250].any()
    hit = drop[250:].any(1).float().mean().item()
    assert hit == pytest.approx(prob, abs=0.07)
    assert drop[250:].sum(1).max().item() <= 2               # at most a quarter of 8


def _summary(folder: Path) -> dict:
    return json.loads(next(folder.rglob("*_summary.json")).read_text())


def test_masked_training_threshold_travels_with_the_bundle(montage_yaml: Path, dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "masked"
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint", "tiny-mlp",
                              "--max-steps", "2", "--batch-size", "8", "--out", str(out), "--no-progress",
                              "--mask-bad-channels", "0.5", "--channel-dropout", "0.5"])
    assert result.exit_code == 0, result.output
    training = json.loads((out / "adapter.json").read_text())["training"]
    assert training["mask_bad_channels"] == 0.5 and training["channel_dropout"] == 0.5
    recording = str(dataset / "s01.edf")
    assert RUN.invoke(app, ["predict", "--adapter", str(out), recording, "--out", str(tmp_path / "p1")]).exit_code == 0
    assert _summary(tmp_path / "p1")["channel_quality"]["masking"]["threshold"] == 0.5   # the bundle's
    never = RUN.invoke(app, ["predict", "--adapter", str(out), recording, "--out", str(tmp_path / "p2"),
                             "--mask-bad-channels", "none", "--mask-uncorrelated-channels", "none"])
    assert never.exit_code == 0 and _summary(tmp_path / "p2")["channel_quality"]["masking"] is None


def test_a_bundle_with_a_bad_mask_threshold_is_refused(montage_yaml: Path, dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "b"
    assert RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint", "tiny-mlp",
                            "--max-steps", "1", "--batch-size", "4", "--out", str(out), "--no-progress"]).exit_code == 0
    meta = json.loads((out / "adapter.json").read_text())
    meta["training"]["mask_bad_channels"] = "everything"
    (out / "adapter.json").write_text(json.dumps(meta))
    result = RUN.invoke(app, ["predict", "--adapter", str(out), str(dataset / "s01.edf"), "--out", str(tmp_path / "p")])
    assert result.exit_code == 2 and "mask_bad_channels" in result.output


@pytest.mark.parametrize(("key", "args", "stored"), [
    ("distrust_bad_channels", [], 0.5), ("distrust_bad_channels", ["--distrust-bad-channels", "none"], None),
    ("mask_uncorrelated_channels", [], 0.2),
    ("mask_uncorrelated_channels", ["--mask-uncorrelated-channels", "none"], None),
])
def test_robust_defaults_are_on_and_can_be_turned_off(montage_yaml: Path, dataset: Path, tmp_path: Path, key: str,
                                                      args: list[str], stored: float | None) -> None:
    out = tmp_path / "d"
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint", "tiny-mlp",
                              "--max-steps", "1", "--batch-size", "4", "--out", str(out), "--no-progress", *args])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "adapter.json").read_text())["training"][key] == stored


@pytest.mark.parametrize("command", ["adapt", "evaluate"])
def test_cli_defaults_are_the_recipe_defaults(command: str) -> None:
    import typer

    from passport_kit.cli import onboard
    from passport_kit.onboard.adapt import DEFAULT_UNCORRELATED, RecipeOptions

    params = {p.name: p for p in typer.main.get_command(app).commands[command].params}  # type: ignore[attr-defined]
    generated = [key for key in onboard._RECIPE_PANELS if key in params]
    assert len(generated) >= 20
    for key in generated:
        default = params[key].default
        if key in onboard._TAKES_NONE:
            default = onboard._TAKES_NONE[key](default)
        assert default == (None if key == "recipe" else RecipeOptions.model_fields[key].default), key
        assert params[key].help.startswith(onboard._option_help(key)) or key == "recipe"
    assert onboard._TAKES_NONE["mask_uncorrelated_channels"](params["mask_uncorrelated_channels"].default) \
        == DEFAULT_UNCORRELATED


def test_distrust_threshold_travels_with_the_bundle(montage_yaml: Path, dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "distrust"
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint", "tiny-mlp",
                              "--max-steps", "2", "--batch-size", "8", "--out", str(out), "--no-progress",
                              "--distrust-bad-channels", "0.5"])
    assert result.exit_code == 0, result.output
    training = json.loads((out / "adapter.json").read_text())["training"]
    assert training["distrust_bad_channels"] == 0.5 and training["mask_bad_channels"] is None
    recording = str(dataset / "s01.edf")
    assert RUN.invoke(app, ["predict", "--adapter", str(out), recording, "--out", str(tmp_path / "p1")]).exit_code == 0
    block = _summary(tmp_path / "p1")["channel_quality"]
    assert block["distrust"]["threshold"] == 0.5 and block["masking"]["threshold"] is None
    never = RUN.invoke(app, ["predict", "--adapter", str(out), recording, "--out", str(tmp_path / "p2"),
                             "--distrust-bad-channels", "none"])
    assert never.exit_code == 0 and _summary(tmp_path / "p2")["channel_quality"]["distrust"] is None


def test_predict_reports_no_distrust_for_position_kinds(montage_yaml: Path, dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "acpe"
    assert RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint", "tiny-acpe",
                            "--max-steps", "1", "--batch-size", "4", "--out", str(out), "--no-progress"]).exit_code == 0
    assert json.loads((out / "adapter.json").read_text())["training"]["distrust_bad_channels"] == 0.5
    result = RUN.invoke(app, ["predict", "--adapter", str(out), str(dataset / "s01.edf"), "--out", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    assert _summary(tmp_path / "p")["channel_quality"]["distrust"] is None   # ACPE has no activity summary


@pytest.mark.parametrize("key", ["distrust_bad_channels", "mask_uncorrelated_channels"])
@pytest.mark.parametrize(("stored", "value"), [("often", None), (True, None), (None, "2")])
def test_bad_robust_thresholds_are_refused(montage_yaml: Path, dataset: Path, tmp_path: Path, stored: object,
                                           value: str | None, key: str) -> None:
    out = tmp_path / "b"
    assert RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint", "tiny-mlp",
                            "--max-steps", "1", "--batch-size", "4", "--out", str(out), "--no-progress"]).exit_code == 0
    if stored is not None:
        meta = json.loads((out / "adapter.json").read_text())
        meta["training"][key] = stored
        (out / "adapter.json").write_text(json.dumps(meta))
    option = "--" + key.replace("_", "-")
    extra = [] if value is None else [option, value]
    result = RUN.invoke(app, ["predict", "--adapter", str(out), str(dataset / "s01.edf"), "--out", str(tmp_path / "p"),
                              *extra])
    assert result.exit_code == 2
    assert (key if value is None else option) in result.output



def test_a_module_without_a_channel_embedding_has_no_gate() -> None:
    """gate_meta asks this of whatever model it scores (benchmarks pass read-out stand-ins without a backbone)."""
    from torch import nn

    assert has_quality_gate(nn.Linear(2, 2)) is False
