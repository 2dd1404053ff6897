"""The files of a checkpoint folder as pydantic models: ``config.json`` and ``adapter.json`` (docs/formats.md).

:class:`InputContract` is the signal a base checkpoint expects (its ``preprocessing`` block);
:class:`BaseCheckpointConfig` and :class:`AdapterMeta` are the two JSON documents, validated
strictly (``extra="forbid"``) when a folder is read. Files written by earlier versions are read
through :data:`MIGRATIONS`, one named entry per older form of a block.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import (BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler,
                      field_serializer, field_validator, model_serializer, model_validator)
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict only from Python 3.12

from passport_kit.version import __version__
from passport_kit.checkpoint.adapter_metrics import AdapterMetrics
from passport_kit.checkpoint.head_keys import HEAD_SETTINGS, HeadSettings  # noqa: F401 - the head block's form
from passport_kit.checkpoint.layout import ADAPTER_FORMAT, BASE_FORMAT, FORMAT_VERSION, CheckpointSource
from passport_kit.model import Classifier, EmbeddingKind, ModelConfig, Policy, policy_of
from passport_kit.model.heads import HeadKind
from passport_kit.model.quality_gate import has_quality_gate
from passport_kit.signals.preprocess import PreprocessConfig

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Migration:
    """One older form of a block of a checkpoint file, and how it reads as the current form.

    ``since``: the change that brought the current form (files written before it have the older
    one; the forms are told apart by their keys, not by ``format_version``, which is 1 for every base
    checkpoint and for bundles written before the seal, 2 for sealed bundles: ``checkpoint/seal.py``);
    ``block``: ``"preprocessing"`` (config.json) or ``"head"`` (adapter.json); ``upgrade``: the
    block as read → the current form (a current block passes unchanged); ``written``: the current
    form → the form written, for a block whose older form is still written where it can say the
    same (None: the current form is written).
    """

    name: str
    since: str
    block: str
    upgrade: Callable[[dict[str, Any]], dict[str, Any]]
    written: Callable[[dict[str, Any]], dict[str, Any]] | None = None


def _notch_freq(data: dict[str, Any]) -> dict[str, Any]:
    """Return a preprocessing block with ``notch`` (a number or words) read as ``notch_freq``."""
    # config.json before issue 29: 'notch', a number or a sentence ("mains frequency of the
    # recording site (60 Hz for TUH)"), which is notch_freq None: each site's own.
    if "notch" not in data or "notch_freq" in data:
        return data
    data = dict(data)
    old = data.pop("notch")
    data["notch_freq"] = old if isinstance(old, (int, float)) and not isinstance(old, bool) else None
    return data


def _head_keys(name: str, since: str, kind: str, keys: Mapping[str, Any]) -> Migration:
    """Return the migration of a head block of ``kind`` written before ``keys`` existed.

    Read, each key absent means its value in ``keys`` (what that head did before the key). Written,
    the keys are left out while the first holds its value in ``keys``: a head read from an older
    bundle writes the block it was read from, and a head that does not use the option (no sleep
    prior, temperature 1) writes what such a head always wrote.
    """
    first = next(iter(keys))

    def upgrade(head: dict[str, Any]) -> dict[str, Any]:
        if head.get("kind") != kind:
            return head
        return {**head, **{key: value for key, value in keys.items() if key not in head}}

    def written(head: dict[str, Any]) -> dict[str, Any]:
        if head.get("kind") != kind or first not in head or head[first] != keys[first]:
            return head
        return {key: value for key, value in head.items() if key not in keys}

    return Migration(name, since, "head", upgrade, written)


def _head_kind(head: dict[str, Any]) -> dict[str, Any]:
    """Return a head block with its kind: none is the paper's MLP head, the only one before the probe."""
    return head if "kind" in head else {"kind": "mlp", **head}


def _mlp_without_kind(head: dict[str, Any]) -> dict[str, Any]:
    """Return an MLP head block without ``kind``, as every MLP head has been written."""
    return {key: value for key, value in head.items() if key != "kind"} if head.get("kind") == "mlp" else head


#: The older forms of the files, by block, in the order they are applied on reading (the reverse on writing).
#: A new key of a block is one entry here with the value its absence meant, and a test reading such a block.
MIGRATIONS: tuple[Migration, ...] = (
    Migration("notch-freq", "issue 29", "preprocessing", _notch_freq),
    Migration("head-kind", "issue 18 (the probe head)", "head", _head_kind, _mlp_without_kind),
    _head_keys("probe-layer", "issue 18 (the read-out layer)", "probe", {"layer": None, "pooling_probe": "mean"}),
    _head_keys("probe-bands", "issue 24 (the spectral bands)", "probe", {"bands": None, "scaling": "none"}),
    _head_keys("probe-prior", "issue 33 (the sleep prior block)", "probe", {"n_prior": 0, "prior": None}),
    _head_keys("probe-temperature", "issue 33 (calibration)", "probe", {"temperature": 1.0}),
    _head_keys("probe-smoothing", "issue 33 (the night's smoothing)", "probe", {"smoothing": None}),
    _head_keys("probe-prior-scaling", "issue 55 (the stager's block unscaled)", "probe", {"scales_prior": True}),
)


