"""Base checkpoints and adapter bundles: symmetric save/load, strictness, hashes, atomic writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from typer.testing import CliRunner

from passport_kit.checkpoint import (
    ADAPTER_CONFIG_FILE,
    ADAPTER_WEIGHTS_FILE,
    CONFIG_FILE,
    WEIGHTS_FILE,
    AdapterMeta,
    list_checkpoints,
    load_adapter_bundle,
    load_base_checkpoint,
    save_adapter_bundle,
    save_base_checkpoint,
    sha256_bytes,
    user_checkpoint_dir,
)
from passport_kit.checkpoint.seal import reseal_bundle
from passport_kit.cli.app import app
from passport_kit.errors import CheckpointError, ConfigError, PassportWarning
from passport_kit.model import EMBEDDING_KINDS, ChannelMeta, Classifier, apply_policy, build_backbone, model_config
from passport_kit.montage import get_montage

runner = CliRunner()
MONTAGE = "tuh-standard"
CHANNEL_TABLE = "backbone.patch_embedding.positional_encoding.table"


def _backbone(kind: str):
    vocab = ["F3", "F4"] if kind == "channel-id" else []
    return build_backbone(model_config("cbramod-tiny", kind, channel_vocab=vocab))


def _save(kind: str, folder: Path, name: str = "tiny"):
    backbone = _backbone(kind)
    path = save_base_checkpoint(backbone, folder, name=name, training_info={"epochs": 1})
    return backbone, path


@pytest.mark.parametrize("kind", EMBEDDING_KINDS)
def test_base_checkpoint_round_trips_exactly(tmp_path: Path, kind: str) -> None:
    backbone, path = _save(kind, tmp_path / "base")
    loaded, info = load_base_checkpoint(path)
    assert info.model == backbone.config and info.training == {"epochs": 1}
    original, restored = backbone.state_dict(), loaded.state_dict()
    assert original.keys() == restored.keys()
    for name in original:
        assert torch.equal(original[name], restored[name]), name
    assert sorted(p.name for p in path.iterdir()) == ["MODEL_CARD.md", CONFIG_FILE, WEIGHTS_FILE]


def test_config_records_the_sha256_of_the_weights_file(tmp_path: Path) -> None:
    _, path = _save("acpe", tmp_path / "base")
    config = json.loads((path / CONFIG_FILE).read_text())
    assert config["weights_sha256"] == sha256_bytes((path / WEIGHTS_FILE).read_bytes())
    assert (config["format"], config["format_version"]) == ("passport-kit/base-checkpoint", 1)


def test_changed_weights_fail_the_hash_check(tmp_path: Path) -> None:
    _, path = _save("acpe", tmp_path / "base")
    tensors = load_file(path / WEIGHTS_FILE)
    tensors["proj_out.0.bias"] += 1.0
    save_file(tensors, path / WEIGHTS_FILE)
    with pytest.raises(CheckpointError, match="do not match the SHA-256"):
        load_base_checkpoint(path)


def test_missing_tensor_is_reported_not_initialised(tmp_path: Path) -> None:
    _, path = _save("mlp-experts", tmp_path / "base")
    tensors = load_file(path / WEIGHTS_FILE)
    del tensors["patch_embedding.positional_encoding.experts"]
    save_file(tensors, path / WEIGHTS_FILE)
    config = json.loads((path / CONFIG_FILE).read_text())
    config["weights_sha256"] = sha256_bytes((path / WEIGHTS_FILE).read_bytes())  # a consistent lie
    (path / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"1 missing \['patch_embedding.positional_encoding.experts'\]"):
        load_base_checkpoint(path)


def test_named_checkpoints_are_listed_and_loaded_by_name(tmp_path: Path) -> None:
    _save("xyz", user_checkpoint_dir() / "my-base", name="my-base")
    assert "my-base" in [i.name for i in list_checkpoints()]
    _, info = load_base_checkpoint("my-base")
    assert info.source == "user"
    result = runner.invoke(app, ["checkpoints", "show", "my-base", "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["model"]["embedding"] == "xyz"
    listed = runner.invoke(app, ["checkpoints", "list", "--json"])
    assert listed.exit_code == 0 and "my-base" in [c["name"] for c in json.loads(listed.output)]


def test_unknown_checkpoint_name_exits_2_with_the_known_names(tmp_path: Path) -> None:
    _save("xyz", user_checkpoint_dir() / "my-base", name="my-base")
    result = runner.invoke(app, ["checkpoints", "show", "nope"])
    assert result.exit_code == 2
    assert "no checkpoint named 'nope'" in result.output and "my-base" in result.output


def test_existing_folder_is_not_overwritten_silently(tmp_path: Path) -> None:
    _save("ape", tmp_path / "base")
    with pytest.raises(CheckpointError, match="already exists"):
        _save("ape", tmp_path / "base")


def test_invalid_name_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="lowercase"):
        save_base_checkpoint(_backbone("ape"), tmp_path / "x", name="My Base")


def test_crash_during_write_leaves_nothing_that_reads_as_valid(tmp_path: Path, monkeypatch) -> None:
    import passport_kit.checkpoint.base as base

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(base, "_model_card", crash)
    with pytest.raises(OSError, match="disk full"):
        _save("ape", tmp_path / "base")
    assert list(tmp_path.iterdir()) == []  # no folder, no temp leftovers


# ------------------------------------------------------------------------------ adapters
def _adapter(tmp_path: Path, kind: str = "mlp-experts", policy: str = "adapter", gate: bool = False):
    backbone, base_path = _save(kind, tmp_path / "base")
    _, info = load_base_checkpoint(base_path)
    montage = get_montage(MONTAGE)
    clf = Classifier(backbone, 5, pooling="patches", n_patches=3)
    if kind == "channel-id":
        backbone.add_channels(montage.ch_names)
    apply_policy(clf, policy)
    if gate:
        from passport_kit.model.quality_gate import gate_classifier

        gate_classifier(clf, policy)
    with torch.no_grad():  # make the trained tensors differ from the base's
        for p in clf.parameters():
            if p.requires_grad:
                p.add_(0.01 * torch.randn_like(p))
    meta = AdapterMeta(
        base_name=info.name,
        base_sha256=info.weights_sha256,
        montage=montage,
        montage_hash=montage.content_hash,
        classes=["W", "N1", "N2", "N3", "REM"],
        preprocessing={"sfreq": 200.0, "instance_norm": True},
        window={"window_seconds": 3},
        metrics={"kappa": 0.5},
    )
    folder = save_adapter_bundle(clf, tmp_path / "adapter", meta)
    return clf, folder, base_path, montage


@pytest.mark.parametrize(("kind", "policy"), [("mlp-experts", "adapter"), ("xattn-experts", "adapter"),
                                             ("channel-id", "adapter"), ("acpe", "adapter"),
                                             # the rows drawn for the montage's channels, stored untrained (issue 17)
                                             ("channel-id", "head")])
def test_adapter_bundle_round_trips_and_predicts_the_same(tmp_path: Path, kind: str, policy: str) -> None:
    clf, folder, base_path, montage = _adapter(tmp_path, kind, policy)
    loaded, meta = load_adapter_bundle(folder, base=base_path)
    assert meta.classes == ["W", "N1", "N2", "N3", "REM"] and meta.policy == policy
    x = torch.randn(2, montage.n_channels, 3, 200)
    cm = ChannelMeta.from_montage(montage)
    clf.eval()
    with torch.no_grad():
        torch.testing.assert_close(loaded(x, cm), clf(x, cm), rtol=0, atol=0)


@pytest.mark.parametrize("gate", [False, True])
def test_adapter_variant_is_recorded_and_read_back(tmp_path: Path, gate: bool) -> None:
    from passport_kit.checkpoint import AdapterVariant
    from passport_kit.model.quality_gate import has_quality_gate

    _, folder, base_path, _ = _adapter(tmp_path, "mlp-experts", gate=gate)
    loaded, meta = load_adapter_bundle(folder, base=base_path)
    assert meta.variant == AdapterVariant(embedding="mlp-experts", policy="adapter", head="mlp", quality_gate=gate)
    assert has_quality_gate(loaded.backbone) is gate


def test_adapter_gate_is_read_from_the_record_not_guessed(tmp_path: Path) -> None:
    _, folder, base_path, _ = _adapter(tmp_path, "mlp-experts", gate=True)
    path = folder / ADAPTER_CONFIG_FILE
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "variant": {**doc["variant"], "quality_gate": False}}))
    reseal_bundle(folder)  # an edit made on purpose (issue 57): the checks behind the seal still hold
    with pytest.raises(CheckpointError, match="unexpected"):  # the stored noise expert fits no ungated model
        load_adapter_bundle(folder, base=base_path)


def test_bundle_written_before_the_variant_record_still_loads_gated(tmp_path: Path) -> None:
    from passport_kit.model.quality_gate import has_quality_gate

    _, folder, base_path, _ = _adapter(tmp_path, "mlp-experts", gate=True)
    path = folder / ADAPTER_CONFIG_FILE
    doc = json.loads(path.read_text())
    del doc["variant"], doc["seal"]  # written before both
    doc["format_version"] = 1
    path.write_text(json.dumps(doc))
    loaded, meta = load_adapter_bundle(folder, base=base_path)
    assert meta.variant is None and has_quality_gate(loaded.backbone)


def test_adapter_file_holds_only_the_trainable_tensors(tmp_path: Path) -> None:
    clf, folder, _, _ = _adapter(tmp_path, "mlp-experts")
    stored = set(load_file(folder / ADAPTER_WEIGHTS_FILE))
    assert stored == {n for n, p in clf.named_parameters() if p.requires_grad}
    assert not any("experts" in n.split(".")[-1] or "encoder" in n for n in stored)
    meta = json.loads((folder / ADAPTER_CONFIG_FILE).read_text())
    assert meta["tensors"] == sorted(stored) and meta["montage"]["name"] == MONTAGE


@pytest.mark.parametrize("policy", ["head", "adapter", "full"])
def test_channel_id_bundle_stores_its_table_whatever_the_policy(tmp_path: Path, policy: str) -> None:
    clf, folder, _, _ = _adapter(tmp_path, "channel-id", policy)
    stored = load_file(folder / ADAPTER_WEIGHTS_FILE)
    assert torch.equal(stored[CHANNEL_TABLE], clf.state_dict()[CHANNEL_TABLE])
    assert stored[CHANNEL_TABLE].shape[0] == len(clf.backbone.config.channel_vocab)


def test_channel_id_bundle_written_before_the_stored_rows_still_loads(tmp_path: Path) -> None:
    _, folder, base_path, montage = _adapter(tmp_path, "channel-id", "head")
    tensors = load_file(folder / ADAPTER_WEIGHTS_FILE)
    del tensors[CHANNEL_TABLE]  # as a head-policy bundle held only head.* before issue 17
    save_file(tensors, folder / ADAPTER_WEIGHTS_FILE)
    _unsealed(folder)  # such a bundle predates the seal (issue 57)
    with pytest.warns(PassportWarning, match="drawn at random at each load"):
        loaded, meta = load_adapter_bundle(folder, base=base_path)
    vocab = loaded.backbone.config.channel_vocab
    assert vocab == meta.model.channel_vocab and vocab[:2] == ["F3", "F4"] and len(vocab) == montage.n_channels


def test_adapter_on_a_different_base_is_refused(tmp_path: Path) -> None:
    _, folder, _, _ = _adapter(tmp_path)
    _save("mlp-experts", tmp_path / "other")  # same architecture, other weights
    with pytest.raises(CheckpointError, match="was trained on base checkpoint 'tiny' with SHA-256"):
        load_adapter_bundle(folder, base=tmp_path / "other")


def test_adapter_with_an_edited_montage_is_refused(tmp_path: Path) -> None:
    _, folder, base_path, _ = _adapter(tmp_path)
    meta = json.loads((folder / ADAPTER_CONFIG_FILE).read_text())
    meta["montage"]["channels"][0]["position"][0] += 0.01
    (folder / ADAPTER_CONFIG_FILE).write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=r"changed after adapt wrote it \(montage.channels\)"):
        load_adapter_bundle(folder, base=base_path)
    reseal_bundle(folder)  # re-sealed, the montage copy still does not hash to the recorded montage
    with pytest.raises(CheckpointError, match="montage copy hashes to"):
        load_adapter_bundle(folder, base=base_path)


def test_adapter_missing_a_tensor_is_refused(tmp_path: Path) -> None:
    _, folder, base_path, _ = _adapter(tmp_path)
    tensors = load_file(folder / ADAPTER_WEIGHTS_FILE)
    tensors.pop("head.norm.weight")
    save_file(tensors, folder / ADAPTER_WEIGHTS_FILE)
    reseal_bundle(folder)  # on purpose: the strict tensor check still refuses it
    with pytest.raises(CheckpointError, match=r"1 missing \['head.norm.weight'\]"):
        load_adapter_bundle(folder, base=base_path)


def test_folder_without_adapter_json_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="not an adapter bundle"):
        load_adapter_bundle(tmp_path)


def test_list_without_checkpoints_says_how_to_make_one(monkeypatch, tmp_path: Path) -> None:
    import passport_kit.checkpoint.base as base

    monkeypatch.setattr(base, "checkpoint_roots", lambda: [("user", tmp_path / "none")])  # where list_checkpoints looks
    result = runner.invoke(app, ["checkpoints", "list"])
    assert result.exit_code == 0
    assert "no checkpoints yet" in result.output and "import-cbramod" in result.output


def test_show_prints_architecture_embedding_and_hash(tmp_path: Path) -> None:
    _, path = _save("mlp-experts", user_checkpoint_dir() / "my-base", name="my-base")
    result = runner.invoke(app, ["checkpoints", "show", "my-base"])
    assert result.exit_code == 0
    sha = json.loads((path / CONFIG_FILE).read_text())["weights_sha256"]
    assert "cbramod-tiny: 2 layers" in result.output
    assert "mlp-experts (10 experts)" in result.output and sha in result.output
    listed = runner.invoke(app, ["checkpoints", "list"])
    assert listed.exit_code == 0 and "my-base" in listed.output and sha[:8] in listed.output


def test_adapter_folder_given_as_base_checkpoint_is_refused(tmp_path: Path) -> None:
    _, folder, _, _ = _adapter(tmp_path)
    (folder / CONFIG_FILE).write_text((folder / ADAPTER_CONFIG_FILE).read_text())
    with pytest.raises(CheckpointError, match="is not a base checkpoint of passport-kit .format .passport-kit/adapter-bundle"):
        load_base_checkpoint(folder)


@pytest.mark.parametrize(("stored", "notch_freq"), [
    ({"notch": "mains frequency of the recording site (60 Hz for TUH)"}, None),  # before issue 29: words
    ({"notch": 60}, 60.0),
    ({"notch_freq": 50.0}, 50.0),
    ({}, None),
])
def test_input_contract_reads_the_old_notch_key(stored: dict, notch_freq: float | None) -> None:
    from passport_kit.checkpoint import InputContract

    contract = InputContract.model_validate({"sfreq": 200.0, **stored})
    assert contract.notch_freq == notch_freq and "notch" not in contract.model_dump()


def test_a_checkpoints_notch_is_not_carried_into_new_data() -> None:
    from passport_kit.checkpoint import InputContract
    from passport_kit.signals.recording import fit_preprocessing

    config = fit_preprocessing(InputContract(notch_freq=60.0), rate=lambda: (200.0, "r.edf"))
    assert config.notch_freq == 50.0  # this site's default, not the pretraining site's


def test_adapter_json_reads_back_and_writes_the_same_bytes(tmp_path: Path) -> None:
    from passport_kit.checkpoint import read_adapter_meta
    from passport_kit.checkpoint.folders import dump_json

    _, folder, _, _ = _adapter(tmp_path, "mlp-experts")
    text = (folder / ADAPTER_CONFIG_FILE).read_text()
    meta = read_adapter_meta(folder)
    assert dump_json(meta) == text
    assert meta.window == {"window_seconds": 3} and meta.head["n_classes"] == 5  # a key it does not know stays


@pytest.mark.parametrize(("block", "value", "where"), [
    ("head", {"n_classes": 5, "hiden": 200}, "head.hiden"),     # Classifier takes no such keyword
    ("head", {"n_classes": "five"}, "head.n_classes"),
    ("window", {"seconds": "long", "task": "sleep-staging"}, "window.seconds"),
])
def test_a_mistyped_head_or_window_is_a_one_line_error(tmp_path: Path, block: str, value: dict, where: str) -> None:
    _, folder, base_path, _ = _adapter(tmp_path, "mlp-experts")
    path = folder / ADAPTER_CONFIG_FILE
    path.write_text(json.dumps({**json.loads(path.read_text()), block: value}))
    with pytest.raises(CheckpointError, match=f"invalid: {where}"):
        load_adapter_bundle(folder, base=base_path)


def test_a_head_written_with_fewer_keys_reads_back_with_only_its_migrations_filled_in(tmp_path: Path) -> None:
    # An MLP head is written without "kind" (bundles older than the probe head had none): read, it gains its kind
    # (checkpoint.files.MIGRATIONS); any other key absent stays absent, and Classifier rebuilds it with its default.
    _, folder, base_path, _ = _adapter(tmp_path, "mlp-experts")
    path = folder / ADAPTER_CONFIG_FILE
    doc = json.loads(path.read_text())
    assert "kind" not in doc["head"]
    doc["head"] = {k: v for k, v in doc["head"].items() if k != "dropout"}
    del doc["seal"]  # such a bundle predates the seal (issue 57), and says so by its format version
    doc["format_version"] = 1
    path.write_text(json.dumps(doc))
    loaded, meta = load_adapter_bundle(folder, base=base_path)
    assert meta.head == {"kind": "mlp", **doc["head"]} and loaded.head_settings["dropout"] == 0.1
    from passport_kit.checkpoint.folders import dump_json

    assert json.loads(dump_json(meta))["head"] == doc["head"]  # written back in the form it was read


def _edit_json(folder: Path, edit) -> dict:  # noqa: ANN001 - a function of the parsed adapter.json
    """Return bundle ``folder``'s adapter.json after ``edit`` changed it in place and it was written back."""
    doc = json.loads((folder / ADAPTER_CONFIG_FILE).read_text())
    edit(doc)
    (folder / ADAPTER_CONFIG_FILE).write_text(json.dumps(doc))
    return doc


