"""Base checkpoints: a pretrained backbone as ``model.safetensors`` + ``config.json`` + ``MODEL_CARD.md``.

Saved atomically with the SHA-256 of its weights in ``config.json``; found by folder or by name
(shipped before the user's, :func:`~passport_kit.checkpoint.layout.checkpoint_roots`); loaded
hash-checked and strictly, in eval mode.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from safetensors.torch import save as save_safetensors_bytes

from passport_kit.checkpoint.files import (
    CBRAMOD_PREPROCESSING,
    BaseCheckpointConfig,
    BaseCheckpointInfo,
    InitSource,
    InputContract,
)
from passport_kit.checkpoint.folders import dump_json, now, read_document, validated, write_folder
from passport_kit.checkpoint.layout import (
    BASE_FORMAT,
    CARD_FILE,
    CONFIG_FILE,
    WEIGHTS_FILE,
    CheckpointSource,
    check_name,
    checkpoint_roots,
)
from passport_kit.checkpoint.tensors import (
    check_finite,
    load_strict,
    parse_safetensors,
    sha256_bytes,
    state_for_saving,
)
from passport_kit.errors import CheckpointError, warn
from passport_kit.model import Backbone, build_backbone

_FIX = "re-create the checkpoint"


def save_base_checkpoint(
    backbone: Backbone,
    folder: str | Path,
    *,
    name: str,
    card: str = "",
    training_info: Mapping[str, Any] | None = None,
    preprocessing: Mapping[str, Any] | None = None,
    init_from: InitSource | None = None,
    licence: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Return the folder after writing ``backbone`` as a base checkpoint (atomically).

    ``card`` is free Markdown prepended to the generated MODEL_CARD.md; ``training_info``
    (pretraining data, montages, epochs, ...) goes to ``config.json`` as given; ``init_from``
    records the checkpoint an upcycled backbone came from; ``licence`` the weights' licence (and
    of what they were trained on, where that adds terms), in config.json and the card.
    """
    check_name(name)
    state = state_for_saving(backbone.state_dict(), what=f"base checkpoint '{name}' not written")
    data = save_safetensors_bytes(state, metadata={"format": BASE_FORMAT})
    config = BaseCheckpointConfig(
        name=name,
        model=backbone.config,
        preprocessing=InputContract.model_validate(dict(preprocessing or CBRAMOD_PREPROCESSING)),
        training=dict(training_info or {}),
        init_from=init_from,
        licence=licence,
        weights_sha256=sha256_bytes(data),
        n_parameters=sum(p.numel() for p in backbone.parameters()),
        created=now(),
    )

    def fill(tmp: Path) -> None:
        (tmp / WEIGHTS_FILE).write_bytes(data)
        (tmp / CONFIG_FILE).write_text(dump_json(config), encoding="utf-8")
        (tmp / CARD_FILE).write_text(_model_card(config, card), encoding="utf-8")

    return write_folder(Path(folder), fill, overwrite=overwrite)


def _model_card(config: BaseCheckpointConfig, card: str) -> str:
    m = config.model
    lines = [f"# {config.name}", ""]
    if card.strip():
        lines += [card.strip(), ""]
    lines += [
        "## Facts (generated)",
        "",
        f"- architecture: {m.arch} ({m.n_layers} criss-cross layers, d={m.d_model},"
        f" {m.n_heads} heads, feed-forward {m.d_ff})",
        f"- channel embedding: {m.embedding}"
        + (" (time: the kept ACPE convolution)" if m.temporal_position == "acpe-conv" else ""),
        f"- parameters: {config.n_parameters:,}",
        f"- input: (batch, channels, patches, 200) at {config.preprocessing.sfreq} Hz"
        f" in units of {config.preprocessing.units}",
        f"- preprocessing contract: {json.dumps(config.preprocessing.model_dump(mode='json'), ensure_ascii=False)}",
        f"- training: {json.dumps(config.training, ensure_ascii=False, default=str)}",
        f"- weights SHA-256: {config.weights_sha256}",
        f"- licence: {config.licence or 'not stated'}",
    ]
    if config.init_from is not None:
        src = config.init_from
        lines.append(f"- upcycled from: {src.name} ({src.embedding}, SHA-256 {src.sha256}); trained: {src.trained}"
                     f" ({len(src.frozen_tensors)} tensors kept bit for bit)")
    lines += [
        f"- written by passport-kit {config.package_version} on {config.created}",
        "",
    ]
    return "\n".join(lines)


