"""Base checkpoints and adapter bundles: folders of safetensors + JSON (docs/formats.md).

A **base checkpoint** is a folder ``model.safetensors`` + ``config.json`` + ``MODEL_CARD.md``;
an **adapter bundle** is a folder ``adapter.safetensors`` (only the tensors the freezing policy
trained, and a ``channel-id`` table) + ``adapter.json`` bound to its base by SHA-256. Save and
load are symmetric; loading is strict and says which tensors matched, were missing or
unexpected, and never hands back randomly initialised weights. Folders are written to a hidden temp folder and renamed into
place, so a crash never leaves a folder that reads as valid.

>>> from passport_kit.checkpoint import list_checkpoints
>>> names = [info.name for info in list_checkpoints()]
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors_bytes
from safetensors.torch import save as save_safetensors_bytes
from torch import Tensor, nn
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict only from Python 3.12

from passport_kit import __version__
from passport_kit.atomic_io import write_folder_atomically
from passport_kit.errors import CheckpointError, ConfigError, PassportWarning
from passport_kit.model import (
    Backbone,
    Classifier,
    EmbeddingKind,
    ModelConfig,
    Policy,
    apply_policy,
    build_backbone,
    policy_of,
    policy_parameter_names,
)
from passport_kit.model.channel_embedding import ChannelIdEmbedding
from passport_kit.model.heads import HeadKind, Pooling, ProbePooling, Scaling
from passport_kit.model.quality_gate import gate_classifier, has_quality_gate
from passport_kit.signals.preprocess import PreprocessConfig

FORMAT_VERSION = 1
BASE_FORMAT = "passport-kit/base-checkpoint"
ADAPTER_FORMAT = "passport-kit/adapter-bundle"
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
CARD_FILE = "MODEL_CARD.md"
ADAPTER_WEIGHTS_FILE = "adapter.safetensors"
ADAPTER_CONFIG_FILE = "adapter.json"



class InputContract(BaseModel):
    """The input a base checkpoint's backbone was pretrained on (``config.json`` → ``preprocessing``).

    Rates in Hz, amplitudes in µV (``scale_uv``: model units per µV, "100 uV" units);
    ``notch_freq`` documents the mains frequency (Hz) the pretraining recordings were notched at
    (None: each recording site's own, as CBraMod's 60 Hz for TUH); new data is notched at its
    own site's mains, never this one. ``adapt`` and ``predict`` preprocess new data by this
    contract (:func:`~passport_kit.signals.recording.fit_preprocessing`). The defaults are
    CBraMod's (cbramod.md §1.1, §3.1), which every shipped backbone expects. Files written
    before issue 29 spell the notch ``notch`` (a number or words): read as ``notch_freq``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    sfreq: float = 200.0
    patch_samples: int = 200
    l_freq: float = 0.3
    h_freq: float = 75.0
    notch_freq: float | None = None
    scale_uv: float = 100.0
    units: str = "100 uV"

    @model_validator(mode="before")
    @classmethod
    def _old_notch_key(cls, data: Any) -> Any:
        # config.json before issue 29: 'notch', a number or a sentence ("mains frequency of the
        # recording site (60 Hz for TUH)"), which is notch_freq None: each site's own.
        if isinstance(data, dict) and "notch" in data and "notch_freq" not in data:
            data = dict(data)
            old = data.pop("notch")
            data["notch_freq"] = old if isinstance(old, (int, float)) and not isinstance(old, bool) else None
        return data


#: The CBraMod input contract every shipped backbone expects, as a plain mapping.
CBRAMOD_PREPROCESSING: dict[str, Any] = InputContract().model_dump(mode="json")


_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")

CheckpointSource = Literal["shipped", "user", "path"]