def _unsealed(folder: Path) -> None:
    """Drop the seal of bundle ``folder``: as it was written before issue 57 (format version 1)."""
    _edit_json(folder, lambda d: (d.pop("seal"), d.__setitem__("format_version", 1)))


def test_a_sealed_bundle_without_its_seal_is_refused_not_read_as_an_old_one(tmp_path: Path) -> None:
    # Issue 57: deleting "seal" made a bundle read as one written before the seal, and it loaded with any other edit.
    _, folder, base_path, _ = _adapter(tmp_path)
    assert json.loads((folder / ADAPTER_CONFIG_FILE).read_text())["format_version"] == 2
    _edit_json(folder, lambda d: (d.pop("seal"), d.__setitem__("classes", d["classes"][::-1])))
    with pytest.raises(CheckpointError, match=r"changed after adapt wrote it \(seal \(deleted\)\).*checkpoints reseal"):
        load_adapter_bundle(folder, base=base_path)
    assert reseal_bundle(folder) == ["seal (deleted)"]  # a deliberate edit, sealed again
    assert load_adapter_bundle(folder, base=base_path)[1].format_version == 2


def test_a_bundle_before_the_seal_is_sealed_as_a_current_one(tmp_path: Path) -> None:
    _, folder, base_path, _ = _adapter(tmp_path)
    _unsealed(folder)
    assert reseal_bundle(folder) == ["(no seal before)"]
    assert json.loads((folder / ADAPTER_CONFIG_FILE).read_text())["format_version"] == 2
    load_adapter_bundle(folder, base=base_path)
    _edit_json(folder, lambda d: d.pop("seal"))  # now its seal cannot go unnoticed
    with pytest.raises(CheckpointError, match=r"seal \(deleted\)"):
        load_adapter_bundle(folder, base=base_path)