def _read_base_config(folder: Path, source: CheckpointSource) -> BaseCheckpointInfo:
    path = folder / CONFIG_FILE
    raw = read_document(
        path, fmt=BASE_FORMAT, what="a base checkpoint", fix=_FIX, extra={"path": folder, "source": source}
    )
    return validated(BaseCheckpointInfo, raw, path, _FIX)


def list_checkpoints() -> list[BaseCheckpointInfo]:
    """Return every named base checkpoint, shipped ones first, then the user's, by name.

    Folders that fail to parse are skipped with a warning (``show`` gives the error).
    """
    found: list[BaseCheckpointInfo] = []
    for source, root in checkpoint_roots():
        if not root.is_dir():
            continue
        for folder in sorted(root.iterdir()):
            if folder.name.startswith(".") or not (folder / CONFIG_FILE).is_file():
                continue
            try:
                found.append(_read_base_config(folder, source))
            except CheckpointError as exc:
                warn(str(exc), UserWarning)
    return found


def find_checkpoint(name_or_path: str | Path) -> BaseCheckpointInfo:
    """Return the info of a checkpoint given by folder path or by name (shipped before user)."""
    path = Path(name_or_path)
    if path.is_dir():
        return _read_base_config(path, "path")
    name = str(name_or_path)
    for source, root in checkpoint_roots():
        if (root / name / CONFIG_FILE).is_file():
            return _read_base_config(root / name, source)
    known = sorted({info.name for info in list_checkpoints()})
    raise CheckpointError(
        f"no checkpoint named {name!r} (known: {known or 'none'}); give a checkpoint folder,"
        " or create one with `passport-kit pretrain` or `passport-kit checkpoints import-cbramod`"
    )


def weights_status(info: BaseCheckpointInfo) -> str:
    """Return whether the checkpoint's weights file still has the SHA-256 its config.json records: 'matches', 'differs' or 'missing'."""
    try:
        data = (info.path / WEIGHTS_FILE).read_bytes()
    except OSError:
        return "missing"
    return "matches" if sha256_bytes(data) == info.weights_sha256 else "differs"


def load_base_checkpoint(name_or_path: str | Path) -> tuple[Backbone, BaseCheckpointInfo]:
    """Return the backbone (eval mode) and its info; weights hash-checked and loaded strictly."""
    info = find_checkpoint(name_or_path)
    weights = info.path / WEIGHTS_FILE
    try:
        data = weights.read_bytes()
    except OSError:
        raise CheckpointError(
            f"checkpoint '{info.name}' has no readable {WEIGHTS_FILE} in '{info.path}'; re-create it"
        ) from None
    digest = sha256_bytes(data)
    if digest != info.weights_sha256:
        raise CheckpointError(
            f"weights of checkpoint '{info.name}' do not match the SHA-256 in {CONFIG_FILE}"
            f" ({digest[:12]}... vs {info.weights_sha256[:12]}...): the file was changed or"
            " damaged - restore or re-create the checkpoint"
        )
    tensors = parse_safetensors(data, weights)
    check_finite(tensors, what=f"checkpoint '{info.name}' ({weights}) refused", fix="restore or re-create it")
    backbone = build_backbone(info.model)
    load_strict(backbone, tensors, what=f"checkpoint '{info.name}' ({weights})")
    backbone.eval()
    return backbone, info