# ------------------------------------------------------------------------- file models
class InitSource(BaseModel):
    """Where an upcycled base checkpoint started (``pretrain --init-from``) and what was trained.

    ``trained`` is ``experts`` (the expert bank and mixture network only; every tensor of the
    source backbone is kept bit for bit) or ``all``; ``frozen_tensors`` lists the tensors that
    were not trained (empty for ``all``).
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    sha256: str
    embedding: str  # the source's channel embedding kind
    trained: Literal["experts", "all"]
    temporal_position: str  # of the new checkpoint: "acpe-conv" (kept) or "sinusoid"
    frozen_tensors: list[str] = Field(default_factory=list)

    @field_validator("sha256")
    @classmethod
    def _hex_digest(cls, value: str) -> str:
        if not _SHA256.match(value):
            raise ValueError("must be a 64-character lowercase SHA-256 hex digest")
        return value


class BaseCheckpointConfig(BaseModel):
    """Contents of ``config.json`` in a base checkpoint folder."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    format: Literal["passport-kit/base-checkpoint"] = BASE_FORMAT
    format_version: int = FORMAT_VERSION
    name: str
    model: ModelConfig
    preprocessing: InputContract = Field(default_factory=InputContract)
    training: dict[str, Any] = Field(default_factory=dict)
    #: Set when the backbone was taken from another base checkpoint (``pretrain --init-from``).
    init_from: InitSource | None = None
    weights_sha256: str
    n_parameters: int
    package_version: str = __version__
    created: str = ""


class BaseCheckpointInfo(BaseCheckpointConfig):
    """A base checkpoint's ``config.json`` plus where it was found."""

    path: Path
    source: CheckpointSource