# Issue 57, item 2: a bundle is sealed when written; an edit after that is refused, naming what changed.
@pytest.mark.parametrize(("edit", "named"), [
    (lambda d: d.__setitem__("classes", ["N1", "W", "N2", "N3", "REM"]), "(classes)"),      # classes reordered
    (lambda d: d["head"].__setitem__("hidden", d["head"]["hidden"] + 1), "(head.hidden)"),
    (lambda d: d["metrics"].__setitem__("kappa", 0.9), "(metrics.kappa)"),                  # the record rewritten
    (lambda d: d["metrics"].pop("kappa"), "(metrics.kappa (deleted))"),
    (lambda d: d["metrics"].__setitem__("distribution", None), "(metrics.distribution (added))"),
])
def test_an_edited_adapter_json_is_refused_naming_what_changed(tmp_path: Path, edit, named: str) -> None:  # noqa: ANN001
    _, folder, base_path, _ = _adapter(tmp_path)
    _edit_json(folder, edit)
    with pytest.raises(CheckpointError, match="changed after adapt wrote it") as caught:
        load_adapter_bundle(folder, base=base_path)
    assert named in str(caught.value) and f"passport-kit checkpoints reseal {folder}" in str(caught.value)


def test_edited_tensors_are_refused(tmp_path: Path) -> None:
    _, folder, base_path, _ = _adapter(tmp_path)
    tensors = load_file(folder / ADAPTER_WEIGHTS_FILE)
    tensors["head.norm.weight"] = tensors["head.norm.weight"] * 1e6
    save_file(tensors, folder / ADAPTER_WEIGHTS_FILE)
    with pytest.raises(CheckpointError, match=r"changed after adapt wrote it \(adapter\.safetensors\)"):
        load_adapter_bundle(folder, base=base_path)


