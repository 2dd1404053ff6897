"""Adapter bundles: the tensors adaptation trained, bound to their base checkpoint by SHA-256.

A bundle is a folder ``adapter.safetensors`` (only the tensors the freezing policy trained, and
a ``channel-id`` table) + ``adapter.json`` (:class:`~passport_kit.checkpoint.files.AdapterMeta`).
Loading rebuilds the classifier on its verified base, checks the montage copy and the tensors
strictly, and loads the rest from the base.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from safetensors.torch import save as save_safetensors_bytes
from torch import Tensor

from passport_kit.checkpoint.base import find_checkpoint, load_base_checkpoint
from passport_kit.checkpoint.files import HEAD_SETTINGS, AdapterMeta, AdapterVariant
from passport_kit.checkpoint.head_checks import check_amplitude_profile, check_guard_profile, check_head_numbers
from passport_kit.checkpoint.licences import bundle_licences
from passport_kit.checkpoint.folders import dump_json, now, read_document, validated, write_folder
from passport_kit.checkpoint.seal import check_seal, make_seal
from passport_kit.checkpoint.layout import (ADAPTER_CONFIG_FILE, ADAPTER_FORMAT, ADAPTER_FORMAT_VERSION,
                                            ADAPTER_WEIGHTS_FILE)
from passport_kit.checkpoint.tensors import check_finite, compare_tensors, parse_safetensors, state_for_saving
from passport_kit.errors import CheckpointError, ConfigError, warn
from passport_kit.model import Classifier, apply_policy, policy_of, policy_parameter_names
from passport_kit.model.channel_embedding import ChannelIdEmbedding
from passport_kit.model.quality_gate import gate_classifier

_FIX = "re-run `passport-kit adapt`"


def adapter_tensors(classifier: Classifier) -> dict[str, Tensor]:
    """Return the tensors an adapter bundle stores: those its policy trains, and a `channel-id` table whatever it is."""
    names = policy_parameter_names(classifier, policy_of(classifier)) | _drawn_tensor_names(classifier)
    state = classifier.state_dict()
    return {name: state[name] for name in sorted(names)}


def _drawn_tensor_names(classifier: Classifier) -> set[str]:
    """Return the names of the tensors that hold values drawn after the base was loaded: a `channel-id` table.

    ``adapt`` draws the table's rows for channels the base never saw (``Backbone.add_channels``);
    a policy that does not train them (``head``) would leave them out of the bundle, and each load
    would draw other rows (issue 17), so the bundle stores the table whatever the policy.
    """
    embedding = classifier.backbone.channel_embedding
    if not isinstance(embedding, ChannelIdEmbedding):
        return set()
    return {name for name, param in classifier.named_parameters() if param is embedding.table}


def save_adapter_bundle(
    classifier: Classifier, folder: str | Path, meta: AdapterMeta, *, overwrite: bool = False
) -> Path:
    """Return the folder after writing the classifier's tensors (:func:`adapter_tensors`) and ``meta``.

    The policy, model config and head settings are taken from ``classifier``.
    """
    tensors = state_for_saving(adapter_tensors(classifier), what=f"adapter bundle '{folder}' not written")
    data = save_safetensors_bytes(tensors, metadata={"format": ADAPTER_FORMAT})
    full = meta.model_copy(
        update={
            "policy": policy_of(classifier),
            "model": classifier.backbone.config,
            "head": HEAD_SETTINGS.validate_python(classifier.head_settings),
            "variant": AdapterVariant.of(classifier),
            "tensors": sorted(tensors),
            "licences": bundle_licences(meta.base_name, _base_licence(meta.base_name),
                                        getattr(classifier.head, "prior", None)
                                        if getattr(classifier.head, "n_prior", 0) else None),
            "created": meta.created or now(),
            "format": ADAPTER_FORMAT,
            "format_version": ADAPTER_FORMAT_VERSION,  # sealed (issue 57)
            "seal": None,
        }
    )
    # Sealed over what is written (issue 57): an edit after this is named on load (checkpoint/seal.py).
    full = full.model_copy(update={"seal": make_seal(json.loads(dump_json(full)), data)})

    def fill(tmp: Path) -> None:
        (tmp / ADAPTER_WEIGHTS_FILE).write_bytes(data)
        (tmp / ADAPTER_CONFIG_FILE).write_text(dump_json(full), encoding="utf-8")

    return write_folder(Path(folder), fill, overwrite=overwrite)


def _base_licence(name: str) -> str | None:
    """Return the licence the base checkpoint ``name`` states (None: it states none, or it is not found here)."""
    from passport_kit.errors import PassportError

    try:
        return find_checkpoint(name).licence
    except PassportError:
        return None


def read_adapter_meta(folder: str | Path) -> AdapterMeta:
    """Return the validated ``adapter.json`` of an adapter bundle folder."""
    return read_adapter_document(folder)[1]


def read_adapter_document(folder: str | Path) -> tuple[dict[str, Any], AdapterMeta]:
    """Return ``adapter.json`` of an adapter bundle folder as read (a JSON mapping) and validated."""
    path = Path(folder) / ADAPTER_CONFIG_FILE
    raw = read_document(path, fmt=ADAPTER_FORMAT, what="an adapter bundle", fix=_FIX, extra={})
    meta: AdapterMeta = validated(AdapterMeta, raw, path, _FIX)
    if meta.model is None or meta.policy is None:
        raise CheckpointError(f"'{path}' lacks the model config or policy; {_FIX}")
    return raw, meta


def load_adapter_bundle(
    folder: str | Path, *, base: str | Path | None = None
) -> tuple[Classifier, AdapterMeta]:
    """Return the classifier (eval mode) and its metadata, checked against its base.

    The base is found by the name recorded in ``adapter.json`` unless ``base`` (a name or
    folder) is given; its SHA-256 must equal the recorded one, and the montage copy must still
    hash to the recorded montage hash.
    """
    folder = Path(folder)
    document, meta = read_adapter_document(folder)
    weights = folder / ADAPTER_WEIGHTS_FILE
    try:
        data = weights.read_bytes()
    except OSError:
        raise CheckpointError(f"adapter '{folder}' has no readable {ADAPTER_WEIGHTS_FILE}; re-run adapt") from None
    check_seal(document, data, folder)  # first: an edit is named as one (issue 57), whatever else it broke
    _check_montage_copy(meta, folder)
    backbone, info = load_base_checkpoint(base if base is not None else _recorded_base(meta))
    if info.weights_sha256 != meta.base_sha256:
        raise CheckpointError(
            f"adapter '{folder}' was trained on base checkpoint '{meta.base_name}' with SHA-256"
            f" {meta.base_sha256[:12]}..., but '{info.path}' has {info.weights_sha256[:12]}... -"
            " use the base it was trained on, or re-run `passport-kit adapt` on this one"
        )
    assert meta.model is not None and meta.policy is not None  # read_adapter_meta checked
    n_classes = meta.head.get("n_classes")
    if n_classes is not None and n_classes != len(meta.classes):  # an edited adapter.json (issue 28)
        raise CheckpointError(
            f"adapter '{folder}' names {len(meta.classes)} classes ({', '.join(meta.classes[:6])}) for a head with "
            f"{n_classes} outputs - adapter.json was edited; restore it or re-run adapt"
        )
    # channel-id rows added during adaptation are appended in order before loading.
    extra = meta.model.channel_vocab[len(info.model.channel_vocab) :]
    if meta.model.channel_vocab[: len(info.model.channel_vocab)] != info.model.channel_vocab:
        raise CheckpointError(
            f"adapter '{folder}' has a channel-id vocabulary that does not extend its base's; re-run adapt"
        )
    backbone.add_channels(extra)
    if backbone.config.model_dump(exclude={"channel_vocab"}) != meta.model.model_dump(exclude={"channel_vocab"}):
        raise CheckpointError(
            f"adapter '{folder}' records a model config different from base '{info.name}'; re-run adapt"
        )
    try:  # the numbers first (issue 46): an edited head was staged as garbage with exit 0, or a traceback
        check_head_numbers(meta.head, len(meta.classes))
        check_guard_profile(meta.metrics.distribution, len(meta.montage.get("channels") or []),
                            len(meta.classes))
        check_amplitude_profile(meta.metrics.amplitude)
    except CheckpointError as exc:
        raise CheckpointError(f"adapter '{folder}' refused: {exc}; adapter.json was edited or damaged - restore it or "
                              "re-run adapt") from None
    try:
        classifier = Classifier(backbone, **meta.head)
    except (TypeError, ConfigError) as exc:
        raise CheckpointError(f"adapter '{folder}' has invalid head settings ({exc}); re-run adapt") from None
    apply_policy(classifier, meta.policy)
    tensors = parse_safetensors(data, weights)
    check_finite(tensors, what=f"adapter '{folder}' refused", fix="it was trained with a diverging learning rate or "
                 "damaged; re-run `passport-kit adapt` (with a lower --lr)")
    if _quality_gated(meta, tensors):  # a noise expert its base lacks
        gate_classifier(classifier, meta.policy)
    expected = adapter_tensors(classifier)
    unstored = _drawn_tensor_names(classifier) - set(tensors) - policy_parameter_names(classifier, meta.policy)
    if unstored:  # written before bundles stored the table whatever the policy: loaded as then
        expected = {name: t for name, t in expected.items() if name not in unstored}
        if extra:
            warn(
                f"adapter '{folder}' does not store its channel-id rows for {extra} (written before they were"
                " stored): they are drawn at random at each load, so its predictions differ from load to load;"
                " re-run `passport-kit adapt` to store them")
    report = compare_tensors(expected, tensors)
    if not report.ok:
        raise CheckpointError(
            f"adapter tensors in '{weights}' do not fit policy {meta.policy!r} of this model:"
            f" {report.summary()} - re-run `passport-kit adapt`"
        )
    classifier.load_state_dict(tensors, strict=False)  # the rest is the verified base
    classifier.eval()
    return classifier, meta


def _quality_gated(meta: AdapterMeta, tensors: Mapping[str, Tensor]) -> bool:
    """Return whether the bundle's adapter is quality-gated: as recorded, or for bundles older than ``variant``, as
    its tensors show (the noise expert is stored only by a gated adapter)."""
    if meta.variant is not None:
        return meta.variant.quality_gate
    return any(name.endswith(".noise_expert") for name in tensors)


def _recorded_base(meta: AdapterMeta) -> str | Path:
    """Return the base to load for a bundle: its name, or the folder ``adapt`` was given when no checkpoint has that name.

    A base given to ``adapt`` as a folder (not a shipped or user checkpoint) is found again
    through ``training.checkpoint``; its SHA-256 is checked like any other.
    """
    try:
        find_checkpoint(meta.base_name)
    except CheckpointError:
        recorded = meta.training.get("checkpoint")
        if isinstance(recorded, str) and Path(recorded).is_dir():
            return Path(recorded)
        raise
    return meta.base_name


def _check_montage_copy(meta: AdapterMeta, folder: Path) -> None:
    from passport_kit.errors import PassportError
    from passport_kit.montage import Montage

    try:
        montage_hash = Montage.from_dict(meta.montage).content_hash
    except PassportError as exc:
        raise CheckpointError(f"adapter '{folder}' holds an invalid montage copy ({exc}); re-run adapt") from None
    if montage_hash != meta.montage_hash:
        raise CheckpointError(
            f"adapter '{folder}': its montage copy hashes to {montage_hash[:12]}..., not the"
            f" recorded {meta.montage_hash[:12]}... - adapter.json was edited; re-run adapt"
        )