class AdapterVariant(BaseModel):
    """What adapter a bundle holds, recorded when it is saved and read back as written (never guessed).

    ``embedding``: the base's channel embedding kind, whose adapter part the policy trains;
    ``policy``: which tensors were trained and are stored; ``head``: ``mlp`` (the paper's head)
    or ``probe`` (the cross-validated read-out); ``quality_gate``: a learned noise expert gates
    each channel's code by its quality score (``adapt --quality-gate``;
    :mod:`passport_kit.model.quality_gate`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    embedding: EmbeddingKind
    policy: Policy
    head: Literal["mlp", "probe"]
    quality_gate: bool = False

    @classmethod
    def of(cls, classifier: Classifier) -> AdapterVariant:
        """Return the variant of a classifier as it stands (its policy, head and gate)."""
        return cls(embedding=classifier.backbone.config.embedding, policy=policy_of(classifier),
                   head=classifier.head_settings.get("kind", "mlp"), quality_gate=has_quality_gate(classifier.backbone))


class WindowSettings(TypedDict, total=False):
    """``adapter.json`` → ``window``: how the training data was cut (absent in bundles older than it).

    A typed mapping rather than a model: readers (predict) take it as the dict it always was.
    """

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc] - keys a newer version may add stay

    seconds: float
    task: str


class HeadSettings(TypedDict, total=False):
    """``adapter.json`` → ``head``: the keyword arguments of :class:`~passport_kit.model.Classifier` that rebuild the
    head (``Classifier.head_settings``), exactly the keys written.

    A key absent is absent (not a default): bundles written before ``kind``, ``layer`` or ``bands``
    existed read back as the head they were. The order is the order both kinds write their keys in,
    so that a new bundle's JSON is what ``head_settings`` gave.
    """

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc] - Classifier takes no other keyword

    kind: HeadKind  # absent: "mlp" (bundles written before the probe head existed)
    n_classes: int
    n_channels: int | None  # probe
    pooling: Pooling  # mlp
    n_patches: int | None  # mlp
    hidden: int  # mlp
    dropout: float  # mlp
    context: int  # probe
    layer: int | None  # probe
    pooling_probe: ProbePooling  # probe
    bands: list[list[float]]  # probe: [low, high] in Hz per band
    scaling: Scaling  # probe
    n_prior: int  # probe with a sleep prior block (issue 33)
    prior: dict[str, Any]  # probe: the prior's name and channels (passport_kit.sleep.priors.PriorSpec)
    temperature: float  # probe: calibration temperature (absent: 1)
    smoothing: dict[str, Any]  # probe: the night HMM's transitions and emission prior (absent: none)


_HEAD_SETTINGS = TypeAdapter(HeadSettings)


class AdapterMeta(BaseModel):
    """Contents of ``adapter.json``: everything that binds an adapter to its base and its data.

    Fill the first block when saving; ``policy``, ``model``, ``head``, ``variant`` and
    ``tensors`` are taken from the classifier by :func:`save_adapter_bundle`. Bundles written
    before ``variant`` existed read back with it None (their gate is known from their tensors).

    ``window`` and ``head`` are typed mappings (:class:`WindowSettings`, :class:`HeadSettings`).
    Three blocks stay plain mappings on purpose: ``montage`` is the montage file's own form
    (``Montage.to_dict()``; the hash check and predict rebuild it with ``Montage.from_dict``),
    ``training`` is a run file whose model (``AdaptConfig``) lives in onboarding, above this
    floor (``run_file`` and ``ContactPolicy.of_bundle`` validate it where they read it), and
    ``metrics`` is what adapt measured, a record that grows (``selection.adapter_training``,
    ``channel_quality``, ``amplitude``, ...): a key written by a newer version must survive.
    """

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    format: Literal["passport-kit/adapter-bundle"] = ADAPTER_FORMAT
    format_version: int = FORMAT_VERSION
    base_name: str
    base_sha256: str
    montage: dict[str, Any]
    montage_hash: str
    classes: list[str]
    preprocessing: PreprocessConfig
    window: WindowSettings = Field(default_factory=WindowSettings)
    training: dict[str, Any] = Field(default_factory=dict)
    #: SHA-256 of every training recording and label file, by path relative to the dataset folder
    #: (``signals.data_hashes``); empty in bundles written before it was recorded.
    training_data: dict[str, str] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(default_factory=dict)
    package_version: str = __version__
    created: str = ""
    # Filled from the classifier at save time.
    policy: Policy | None = None
    model: ModelConfig | None = None
    head: HeadSettings = Field(default_factory=HeadSettings)
    variant: AdapterVariant | None = None
    tensors: list[str] = Field(default_factory=list)

    @field_validator("montage", "window", "training", mode="before")
    @classmethod
    def _plain_dict(cls, value: Any) -> Any:
        # Accept pydantic models (Montage, PreprocessConfig) and store their plain form.
        if isinstance(value, BaseModel):
            to_dict = getattr(value, "to_dict", None)
            return to_dict() if callable(to_dict) else value.model_dump(mode="json")
        return value

    @field_validator("base_sha256", "montage_hash")
    @classmethod
    def _hex_digest(cls, value: str) -> str:
        if not _SHA256.match(value):
            raise ValueError("must be a 64-character lowercase SHA-256 hex digest")
        return value


@dataclass(frozen=True)
class LoadReport:
    """Which tensors of a file matched the model, and which were missing or unexpected."""

    matched: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)  # "name: file (shape) vs model (shape)"

    @property
    def ok(self) -> bool:
        """Return True when every expected tensor matched and nothing else was present."""
        return bool(self.matched) and not (self.missing or self.unexpected or self.mismatched)

    def summary(self) -> str:
        """Return one line: counts, and the first few offending names."""
        parts = [f"{len(self.matched)} matched"]
        for label, names in (
            ("missing", self.missing),
            ("unexpected", self.unexpected),
            ("shape-mismatched", self.mismatched),
        ):
            if names:
                more = f" (+{len(names) - 5} more)" if len(names) > 5 else ""
                parts.append(f"{len(names)} {label} {names[:5]}{more}")
        return ", ".join(parts)


# ---------------------------------------------------------------------- strict loading
def compare_tensors(expected: Mapping[str, Tensor], found: Mapping[str, Tensor]) -> LoadReport:
    """Return the matched / missing / unexpected / shape-mismatched names of ``found``."""
    matched, mismatched = [], []
    for name, tensor in found.items():
        if name not in expected:
            continue
        if tuple(tensor.shape) != tuple(expected[name].shape):
            mismatched.append(
                f"{name}: file {tuple(tensor.shape)} vs model {tuple(expected[name].shape)}"
            )
        else:
            matched.append(name)
    missing = sorted(set(expected) - set(found))
    unexpected = sorted(set(found) - set(expected))
    return LoadReport(sorted(matched), missing, unexpected, mismatched)


def load_strict(module: nn.Module, tensors: Mapping[str, Tensor], *, what: str) -> LoadReport:
    """Return the report after loading ``tensors`` into every state-dict entry of ``module``.

    Raises CheckpointError (naming ``what``) unless the names and shapes match exactly.
    """
    report = compare_tensors(module.state_dict(), tensors)
    if not report.ok:
        raise CheckpointError(
            f"{what} does not fit the model: {report.summary()} - it was made for another"
            " architecture or embedding, or the file is damaged"
        )
    module.load_state_dict(dict(tensors), strict=True)
    return report


# --------------------------------------------------------------------- folder writing
def _write_folder_atomically(folder: Path, fill: Callable[[Path], None], *, overwrite: bool) -> Path:
    """Return ``folder`` after ``fill`` wrote its files into a temp folder renamed into place."""
    folder = Path(folder)
    if folder.exists() and not overwrite:
        raise CheckpointError(
            f"'{folder}' already exists; choose another output folder or allow overwriting"
        )
    return write_folder_atomically(folder, fill)


def _state_for_saving(tensors: Mapping[str, Tensor], *, what: str) -> dict[str, Tensor]:
    state = {name: t.detach().to("cpu").contiguous() for name, t in tensors.items()}
    check_finite(state, what=what, fix="the model diverged; train it again with a lower learning rate")
    return state


def check_finite(tensors: Mapping[str, Tensor], *, what: str, fix: str) -> None:
    """Raise CheckpointError naming the first of ``tensors`` that holds NaN or inf (DESIGN.md §5: never written, never loaded)."""
    for name, tensor in tensors.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            bad = int((~torch.isfinite(tensor)).sum())
            raise CheckpointError(f"{what}: tensor '{name}' holds {bad} NaN or infinite values of {tensor.numel()}; "
                                  f"{fix}")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _dump_json(model: BaseModel) -> str:
    return json.dumps(model.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def sha256_bytes(data: bytes) -> str:
    """Return the SHA-256 hex digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def check_name(name: str) -> str:
    """Return ``name`` if it is a valid checkpoint name, else raise ConfigError."""
    if not _NAME.match(name):
        raise ConfigError(
            f"invalid checkpoint name {name!r}; use lowercase letters, digits and '-'"
        )
    return name


