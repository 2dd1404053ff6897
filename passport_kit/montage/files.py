"""Atomic file writes for the montage registry: a crash never leaves a half-written montage."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (temp file in the same folder + ``os.replace``); return path.

    Readers see either the old file or the complete new one, never a partial write, because
    ``os.replace`` within one folder is atomic on POSIX and Windows.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        # Leave no temp file behind; the target keeps its previous content.
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
