"""A bundle's seal: a digest of its tensors and of every setting in ``adapter.json``, written by ``adapt`` and checked on
load (issue 57, item 2).

``adapter.json`` is a text file, and a fault campaign edited it after ``adapt`` wrote it: classes
reordered (51 of 60 windows REM at confidence 0.95, while the summary said REM was never
learned), an identity smoothing matrix, W↔N1 transitions swapped, the stager's weights ×1e6, a
temperature of 0.0101, another prior channel, the guard's profile deleted, the selection record
rewritten - each staged with exit 0, the record then describing another model than the one
running. Each number can be range-checked (:mod:`~passport_kit.checkpoint.head_checks`), but
a reordered list or a plausible temperature cannot. So the bundle is sealed when written:

- ``seal.parts`` holds the SHA-256 of ``adapter.safetensors`` (its part has that name) and of each part of
  ``adapter.json`` - every top-level key, and each key of a block (``head.temperature``,
  ``metrics.distribution``, ...) - as canonical JSON (sorted keys, no spaces);
- :func:`check_seal` recomputes them on load and names the parts that differ, were added or were
  deleted; :func:`reseal_bundle` (``passport-kit checkpoints reseal DIR``) seals a deliberate
  edit, after which the bundle is read as any other (its numbers still checked).

A bundle written before the seal has none and loads as before: it says so by its ``format_version``
(1; sealed bundles are written as 2, :data:`~passport_kit.checkpoint.layout.SEALED_SINCE`), so a
sealed bundle whose seal was deleted is refused as edited rather than read as an old one (issue 57).
The seal guards against edits, not against an adversary: anyone who can edit the file can re-seal it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from passport_kit.checkpoint.layout import ADAPTER_FORMAT_VERSION, SEALED_SINCE
from passport_kit.errors import CheckpointError

#: The version of the seal's form; another version is refused as unknown rather than read wrongly.
SEAL_VERSION = 1
#: The key of ``adapter.json`` that holds the seal (not itself sealed).
SEAL_KEY = "seal"
#: The part that stands for ``adapter.safetensors``.
TENSORS_PART = "adapter.safetensors"


def _digest(value: Any) -> str:
    """Return the SHA-256 of ``value`` as canonical JSON (sorted keys, no spaces, non-ASCII kept)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def seal_parts(document: Mapping[str, Any], weights: bytes) -> dict[str, str]:
    """Return the digest of each part of a bundle: ``adapter.safetensors`` (the bytes of ``adapter.safetensors``), each top-level
    key of ``document`` (``adapter.json`` as JSON, its seal left out) and each key of a block that is a mapping."""
    parts = {TENSORS_PART: hashlib.sha256(weights).hexdigest()}
    for key, value in document.items():
        if key == SEAL_KEY:
            continue
        if isinstance(value, Mapping):  # each key its own part (an empty block: none, as when absent)
            parts |= {f"{key}.{sub}": _digest(item) for sub, item in value.items()}
        else:
            parts[key] = _digest(value)
    return parts


def make_seal(document: Mapping[str, Any], weights: bytes) -> dict[str, Any]:
    """Return the seal ``adapter.json`` stores for ``document`` and ``weights`` (:func:`seal_parts`)."""
    return {"version": SEAL_VERSION, "parts": seal_parts(document, weights)}


def changed_parts(document: Mapping[str, Any], weights: bytes) -> list[str] | None:
    """Return the parts of a bundle changed since it was sealed (``"head.temperature"``, ``"metrics.selection
    (deleted)"``), [] when none, None when ``document`` carries no seal and says it was written before the seal
    (``format_version`` under :data:`SEALED_SINCE`); ``["seal (deleted)"]`` when a sealed bundle's seal is gone."""
    seal = document.get(SEAL_KEY)
    if seal is None:
        version = document.get("format_version")
        written_sealed = isinstance(version, int) and not isinstance(version, bool) and version >= SEALED_SINCE
        return [f"{SEAL_KEY} (deleted)"] if written_sealed else None
    if not (isinstance(seal, Mapping) and seal.get("version") == SEAL_VERSION and isinstance(seal.get("parts"), Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in seal["parts"].items())):
        return ["seal"]
    stored, now = dict(seal["parts"]), seal_parts(document, weights)
    changed = [p for p in now if p in stored and stored[p] != now[p]]
    changed += [f"{p} (added)" for p in now if p not in stored]
    changed += [f"{p} (deleted)" for p in stored if p not in now]
    return sorted(changed)


def check_seal(document: Mapping[str, Any], weights: bytes, folder: Path) -> None:
    """Return None when the bundle at ``folder`` is as ``adapt`` sealed it (or predates the seal); else raise a
    CheckpointError naming what changed and how to re-seal a deliberate edit."""
    changed = changed_parts(document, weights)
    if not changed:
        return
    shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    raise CheckpointError(f"adapter '{str(folder)[:200]}' was changed after adapt wrote it ({shown}); restore it or "
                          f"re-run adapt - an edit made on purpose is taken after `passport-kit checkpoints reseal "
                          f"{str(folder)[:200]}`")


def reseal_bundle(folder: str | Path) -> list[str]:
    """Return the parts that had changed after sealing bundle ``folder`` as it is now (``adapter.json`` rewritten
    atomically with a new seal; every other byte of the folder kept)."""
    from passport_kit.atomic_io import atomic_write_text
    from passport_kit.checkpoint.bundle import read_adapter_document
    from passport_kit.checkpoint.layout import ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE

    folder = Path(folder)
    document, _ = read_adapter_document(folder)
    try:
        weights = (folder / ADAPTER_WEIGHTS_FILE).read_bytes()
    except OSError:
        raise CheckpointError(f"adapter '{folder}' has no readable {ADAPTER_WEIGHTS_FILE}; nothing to seal") from None
    changed = changed_parts(document, weights)
    # Sealed, the bundle says so by its version: its seal can then not be deleted unnoticed.
    document = {k: v for k, v in document.items() if k != SEAL_KEY} | {"format_version": ADAPTER_FORMAT_VERSION}
    sealed = document | {SEAL_KEY: make_seal(document, weights)}
    atomic_write_text(folder / ADAPTER_CONFIG_FILE, json.dumps(sealed, indent=2, ensure_ascii=False) + "\n")
    return ["(no seal before)"] if changed is None else changed


__all__ = ["SEAL_KEY", "SEAL_VERSION", "changed_parts", "check_seal", "make_seal", "reseal_bundle", "seal_parts"]