# --------------------------------------------------------------------- base checkpoints
def save_base_checkpoint(
    backbone: Backbone,
    folder: str | Path,
    *,
    name: str,
    card: str = "",
    training_info: Mapping[str, Any] | None = None,
    preprocessing: Mapping[str, Any] | None = None,
    init_from: InitSource | None = None,
    overwrite: bool = False,
) -> Path:
    """Return the folder after writing ``backbone`` as a base checkpoint (atomically).

    ``card`` is free Markdown prepended to the generated MODEL_CARD.md; ``training_info``
    (pretraining data, montages, epochs, ...) goes to ``config.json`` as given; ``init_from``
    records the checkpoint an upcycled backbone came from.
    """
    check_name(name)
    state = _state_for_saving(backbone.state_dict(), what=f"base checkpoint '{name}' not written")
    data = save_safetensors_bytes(state, metadata={"format": BASE_FORMAT})
    config = BaseCheckpointConfig(
        name=name,
        model=backbone.config,
        preprocessing=InputContract.model_validate(dict(preprocessing or CBRAMOD_PREPROCESSING)),
        training=dict(training_info or {}),
        init_from=init_from,
        weights_sha256=sha256_bytes(data),
        n_parameters=sum(p.numel() for p in backbone.parameters()),
        created=_now(),
    )

    def fill(tmp: Path) -> None:
        (tmp / WEIGHTS_FILE).write_bytes(data)
        (tmp / CONFIG_FILE).write_text(_dump_json(config), encoding="utf-8")
        (tmp / CARD_FILE).write_text(_model_card(config, card), encoding="utf-8")

    return _write_folder_atomically(Path(folder), fill, overwrite=overwrite)


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


