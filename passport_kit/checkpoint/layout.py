"""What checkpoint folders and files are called, and where named checkpoints are found.

Torch-free on purpose: the CLI reads :data:`DEFAULT_CHECKPOINT` when it starts, without loading torch.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from passport_kit.errors import ConfigError

FORMAT_VERSION = 1
#: The form of ``adapter.json``: 2 since bundles are sealed when written (issue 57: a bundle of version 2 without its
#: seal was edited, and is refused); 1 before, read without a seal as then.
ADAPTER_FORMAT_VERSION = 2
#: The first ``adapter.json`` version written sealed.
SEALED_SINCE = 2
BASE_FORMAT = "passport-kit/base-checkpoint"
ADAPTER_FORMAT = "passport-kit/adapter-bundle"
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
CARD_FILE = "MODEL_CARD.md"
ADAPTER_WEIGHTS_FILE = "adapter.safetensors"
ADAPTER_CONFIG_FILE = "adapter.json"

#: The base checkpoint ``adapt``, ``evaluate``, ``check`` and the demo start from unless told otherwise.
DEFAULT_CHECKPOINT = "passport-small-mlp"

CheckpointSource = Literal["shipped", "user", "path"]

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def check_name(name: str) -> str:
    """Return ``name`` if it is a valid checkpoint name, else raise ConfigError."""
    if not _NAME.match(name):
        raise ConfigError(
            f"invalid checkpoint name {name!r}; use lowercase letters, digits and '-'"
        )
    return name


def checkpoint_roots() -> list[tuple[CheckpointSource, Path]]:
    """Return the folders searched for named checkpoints, shipped ones first.

    Shipped: ``checkpoints/`` of a source checkout and ``passport_kit/data/checkpoints`` of an
    installed wheel. User: ``$PASSPORT_KIT_HOME/checkpoints`` (or the platform data folder).
    """
    from passport_kit.montage import user_home

    package = Path(__file__).resolve().parents[1]  # passport_kit/, above this checkpoint/ folder
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
