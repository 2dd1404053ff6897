"""Upcycling (`pretrain --init-from`): an expert bank grown on an imported CBraMod backbone."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
import torch
from pretrain_helpers import imported_cbramod, tiny_config, two_montage_data
from safetensors.torch import load_file
from typer.testing import CliRunner

from passport_kit.checkpoint import find_checkpoint, load_base_checkpoint
from passport_kit.cli.app import app
from passport_kit.model import ChannelMeta
from passport_kit.montage import get_montage
from passport_kit.pretrain import upcycle
from passport_kit.pretrain.run import StepEvent, TrainingInterrupted, pretrain

runner = CliRunner()
PE = upcycle.EMBEDDING_PREFIX


@pytest.fixture(scope="module")
def cbramod(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The official 211-tensor layout (12 layers), imported as an `acpe` base checkpoint."""
    return imported_cbramod(tmp_path_factory.mktemp("release"), 12)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return a simulated labeled dataset: 2 subjects x 3 min on tuh-standard."""
    from passport_kit.signals.simulator.simulate import simulate_dataset

    return simulate_dataset("tuh-standard", tmp_path_factory.mktemp("sim") / "sim", n_subjects=2, hours=0.05, seed=0)


def _pretrain_args(simulated: Path, out: Path, *extra: str) -> list[str]:
    return ["pretrain", "--data", f"{simulated}:tuh-standard", "--steps", "3", "--batch-size", "2",
            "--amplitude-limit-uv", "none", "--val-fraction", "0", "--device", "cpu", "--threads", "1",
            "--no-progress", "--out", str(out), *extra]


@pytest.fixture(scope="module")
def upcycled(cbramod: Path, simulated: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pretrain --init-from` the imported CBraMod with `--train experts`, 3 steps."""
    out = tmp_path_factory.mktemp("upcycled") / "passport-cbramod"
    result = runner.invoke(app, _pretrain_args(simulated, out, "--init-from", str(cbramod),
                                               "--embedding", "mlp-experts", "--train", "experts"))
    assert result.exit_code == 0, result.output
    return out


def test_train_experts_keeps_every_backbone_tensor_bit_identical(cbramod: Path, upcycled: Path) -> None:
    source = load_file(str(cbramod / "model.safetensors"))
    new = load_file(str(upcycled / "model.safetensors"))
    assert len(source) == 211
    for name, tensor in source.items():  # the acpe convolution included: it is kept for time
        assert torch.equal(new[name], tensor), name
    assert sorted(set(new) - set(source)) == sorted(
        PE + n for n in ("experts", "mixture.0.weight", "mixture.0.bias", "mixture.2.weight", "mixture.2.bias"))


def test_train_experts_trains_the_expert_bank_and_mixture(cbramod: Path, upcycled: Path) -> None:
    info, tensors = upcycle.read_source(str(cbramod))
    config = upcycle.upcycled_config(info.model, "mlp-experts")
    torch.manual_seed(42)  # the run's seed: its starting bank
    start = upcycle.build_upcycled(info, tensors, config).state_dict()
    new = load_file(str(upcycled / "model.safetensors"))
    bank = [n for n in new if n not in tensors]
    assert len(bank) == 5
    for name in bank:
        assert not torch.equal(new[name], start[name]), f"{name} did not train"


def test_config_records_the_source_and_what_was_trained(cbramod: Path, upcycled: Path) -> None:
    config = json.loads((upcycled / "config.json").read_text())
    source = json.loads((cbramod / "config.json").read_text())
    record = config["init_from"]
    assert (record["name"], record["sha256"], record["embedding"]) == ("cbramod-12", source["weights_sha256"], "acpe")
    assert record["trained"] == "experts" and record["temporal_position"] == "acpe-conv"
    assert record["frozen_tensors"] == sorted(load_file(str(cbramod / "model.safetensors")))
    assert config["model"]["embedding"] == "mlp-experts" and config["model"]["arch"] == "cbramod-base"
    card = (upcycled / "MODEL_CARD.md").read_text()
    assert "Upcycled" in card and source["weights_sha256"] in card
    assert "--init-from" in config["training"]["command"]
    shown = runner.invoke(app, ["checkpoints", "show", str(upcycled)])
    assert shown.exit_code == 0 and "upcycled from: cbramod-12 (acpe" in shown.output


def test_upcycled_checkpoint_adapts_and_predicts(upcycled: Path, simulated: Path, tmp_path: Path) -> None:
    import passport_kit as pk

    backbone, info = load_base_checkpoint(upcycled)
    assert info.init_from is not None and info.init_from.trained == "experts"
    result = pk.adapt(montage="tuh-standard", data=simulated, checkpoint=str(upcycled), max_steps=2, batch_size=4,
                      out=tmp_path / "adapter", threads=1)
    adapter = load_file(str(tmp_path / "adapter" / "adapter.safetensors"))
    assert any("mixture" in n for n in adapter) and not any(n.endswith(".experts") for n in adapter)
    recording = sorted(simulated.glob("*.edf"))[0]
    pk.predict(tmp_path / "adapter", recording, tmp_path / "pred", base=upcycled)
    assert any((tmp_path / "pred").rglob("*.tsv"))