def checkpoint_roots() -> list[tuple[CheckpointSource, Path]]:
    """Return the folders searched for named checkpoints, shipped ones first.

    Shipped: ``checkpoints/`` of a source checkout and ``passport_kit/data/checkpoints`` of an
    installed wheel. User: ``$PASSPORT_KIT_HOME/checkpoints`` (or the platform data folder).
    """
    from passport_kit.montage import user_home

    package = Path(__file__).resolve().parent
    roots: list[tuple[CheckpointSource, Path]] = []
    checkout = package.parent
    if (checkout / "pyproject.toml").is_file():
        roots.append(("shipped", checkout / "checkpoints"))
    roots.append(("shipped", package / "data" / "checkpoints"))
    roots.append(("user", user_checkpoint_dir(user_home())))
    return roots


def user_checkpoint_dir(home: Path | None = None) -> Path:
    """Return the folder of user checkpoints (``<home>/checkpoints``)."""
    if home is None:
        from passport_kit.montage import user_home

        home = user_home()
    return Path(home) / "checkpoints"


def _read_document(path: Path, *, fmt: str, what: str, fix: str, extra: Mapping[str, Any]) -> dict[str, Any]:
    """Return the JSON mapping at ``path`` (plus ``extra``) after the format and version checks.

    ``what`` names the folder kind in messages ("a base checkpoint"); ``fix`` says how to repair.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(
            f"'{path.parent}' is not {what} (no {path.name}); give the folder of {what}"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"cannot read '{path}' ({exc}); {fix}") from None
    except RecursionError:  # a hand-edited file nested thousands deep (issue 28)
        raise CheckpointError(f"cannot read '{path}': it is nested too deeply to be {what}; {fix}") from None
    if not isinstance(raw, dict) or raw.get("format") != fmt:
        found = raw.get("format") if isinstance(raw, dict) else type(raw).__name__
        raise CheckpointError(f"'{path}' is not {what} of passport-kit (format {found!r}); {fix}")
    version = raw.get("format_version")
    if isinstance(version, int) and version > FORMAT_VERSION:
        raise CheckpointError(
            f"'{path.parent}' uses format version {version}, newer than this passport-kit"
            f" ({FORMAT_VERSION}); upgrade passport-kit"
        )
    return {**raw, **extra}


def _validated(model: type[BaseModel], data: Mapping[str, Any], path: Path, fix: str) -> Any:
    """Return ``model`` validated from ``data``; CheckpointError naming the first problem."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise CheckpointError(f"'{path}' is invalid: {where}: {first['msg']}; {fix}") from None


_BASE_FIX = "re-create the checkpoint"
_ADAPTER_FIX = "re-run `passport-kit adapt`"


def _read_base_config(folder: Path, source: CheckpointSource) -> BaseCheckpointInfo:
    path = folder / CONFIG_FILE
    raw = _read_document(
        path, fmt=BASE_FORMAT, what="a base checkpoint", fix=_BASE_FIX, extra={"path": folder, "source": source}
    )
    return _validated(BaseCheckpointInfo, raw, path, _BASE_FIX)


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
                warnings.warn(str(exc), stacklevel=2)
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
    tensors = _parse_safetensors(data, weights)
    check_finite(tensors, what=f"checkpoint '{info.name}' ({weights}) refused", fix="restore or re-create it")
    backbone = build_backbone(info.model)
    load_strict(backbone, tensors, what=f"checkpoint '{info.name}' ({weights})")
    backbone.eval()
    return backbone, info


def _parse_safetensors(data: bytes, path: Path) -> dict[str, Tensor]:
    try:
        return load_safetensors_bytes(data)
    except (SafetensorError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"'{path}' is not a valid safetensors file ({exc}); re-create it") from None


