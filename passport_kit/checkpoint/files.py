"""The files of a checkpoint folder as pydantic models: ``config.json`` and ``adapter.json`` (docs/formats.md).

:class:`InputContract` is the signal a base checkpoint expects (its ``preprocessing`` block);
:class:`BaseCheckpointConfig` and :class:`AdapterMeta` are the two JSON documents, validated
strictly (``extra="forbid"``) when a folder is read.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict only from Python 3.12

from passport_kit.version import __version__
from passport_kit.checkpoint.layout import ADAPTER_FORMAT, BASE_FORMAT, FORMAT_VERSION, CheckpointSource
from passport_kit.model import Classifier, EmbeddingKind, ModelConfig, Policy, policy_of
from passport_kit.model.heads import HeadKind, Pooling, ProbePooling, Scaling
from passport_kit.model.quality_gate import has_quality_gate
from passport_kit.signals.preprocess import PreprocessConfig

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


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


#: Validates a classifier's ``head_settings`` before a bundle records them.
HEAD_SETTINGS = TypeAdapter(HeadSettings)


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
