"""The error family for problems a user can cause.

Every exception a user can trigger with their files, names or options derives from
:class:`PassportError`. The CLI maps the whole family, once, to exit code 2 and a single
line on stderr (``error: <message>``); anything else is a bug and keeps its traceback.

Things a user should know but that do not stop the work (a band-pass lowered for a slow
recording, ...) are issued as :class:`PassportWarning` (:func:`warnings.warn`): a notebook
shows them as usual, and the CLI prints each as one line (``warning: <message>``).

A message says what is wrong *and* how to fix it, on one line, for example::

    montage 'my-ear': channel 'ELA' position has magnitude 85.5 m; positions look like
    millimetres - set `units: mm` in the YAML
"""

from __future__ import annotations

import errno
import os
from typing import Any


class PassportError(Exception):
    """Base class of every error a user can cause (exit code 2 in the CLI)."""

    def __init__(self, message: str) -> None:
        # One line: the CLI prints it as is, so collapse stray newlines here, once.
        super().__init__(" ".join(str(message).split()))


class ConfigError(PassportError):
    """An option, config file or combination of settings is invalid."""


class MontageError(PassportError):
    """A montage file, montage name or registry operation is invalid."""


class DataError(PassportError):
    """A recording, label file or dataset description cannot be used."""


class ChannelMappingError(DataError):
    """Channels of a recording do not fit the montage they are mapped to.

    ``missing`` lists the montage channels not found (empty for other mapping problems), and
    ``detail`` is the message without its advice, so that a caller whose user fixes names
    another way (``predict --rename``) can advise that instead.
    """

    def __init__(self, message: str, *, missing: list[str] | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        self.missing = list(missing or [])
        self.detail = " ".join((detail or message).split())


class LabelError(DataError):
    """Labels are missing, unknown, or do not match the recording."""


class CheckpointError(PassportError):
    """A base checkpoint or adapter bundle is missing, foreign, corrupt or mismatched."""


class TrainingError(PassportError):
    """Training cannot go on with these settings (the loss or the weights became non-finite)."""


class OutputBusyError(PassportError):
    """Another passport-kit process is writing the same output folder."""


class OptionalDependencyError(PassportError, ImportError):
    """A feature needs a Python package that passport-kit does not install (the message says how to).

    Also an ImportError, so code that already guards an optional import keeps working.
    """


#: File-system errors that a path given by the user causes (a read-only place, a file where a
#: folder should be, a missing or full disk), with what to do about each. Other OSErrors
#: (I/O errors, ...) are not the user's to fix and keep their traceback.
_FILE_SYSTEM_HINTS: dict[int, str] = {
    errno.EACCES: "choose a place you can write to (or read from)",
    errno.EPERM: "choose a place you can write to (or read from)",
    errno.EROFS: "it is on a read-only file system; choose a place you can write to",
    errno.ENOTDIR: "part of that path is a file, not a folder; choose another path",
    errno.EISDIR: "it is a folder where a file was expected; give a file",
    errno.EEXIST: "something is already there; remove it or choose another name",
    errno.ENOENT: "a folder on that path does not exist or cannot hold files; check the path",
    errno.ENOSPC: "the disk is full; free some space or choose another disk",
    errno.EDQUOT: "your disk quota is used up; free some space or choose another disk",
    errno.ENAMETOOLONG: "use a shorter path",
    # issue 46: `ulimit -f` gave a traceback where a full disk gave this line
    errno.EFBIG: "the file would pass the largest file allowed here (ulimit -f, or the file system's); raise the limit "
                 "or choose another disk",
}


def file_system_message(exc: OSError) -> str | None:
    """Return one line for a file-system error a user's path caused, or None for any other OSError.

    Example: ``'/proc/x': No such file or directory; a folder on that path does not exist or
    cannot hold files; check the path``.
    """
    hint = _FILE_SYSTEM_HINTS.get(exc.errno or -1)
    if hint is None:
        return None
    where = f"'{exc.filename}': " if exc.filename is not None else ""
    return " ".join(f"{where}{exc.strerror or type(exc).__name__}; {hint}".split())


class PassportWarning(UserWarning):
    """Something a user should know that does not stop the work (the CLI prints ``warning: <message>``)."""


#: The package's folder: frames in it are library internals, which a warning should not point at.
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message: str | Warning, category: type[Warning] = PassportWarning) -> None:
    """Issue warning ``message`` at the user's line: the caller of the outermost passport-kit frame on the stack.

    A fixed ``stacklevel`` points at library internals whenever the call path changes (issue 58:
    warnings named passport-kit's own files, not the notebook line that called it); as pandas'
    ``find_stack_level``, the frames are counted instead. Frames of other libraries between two
    passport-kit frames (pydantic running a validator) are skipped with them.
    """
    import sys
    import warnings

    frame, depth, outermost = sys._getframe(1), 1, 1  # noqa: SLF001 - the frame walk warnings itself does
    while frame is not None:
        if os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
            outermost = depth
        frame, depth = frame.f_back, depth + 1
    # stacklevel 1 is warn's caller (frame depth 1); the user's frame lies one beyond the outermost package frame.
    warnings.warn(message, category if not isinstance(message, Warning) else type(message), stacklevel=outermost + 2)


def validation_problem(exc: Any) -> tuple[str, str]:
    """Return ``(where, message)`` of a pydantic ``ValidationError``'s first error, in a user's words.

    ``where`` is the dotted field path ('' for a rule between fields); ``message`` drops pydantic's
    "Value error, " prefix. Example: ``("batch_size", "Input should be greater than 0")``.
    """
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ()))
    return where, str(err.get("msg", "invalid")).removeprefix("Value error, ")


def invalid(exc: Any, error: type[PassportError], what: str, fix: str = "fix it and retry") -> PassportError:
    """Return the one-line user error for a pydantic ``ValidationError`` (raise it ``from None``).

    ``what`` names the thing validated; the first error's field and message follow, then ``fix``.
    A rule between fields (no field path) gives ``"<what>: <message>"``. Example::

        raise invalid(exc, ConfigError, "invalid adapt option") from None
        # invalid adapt option batch_size: Input should be greater than 0; fix it and retry
    """
    where, message = validation_problem(exc)
    return error(f"{what} {where}: {message}; {fix}" if where else f"{what}: {message}")


def yaml_problem(exc: Any, default: str = "invalid YAML") -> tuple[str, str]:
    """Return ``(where, problem)`` of a ``yaml.YAMLError``: ``" at line L, column C"`` ('' without a mark).

    Example: ``(" at line 3, column 7", "mapping values are not allowed here")``.
    """
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return where, getattr(exc, "problem", None) or default
