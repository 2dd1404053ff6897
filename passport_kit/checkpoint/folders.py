"""Writing and reading a checkpoint folder: atomically in, strictly out.

A folder is filled in a hidden temp folder and renamed into place, so a crash never leaves a
folder that reads as valid; its JSON document is read back only after the format and version
checks and a strict validation, each failure one line saying how to repair it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from passport_kit.atomic_io import write_folder_atomically
from passport_kit.checkpoint.layout import ADAPTER_FORMAT, ADAPTER_FORMAT_VERSION, FORMAT_VERSION
from passport_kit.errors import CheckpointError, validation_problem


def write_folder(folder: Path, fill: Callable[[Path], None], *, overwrite: bool) -> Path:
    """Return ``folder`` after ``fill`` wrote its files into a temp folder renamed into place."""
    folder = Path(folder)
    if folder.exists() and not overwrite:
        raise CheckpointError(
            f"'{folder}' already exists; choose another output folder or allow overwriting"
        )
    return write_folder_atomically(folder, fill)


def now() -> str:
    """Return the current UTC time as an ISO string to the second (a document's ``created``)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def dump_json(model: BaseModel) -> str:
    """Return a document's JSON text as it is written: indented by two, UTF-8 kept, one final newline."""
    return json.dumps(model.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def read_document(path: Path, *, fmt: str, what: str, fix: str, extra: Mapping[str, Any]) -> dict[str, Any]:
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
    newest = ADAPTER_FORMAT_VERSION if fmt == ADAPTER_FORMAT else FORMAT_VERSION
    if isinstance(version, int) and version > newest:
        raise CheckpointError(
            f"'{path.parent}' uses format version {version}, newer than this passport-kit"
            f" ({newest}); upgrade passport-kit"
        )
    return {**raw, **extra}


def validated(model: type[BaseModel], data: Mapping[str, Any], path: Path, fix: str) -> Any:
    """Return ``model`` validated from ``data``; CheckpointError naming the first problem."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        where, message = validation_problem(exc)
        raise CheckpointError(f"'{path}' is invalid: {where}: {message}; {fix}") from None