def test_a_resealed_edit_loads_and_a_bundle_before_the_seal_loads_as_before(tmp_path: Path) -> None:
    _, folder, base_path, _ = _adapter(tmp_path)
    _edit_json(folder, lambda d: d["metrics"].__setitem__("kappa", 0.9))
    assert reseal_bundle(folder) == ["metrics.kappa"]
    assert load_adapter_bundle(folder, base=base_path)[1].metrics.model_extra["kappa"] == 0.9  # a newer key kept
    _unsealed(folder)
    assert load_adapter_bundle(folder, base=base_path)[1].seal is None


@pytest.mark.parametrize(("key", "value"), [("hidden", True), ("hidden", "200"), ("dropout", False)])
def test_a_head_number_written_as_a_boolean_or_string_is_refused(tmp_path: Path, key: str, value: object) -> None:
    # Issue 57: `temperature: true` was read as 1 (pydantic's lax mode), even in a re-sealed bundle.
    _, folder, base_path, _ = _adapter(tmp_path)
    _edit_json(folder, lambda d: d["head"].__setitem__(key, value))
    with pytest.raises(CheckpointError, match=f"head.{key}: .*must be a number"):
        load_adapter_bundle(folder, base=base_path)
    with pytest.raises(CheckpointError, match=f"head.{key}: .*must be a number"):  # nor sealed as it is
        reseal_bundle(folder)


def test_checkpoints_reseal_names_what_it_sealed(tmp_path: Path) -> None:
    _, folder, base_path, _ = _adapter(tmp_path)
    _edit_json(folder, lambda d: d["metrics"].__setitem__("kappa", 0.9))
    result = CliRunner().invoke(app, ["checkpoints", "reseal", str(folder)])
    assert result.exit_code == 0, result.output
    assert "metrics.kappa" in result.output
    load_adapter_bundle(folder, base=base_path)
    again = CliRunner().invoke(app, ["checkpoints", "reseal", str(tmp_path / "nothing")])
    assert again.exit_code == 2 and "not an adapter bundle" in again.output