def upgraded(block: str, data: Any) -> Any:
    """Return ``data``, a ``block`` as a file holds it, in the current form (the block's migrations, in order)."""
    if not isinstance(data, dict):  # not a block at all: validation says so
        return data
    for migration in MIGRATIONS:
        if migration.block == block:
            data = migration.upgrade(data)
    return data


def written(block: str, data: dict[str, Any]) -> dict[str, Any]:
    """Return ``data``, a ``block`` in the current form, as it is written (its migrations' written forms)."""
    for migration in reversed(MIGRATIONS):
        if migration.block == block and migration.written is not None:
            data = migration.written(data)
    return data


class InputContract(BaseModel):
    """The input a base checkpoint's backbone was pretrained on (``config.json`` → ``preprocessing``).

    Rates in Hz, amplitudes in µV (``scale_uv``: model units per µV, "100 uV" units);
    ``notch_freq`` documents the mains frequency (Hz) the pretraining recordings were notched at
    (None: each recording site's own, as CBraMod's 60 Hz for TUH); new data is notched at its
    own site's mains, never this one. ``adapt`` and ``predict`` preprocess new data by this
    contract (:func:`~passport_kit.signals.recording.fit_preprocessing`). The defaults are
    CBraMod's (cbramod.md §1.1, §3.1), which every shipped backbone expects. Files written
    before issue 29 spell the notch ``notch`` (a number or words): read as ``notch_freq``
    (:data:`MIGRATIONS`).
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
    def _current_form(cls, data: Any) -> Any:
        return upgraded("preprocessing", data)


#: The CBraMod input contract every shipped backbone expects, as a plain mapping.
CBRAMOD_PREPROCESSING: dict[str, Any] = InputContract().model_dump(mode="json")


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
    #: The licence of the weights, and of what they were trained on where that adds terms (one line; issue 58);
    #: None in checkpoints written before it was recorded.
    licence: str | None = None
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
    head: HeadKind
    quality_gate: bool = False

    @classmethod
    def of(cls, classifier: Classifier) -> AdapterVariant:
        """Return the variant of a classifier as it stands (its policy, head and gate)."""
        return cls(embedding=classifier.backbone.config.embedding, policy=policy_of(classifier),
                   head=classifier.head.kind, quality_gate=has_quality_gate(classifier.backbone))


class WindowSettings(TypedDict, total=False):
    """``adapter.json`` → ``window``: how the training data was cut (absent in bundles older than it).

    A typed mapping rather than a model: readers (predict) take it as the dict it always was.
    """

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc] - keys a newer version may add stay

    seconds: float
    task: str


class AdapterMeta(BaseModel):
    """Contents of ``adapter.json``: everything that binds an adapter to its base and its data.

    Fill the first block when saving; ``policy``, ``model``, ``head``, ``variant`` and
    ``tensors`` are taken from the classifier by :func:`save_adapter_bundle`. Bundles written
    before ``variant`` existed read back with it None (their gate is known from their tensors).

    ``window`` and ``head`` are typed mappings (:class:`WindowSettings`, :class:`HeadSettings`);
    ``metrics``, what adapt measured and chose, is a typed record
    (:class:`~passport_kit.checkpoint.adapter_metrics.AdapterMetrics`) that keeps a key written by a
    newer version. Two blocks stay plain mappings on purpose: ``montage`` is the montage file's own form
    (``Montage.to_dict()``; the hash check and predict rebuild it with ``Montage.from_dict``), and
    ``training`` is a run file whose model (``AdaptConfig``) lives in onboarding, above this
    floor (``run_file`` and ``ContactPolicy.of_bundle`` validate it where they read it).
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
    metrics: AdapterMetrics = Field(default_factory=AdapterMetrics)
    package_version: str = __version__
    created: str = ""
    # Filled from the classifier at save time.
    policy: Policy | None = None
    model: ModelConfig | None = None
    head: HeadSettings = Field(default_factory=HeadSettings)
    variant: AdapterVariant | None = None
    tensors: list[str] = Field(default_factory=list)
    #: The licences of what the bundle contains or needs to predict (passport-kit's, the base checkpoint's, the
    #: stacked sleep stager's: :func:`~passport_kit.checkpoint.licences.bundle_licences`), filled at save time;
    #: empty in bundles written before issue 58.
    licences: dict[str, str] = Field(default_factory=dict)
    #: The digests ``adapt`` sealed the bundle with (:mod:`~passport_kit.checkpoint.seal`); None (not written) in
    #: bundles written before issue 57.
    seal: dict[str, Any] | None = None

    @model_serializer(mode="wrap")
    def _without_absent_seal(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A bundle written before the seal keeps its form (it reads back and writes the same bytes).
        out = handler(self)
        if out.get("seal", 0) is None:
            del out["seal"]
        return out

    @field_validator("head", mode="before")
    @classmethod
    def _current_head(cls, value: Any) -> Any:
        return upgraded("head", value)

    @field_serializer("head", mode="wrap")
    def _written_head(self, value: Any, handler: SerializerFunctionWrapHandler) -> Any:
        return written("head", handler(value))

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
