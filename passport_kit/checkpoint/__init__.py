"""Base checkpoints and adapter bundles: folders of safetensors + JSON (docs/formats.md).

A **base checkpoint** is a folder ``model.safetensors`` + ``config.json`` + ``MODEL_CARD.md``;
an **adapter bundle** is a folder ``adapter.safetensors`` (only the tensors the freezing policy
trained, and a ``channel-id`` table) + ``adapter.json`` bound to its base by SHA-256. Save and
load are symmetric; loading is strict and says which tensors matched, were missing or
unexpected, and never hands back randomly initialised weights. Folders are written to a hidden temp folder and renamed into
place, so a crash never leaves a folder that reads as valid.

One module per concern: ``layout`` (file names, formats, checkpoint names and where they are
found), ``files`` (the JSON documents as pydantic models, the input contract among them),
``adapter_metrics`` (adapter.json's ``metrics``: what adapt measured and chose, typed; torch-free),
``folders`` (atomic writing, strict reading), ``tensors`` (strict loading, finiteness, hashes),
``base`` (base checkpoints and their cards), ``bundle`` (adapter bundles) and ``cbramod``
(import of the CBraMod release).

>>> from passport_kit.checkpoint import list_checkpoints
>>> names = [info.name for info in list_checkpoints()]
"""

from __future__ import annotations

from passport_kit.checkpoint.layout import (
    ADAPTER_CONFIG_FILE,
    ADAPTER_FORMAT,
    ADAPTER_WEIGHTS_FILE,
    BASE_FORMAT,
    CARD_FILE,
    CONFIG_FILE,
    DEFAULT_CHECKPOINT,
    FORMAT_VERSION,
    WEIGHTS_FILE,
    CheckpointSource,
    check_name,
    checkpoint_roots,
    user_checkpoint_dir,
)

# The rest needs torch, so it is imported when first used (PEP 562, as `passport_kit` itself
# does): the CLI imports DEFAULT_CHECKPOINT at start-up, and torch would add seconds to every command.
_LAZY: dict[str, tuple[str, ...]] = {
    "files": ("CBRAMOD_PREPROCESSING", "AdapterMeta", "AdapterVariant", "BaseCheckpointConfig", "BaseCheckpointInfo",
              "HeadSettings", "InitSource", "InputContract", "WindowSettings"),
    "tensors": ("LoadReport", "check_finite", "compare_tensors", "load_strict", "sha256_bytes"),
    "base": ("find_checkpoint", "list_checkpoints", "load_base_checkpoint", "save_base_checkpoint", "weights_status"),
    "bundle": ("adapter_tensors", "load_adapter_bundle", "read_adapter_meta", "save_adapter_bundle"),
    "cbramod": ("CBRAMOD_PRETRAINING_CHANNELS", "import_cbramod", "read_foreign_state_dict"),
}
_MODULE_OF = {name: module for module, names in _LAZY.items() for name in names}

__all__ = [
    "ADAPTER_CONFIG_FILE",
    "ADAPTER_FORMAT",
    "ADAPTER_WEIGHTS_FILE",
    "BASE_FORMAT",
    "CARD_FILE",
    "CONFIG_FILE",
    "DEFAULT_CHECKPOINT",
    "FORMAT_VERSION",
    "WEIGHTS_FILE",
    "CheckpointSource",
    "check_name",
    "checkpoint_roots",
    "user_checkpoint_dir",
    *_MODULE_OF,
]


def __getattr__(name: str):  # noqa: ANN202 - module-level lazy attribute (PEP 562)
    if name in _MODULE_OF:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF))
