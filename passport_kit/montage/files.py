"""Atomic file writes for the montage registry: a crash never leaves a half-written montage."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from passport_kit.errors import MontageError


def atomic_write_text(path: Path, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically; return the path (see :func:`atomic_write_bytes`)."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temp file in the same folder + ``os.replace``); return path.

    Readers see either the old file or the complete new one, never a partial write, because
    ``os.replace`` within one folder is atomic on POSIX and Windows.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp makes the file private (0600); give it the mode an ordinary write would.
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        # Leave no temp file behind; the target keeps its previous content.
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


@contextmanager
def user_writable(target: Path, what: str, fix: str) -> Iterator[None]:
    """Turn an OSError while writing ``target`` into a one-line MontageError that says ``fix``."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise MontageError(f"cannot write {what} '{target}' ({reason}); {fix}") from None