# ----------------------------------------------------------------------- adapter bundles
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
    tensors = _state_for_saving(adapter_tensors(classifier), what=f"adapter bundle '{folder}' not written")
    data = save_safetensors_bytes(tensors, metadata={"format": ADAPTER_FORMAT})
    full = meta.model_copy(
        update={
            "policy": policy_of(classifier),
            "model": classifier.backbone.config,
            "head": _HEAD_SETTINGS.validate_python(classifier.head_settings),
            "variant": AdapterVariant.of(classifier),
            "tensors": sorted(tensors),
            "created": meta.created or _now(),
            "format": ADAPTER_FORMAT,
            "format_version": FORMAT_VERSION,
        }
    )

    def fill(tmp: Path) -> None:
        (tmp / ADAPTER_WEIGHTS_FILE).write_bytes(data)
        (tmp / ADAPTER_CONFIG_FILE).write_text(_dump_json(full), encoding="utf-8")

    return _write_folder_atomically(Path(folder), fill, overwrite=overwrite)


def read_adapter_meta(folder: str | Path) -> AdapterMeta:
    """Return the validated ``adapter.json`` of an adapter bundle folder."""
    path = Path(folder) / ADAPTER_CONFIG_FILE
    raw = _read_document(path, fmt=ADAPTER_FORMAT, what="an adapter bundle", fix=_ADAPTER_FIX, extra={})
    meta: AdapterMeta = _validated(AdapterMeta, raw, path, _ADAPTER_FIX)
    if meta.model is None or meta.policy is None:
        raise CheckpointError(f"'{path}' lacks the model config or policy; {_ADAPTER_FIX}")
    return meta


def load_adapter_bundle(
    folder: str | Path, *, base: str | Path | None = None
) -> tuple[Classifier, AdapterMeta]:
    """Return the classifier (eval mode) and its metadata, checked against its base.

    The base is found by the name recorded in ``adapter.json`` unless ``base`` (a name or
    folder) is given; its SHA-256 must equal the recorded one, and the montage copy must still
    hash to the recorded montage hash.
    """
    folder = Path(folder)
    meta = read_adapter_meta(folder)
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
    try:
        classifier = Classifier(backbone, **meta.head)
    except TypeError as exc:
        raise CheckpointError(f"adapter '{folder}' has invalid head settings ({exc}); re-run adapt") from None
    apply_policy(classifier, meta.policy)
    weights = folder / ADAPTER_WEIGHTS_FILE
    try:
        data = weights.read_bytes()
    except OSError:
        raise CheckpointError(f"adapter '{folder}' has no readable {ADAPTER_WEIGHTS_FILE}; re-run adapt") from None
    tensors = _parse_safetensors(data, weights)
    check_finite(tensors, what=f"adapter '{folder}' refused", fix="it was trained with a diverging learning rate or "
                 "damaged; re-run `passport-kit adapt` (with a lower --lr)")
    if _quality_gated(meta, tensors):  # a noise expert its base lacks
        gate_classifier(classifier, meta.policy)
    expected = adapter_tensors(classifier)
    unstored = _drawn_tensor_names(classifier) - set(tensors) - policy_parameter_names(classifier, meta.policy)
    if unstored:  # written before bundles stored the table whatever the policy: loaded as then
        expected = {name: t for name, t in expected.items() if name not in unstored}
        if extra:
            warnings.warn(PassportWarning(
                f"adapter '{folder}' does not store its channel-id rows for {extra} (written before they were"
                " stored): they are drawn at random at each load, so its predictions differ from load to load;"
                " re-run `passport-kit adapt` to store them"), stacklevel=2)
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


# ------------------------------------------------------------------ CBraMod release import
#: The channel order of CBraMod's pretraining data (TUEG, cbramod.md §3.1).
CBRAMOD_PRETRAINING_CHANNELS = (
    "FP1 FP2 F3 F4 C3 C4 P3 P4 O1 O2 F7 F8 T3 T4 T5 T6 FZ CZ PZ".split()
)
_LAYER_KEY = re.compile(r"^encoder\.layers\.(\d+)\.")


