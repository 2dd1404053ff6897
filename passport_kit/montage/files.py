"""Write errors of the montage registry, turned into one-line MontageErrors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from passport_kit.errors import MontageError


@contextmanager
def user_writable(target: Path, what: str, fix: str) -> Iterator[None]:
    """Turn an OSError while writing ``target`` into a one-line MontageError that says ``fix``."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise MontageError(f"cannot write {what} '{target}' ({reason}); {fix}") from None