@pytest.fixture(scope="module")
def tiny_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer CBraMod-shaped `acpe` base (random weights, trained-looking scale)."""
    return imported_cbramod(tmp_path_factory.mktemp("tiny-release"), 2)


def _tiny(out: Path, source: Path, **overrides: object):
    """Return a tiny upcycling config (2 layers, the in-memory data of the pretraining tests)."""
    options = {"init_from": str(source), "embedding": "xattn-experts", "steps": 4, "val_fraction": 0.0}
    return tiny_config(out, **(options | overrides))


def test_train_all_trains_the_backbone_too(tiny_source: Path, tmp_path: Path) -> None:
    folder = pretrain(_tiny(tmp_path / "all", tiny_source, train="all"), datasets=two_montage_data())
    source = load_file(str(tiny_source / "model.safetensors"))
    new = load_file(str(folder / "model.safetensors"))
    info = find_checkpoint(folder)
    # Only the fixed zero mask token (a buffer) is not trained.
    assert info.init_from.trained == "all" and info.init_from.frozen_tensors == ["patch_embedding.mask_encoding"]
    for name in ("encoder.layers.0.linear1.weight", "patch_embedding.spectral_proj.0.weight", PE + "0.weight"):
        assert not torch.equal(new[name], source[name]), name


def test_sinusoid_replaces_the_acpe_convolution(tiny_source: Path, tmp_path: Path) -> None:
    folder = pretrain(_tiny(tmp_path / "sin", tiny_source, temporal_position="sinusoid"), datasets=two_montage_data())
    backbone, info = load_base_checkpoint(folder)
    assert info.model.temporal_position == "sinusoid" and info.init_from.temporal_position == "sinusoid"
    assert PE + "0.weight" not in backbone.state_dict()
    source = load_file(str(tiny_source / "model.safetensors"))
    kept = [n for n in source if not n.startswith(PE)]
    assert info.init_from.frozen_tensors == sorted(kept)
    assert all(torch.equal(backbone.state_dict()[n], source[n]) for n in kept)


def test_frozen_backbone_runs_in_eval_mode(tiny_source: Path) -> None:
    info, tensors = upcycle.read_source(str(tiny_source))
    backbone = upcycle.build_upcycled(info, tensors, upcycle.upcycled_config(info.model, "mlp-experts"))
    frozen = upcycle.freeze_for(backbone, "experts")
    backbone.train()
    assert not backbone.encoder.training and backbone.channel_embedding.training
    trainable = {n for n, p in backbone.named_parameters() if p.requires_grad}
    assert trainable == {PE + n for n in backbone.channel_embedding.bank_parameter_names()}
    assert set(frozen) | trainable == set(backbone.state_dict())


def test_upcycled_run_resumes_exactly(tiny_source: Path, tmp_path: Path) -> None:
    reference: dict[str, torch.Tensor] = {}
    pretrain(_tiny(tmp_path / "ref", tiny_source), datasets=two_montage_data(),
             on_end=lambda model, rank: reference.update(model.state_dict()))

    def ctrl_c_at_step_2(event: StepEvent) -> None:
        if event.step == 2:
            signal.raise_signal(signal.SIGINT)

    cfg = _tiny(tmp_path / "run", tiny_source, checkpoint_every=100)
    with pytest.raises(TrainingInterrupted, match="step 2"):
        pretrain(cfg, datasets=two_montage_data(), on_step=ctrl_c_at_step_2)
    resumed: dict[str, torch.Tensor] = {}
    pretrain(cfg.model_copy(update={"resume": True}), datasets=two_montage_data(),
             on_end=lambda model, rank: resumed.update(model.state_dict()))
    for key, value in reference.items():
        assert torch.equal(value, resumed[key]), key


@pytest.mark.parametrize("kind", ["mlp-experts", "xattn-experts"])
def test_upcycled_model_starts_as_the_source_model(tiny_source: Path, kind: str) -> None:
    """The experts start at zero and the convolution is kept: the first forward is the source's."""
    source, info = load_base_checkpoint(tiny_source)
    _, tensors = upcycle.read_source(str(tiny_source))
    backbone = upcycle.build_upcycled(info, tensors, upcycle.upcycled_config(info.model, kind)).eval()
    meta = ChannelMeta.from_montage(get_montage("tuh-standard"))
    x = torch.randn(2, meta.n_channels, 3, 200)
    with torch.no_grad():
        torch.testing.assert_close(backbone.reconstruct(x, meta), source.reconstruct(x, meta), rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--init-from", "no-such-base", "--embedding", "mlp-experts"], "no checkpoint named 'no-such-base'"),
        (["--init-from", "{src}", "--embedding", "acpe"], "--embedding must be one of"),
        (["--init-from", "{src}", "--embedding", "mlp-experts", "--config", "cbramod-small"],
         "does not match the source checkpoint's architecture cbramod-tiny"),
        (["--embedding", "mlp-experts", "--train", "experts"], "--train applies to upcycling only"),
        (["--init-from", "{src}", "--embedding", "mlp-experts", "--train", "encoder"], "invalid pretraining option train"),
    ],
)
def test_upcycling_user_errors_exit_2_with_one_line(tiny_source: Path, simulated: Path, tmp_path: Path,
                                                    extra: list[str], message: str) -> None:
    args = [a.replace("{src}", str(tiny_source)) for a in extra]
    result = runner.invoke(app, _pretrain_args(simulated, tmp_path / "run", *args))
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_sinusoid_source_cannot_keep_an_acpe_convolution(tmp_path: Path) -> None:
    from passport_kit.errors import ConfigError
    from passport_kit.model import model_config

    with pytest.raises(ConfigError, match="use --temporal-position sinusoid"):
        upcycle.upcycled_config(model_config("cbramod-tiny", "xyz"), "mlp-experts", temporal_position="acpe-conv")
