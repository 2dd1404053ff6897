"""Atomic file writes: readers see the old file or the complete new one, never a partial write.

Every writer in passport-kit goes through :func:`atomic_output`: the content is written to a
temporary file in the target's folder, flushed to disk, given the mode an ordinary write would
have, and renamed over the target (``os.replace`` is atomic within one folder on POSIX and
Windows). A crash or Ctrl-C leaves no temporary file and the target as it was.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np


def _read_umask() -> int:
    """Return the process umask (reading it means setting it, so do it once, at import)."""
    umask = os.umask(0)
    os.umask(umask)
    return umask


# Read once: os.umask can only be read by setting it, which would race with threads creating files.
_UMASK = _read_umask()
_DEFAULT_MODE = 0o666 & ~_UMASK


@contextlib.contextmanager
def atomic_output(path: Path | str) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success, move it onto ``path``.

    Use it for libraries that write files themselves (matplotlib, edfio, safetensors). On an
    exception the temporary file is removed and ``path`` keeps its previous content.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Keep the target's suffix: some writers (MNE's export, matplotlib without format=) pick the
    # format from it. The leading dot and random part keep it from reading as the target.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        # mkstemp makes the file private (0600); keep the target's mode, or an ordinary one.
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else _DEFAULT_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_folder_atomically(folder: Path | str, fill: Callable[[Path], None]) -> Path:
    """Return ``folder`` after ``fill(tmp)`` wrote its files into a temporary folder renamed into place.

    Readers see the old folder or the complete new one, never a part: a crash, a full disk or
    Ctrl-C while ``fill`` runs leaves the old folder (or none) and no temporary one. An existing
    ``folder`` is replaced as a whole.
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
    try:
        fill(tmp)
        for path in tmp.iterdir():
            with open(path, "rb") as fh:
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o777 & ~_UMASK)  # mkdtemp makes it private; the result is ordinary data
        if folder.exists():
            # Move the old folder aside first: a directory rename cannot replace a non-empty one.
            old = folder.parent / f".{folder.name}.old-{uuid.uuid4().hex[:8]}"
            os.rename(folder, old)
            os.rename(tmp, folder)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def remove_stale_folders(parent: Path | str, names: Iterable[str]) -> list[Path]:
    """Remove and return the temporary and set-aside folders that :func:`write_folder_atomically` left in ``parent``.

    A process killed while filling ``parent/NAME`` (kill -9 skips every cleanup) leaves a hidden
    ``.NAME.<random>.tmp`` (or ``.NAME.old-<hex>``) folder behind for good (issue 35). Only the
    ``names`` given are looked at, and the caller must hold the writer's lock of ``parent``, so
    no folder still being written is removed.
    """
    import re

    parent = Path(parent)
    wanted = {str(n) for n in names}
    pattern = re.compile(r"^\.(?P<name>.+)\.(?:[A-Za-z0-9_]{8}\.tmp|old-[0-9a-f]{8})$")
    removed = []
    if not parent.is_dir():
        return removed
    for entry in parent.iterdir():
        match = pattern.match(entry.name)
        if match and match["name"] in wanted and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def atomic_write_bytes(path: Path | str, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; return the path."""
    with atomic_output(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def atomic_write_text(path: Path | str, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically; return the path."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def strict_json_value(value: Any) -> Any:
    """Return ``value`` ready for strict JSON: NaN/inf → None, numpy → Python, Path → str."""
    if isinstance(value, dict):
        return {str(k): strict_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json_value(v) for v in value]
    if isinstance(value, np.ndarray):
        return strict_json_value(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value


def write_json(path: Path | str, payload: Any) -> Path:
    """Write ``payload`` as indented strict JSON (NaN → null) atomically; return the path."""
    text = json.dumps(strict_json_value(payload), indent=2, allow_nan=False) + "\n"
    return atomic_write_text(path, text)


def write_table(path: Path | str, rows: Sequence[dict[str, Any]], *, delimiter: str = ",", digits: int = 6) -> Path:
    """Write dict rows as CSV (or TSV with ``delimiter='\\t'``) atomically; return the path.

    The text is :func:`format_table`'s: columns in first-seen order, floats to ``digits``
    significant digits, a missing value empty in CSV and BIDS ``n/a`` in TSV.
    """
    return atomic_write_text(path, format_table(rows, delimiter=delimiter, digits=digits))


def format_table(rows: Sequence[dict[str, Any]], *, delimiter: str = ",", digits: int = 6) -> str:
    """Return dict rows as CSV/TSV text with a header (the one table format of every writer).

    Columns come in first-seen order; floats keep ``digits`` significant digits; a missing
    value (None, NaN, ±inf, or a column the row lacks) is empty in CSV and BIDS ``n/a`` in TSV.
    """
    if digits < 1:
        raise ValueError(f"digits must be at least 1, got {digits}")
    missing = "n/a" if delimiter == "\t" else ""
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, delimiter=delimiter, lineterminator="\n", restval=missing)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _format_cell(v, missing, digits) for k, v in row.items()})
    return buf.getvalue()


def _format_cell(value: Any, missing: str, digits: int) -> Any:
    """Return a cell as text: floats to ``digits`` significant digits, a missing value as ``missing``."""
    if value is None:
        return missing
    if isinstance(value, (float, np.floating)):
        # inf is missing too, as in strict JSON: no reader of these tables parses it the same way.
        return f"{float(value):.{digits}g}" if math.isfinite(value) else missing
    return value