def read_foreign_state_dict(path: str | Path) -> dict[str, Tensor]:
    """Return the tensors of a plain PyTorch state-dict file, unpickled safely.

    Only ``torch.load(weights_only=True)`` is used, which refuses arbitrary objects. A
    ``module.`` prefix (left by DataParallel) is removed.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"'{path}' does not exist; give the path of pretrained_weights.pth")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # UnpicklingError, RuntimeError, EOFError, zip errors, ...
        raise CheckpointError(
            f"'{path}' is not a PyTorch weights file that loads safely ({type(exc).__name__});"
            " give the official CBraMod pretrained_weights.pth"
        ) from None
    if not isinstance(obj, Mapping) or not obj or not all(
        isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items()
    ):
        raise CheckpointError(
            f"'{path}' holds a {type(obj).__name__}, not a plain state dict of tensors;"
            " give the official CBraMod pretrained_weights.pth"
        )
    tensors = dict(obj)
    if all(k.startswith("module.") for k in tensors):
        tensors = {k[len("module.") :]: v for k, v in tensors.items()}
    return tensors


def import_cbramod(
    path: str | Path, folder: str | Path, *, name: str, overwrite: bool = False
) -> Path:
    """Return the base checkpoint folder written from the official CBraMod release file.

    The release is a plain state dict of ``CBraMod()`` (211 tensors for 12 layers); with the
    ``acpe`` embedding our backbone has exactly its names and shapes, so the import is a
    strict one-to-one load. Anything else is refused with the list of offending tensors.
    """
    from passport_kit.model import ARCHITECTURES

    check_name(name)
    path = Path(path)
    tensors = read_foreign_state_dict(path)
    depths = {int(m.group(1)) for k in tensors if (m := _LAYER_KEY.match(k))}
    if not depths:
        raise CheckpointError(
            f"'{path}' has no 'encoder.layers.N.*' tensors, so it is not a CBraMod state dict;"
            " give the official CBraMod pretrained_weights.pth"
        )
    n_layers = max(depths) + 1
    arch = next((a for a, d in ARCHITECTURES.items() if d == n_layers), f"cbramod-{n_layers}-layers")
    backbone = build_backbone(ModelConfig(arch=arch, n_layers=n_layers, embedding="acpe"))
    load_strict(backbone, tensors, what=f"'{path}'")
    training = {
        "source": "CBraMod official release (Wang et al., ICLR 2025; github.com/wjq-learning/CBraMod)",
        "imported_from": path.name,
        "source_sha256": sha256_bytes(path.read_bytes()),
        "pretraining_data": "TUEG (TUH EEG corpus), ~9k hours after 100 uV segment rejection",
        "pretraining_montage": list(CBRAMOD_PRETRAINING_CHANNELS),
        "objective": "masked patch reconstruction (Bernoulli 0.5 mask)",
    }
    card = (
        "Imported from the official CBraMod pretrained weights with"
        " `passport-kit checkpoints import-cbramod`. Channel embedding: ACPE (CBraMod's own);"
        " CBraMod's licence and citation apply to these weights."
    )
    return save_base_checkpoint(
        backbone, folder, name=name, card=card, training_info=training, overwrite=overwrite
    )


__all__ = [
    "ADAPTER_CONFIG_FILE",
    "ADAPTER_WEIGHTS_FILE",
    "CARD_FILE",
    "CBRAMOD_PREPROCESSING",
    "CONFIG_FILE",
    "FORMAT_VERSION",
    "InputContract",
    "WEIGHTS_FILE",
    "AdapterMeta",
    "AdapterVariant",
    "BaseCheckpointConfig",
    "BaseCheckpointInfo",
    "InitSource",
    "LoadReport",
    "adapter_tensors",
    "check_name",
    "checkpoint_roots",
    "compare_tensors",
    "find_checkpoint",
    "import_cbramod",
    "list_checkpoints",
    "load_adapter_bundle",
    "load_base_checkpoint",
    "load_strict",
    "read_adapter_meta",
    "read_foreign_state_dict",
    "save_adapter_bundle",
    "save_base_checkpoint",
    "sha256_bytes",
    "user_checkpoint_dir",
]
