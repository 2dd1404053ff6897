"""One writer per output folder: an exclusive lock beside ``--out`` that names its holder.

``adapt``, ``evaluate``, ``predict``, ``simulate`` and ``pretrain`` hold :func:`output_lock` on
their output folder for the whole run, so two runs into one folder cannot both say "written"
while one result is lost (issue 28). The lock is a file *beside* the folder
(``.<name>.lock``), not inside it: folders written as a whole are renamed into place, which
would carry a lock inside them away. The operating system drops the lock when its process ends,
``kill -9`` included, so a stale lock never blocks a later run. The empty, hidden lock file
stays after the run: removing it would let a third run lock a new file while a second one
holds the old.

Example::

    with output_lock("runs/ear", "adapt"):
        ...  # write into runs/ear
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from passport_kit.atomic_io import atomic_write_text
from passport_kit.errors import OutputBusyError


def lock_path(folder: Path | str) -> Path:
    """Return the lock file of an output folder: ``.<name>.lock`` beside it."""
    folder = Path(folder).expanduser().resolve()
    return folder.parent / f".{folder.name}.lock"


def _holder_path(lock: Path) -> Path:
    return lock.with_name(lock.name + ".holder")


def _holder(lock: Path) -> str:
    """Return who holds ``lock`` (command, pid, host, start), as its holder wrote it, or 'another process'."""
    try:
        info = json.loads(_holder_path(lock).read_text(encoding="utf-8"))
        return (f"`{info['command']}` (pid {info['pid']} on {info['host']}, since "
                f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(info['since']))})")
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


@contextlib.contextmanager
def output_lock(folder: Path | str, command: str, *, option: str = "--out") -> Iterator[Path]:
    """Hold the exclusive write lock of ``folder`` while the block runs; yield the folder.

    Raises :class:`~passport_kit.errors.OutputBusyError` at once (no waiting) when another
    process, or another run in this one, holds it; the message names the holder. ``command``
    names this run to the next one that finds the folder locked; ``option`` names the folder in
    messages.
    """
    folder = Path(folder)
    lock = lock_path(folder)
    lock.parent.mkdir(parents=True, exist_ok=True)
    for _attempt in range(5):
        file_lock = FileLock(lock, is_singleton=False, thread_local=False)
        try:
            file_lock.acquire(timeout=0)
        except Timeout:
            _check_lock_creatable(lock, folder, option)  # no holder at all: the lock file cannot be made (issue 57)
            raise OutputBusyError(f"{option} '{folder}' is being written by {_holder(lock)}; wait for it to finish or "
                                  f"choose another {option}") from None
        # The holder removes the lock file on release (issue 35: ~130 were left behind). A process
        # that opened the file just before it was removed holds a lock on a file no longer there:
        # it tries again on the path's current file.
        if _still_the_lock_file(file_lock, lock):
            break
        file_lock.release()
    else:  # pragma: no cover - five removals in a row between open and lock
        raise OutputBusyError(f"{option} '{folder}' is being locked and released by other runs; try again")
    try:
        atomic_write_text(_holder_path(lock), json.dumps(
            {"command": command, "pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}))
        yield folder
    finally:
        _holder_path(lock).unlink(missing_ok=True)
        lock.unlink(missing_ok=True)  # still held: removed before any other run can lock it
        file_lock.release()


def _check_lock_creatable(lock: Path, folder: Path, option: str) -> None:
    """Return None when the lock file ``lock`` exists or can be created; else a ConfigError saying why not (an
    ``--out`` that is a link to ``/proc/self`` was reported as written by another process, issue 57)."""
    from passport_kit.errors import ConfigError

    if lock.exists():
        return
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ConfigError(f"{option} '{folder}' cannot be locked for writing: its lock file cannot be made in "
                          f"'{lock.parent}' ({exc.strerror or exc}); choose another {option}, in a folder you can "
                          "write") from None
    os.close(fd)
    lock.unlink(missing_ok=True)


def _still_the_lock_file(file_lock: FileLock, lock: Path) -> bool:
    """Return whether the file ``file_lock`` holds is still the one at ``lock`` (not removed by its last holder)."""
    fd = getattr(getattr(file_lock, "_context", None), "lock_file_fd", None)
    if fd is None:  # another filelock implementation: nothing to compare
        return True
    try:
        return os.fstat(fd).st_ino == os.stat(lock).st_ino
    except FileNotFoundError:
        return False


__all__ = ["lock_path", "output_lock"]
