"""The montage registry: built-in montages (read-only) plus the user's own, by name.

* Built-ins are the ``*.yaml`` files of the top-level ``montages/`` folder of a checkout, or
  the copy of that folder shipped inside the wheel (``passport_kit/data/montages``).
* User montages live in ``<home>/montages/<name>.yaml``, where ``<home>`` is
  ``$PASSPORT_KIT_HOME`` or the per-user data directory of ``platformdirs``.

Writes take a file lock (concurrent registrations never lose an entry) and are atomic (a crash
never leaves a half-written file); every check runs before anything is written, so a failed
registration leaves the registry as it was. A user montage may never shadow a built-in.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from passport_kit.errors import MontageError, warn
from passport_kit.atomic_io import atomic_write_text
from passport_kit.montage.files import user_writable
from passport_kit.montage.schema import NAME_PATTERN, Montage

HOME_ENV = "PASSPORT_KIT_HOME"
_LOCK_NAME = ".registry.lock"
_LOCK_TIMEOUT_S = 60.0

Source = Literal["builtin", "user"]


@dataclass(frozen=True)
class MontageEntry:
    """One row of :func:`list_montages`: where a montage comes from and its size."""

    name: str
    source: Source
    n_channels: int
    description: str
    path: Path
    content_hash: str


def user_home() -> Path:
    """Return passport-kit's per-user data folder (``$PASSPORT_KIT_HOME`` if set)."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("passport-kit", appauthor=False))


def user_montage_dir() -> Path:
    """Return the folder that holds the user's registered montages (may not exist yet)."""
    return user_home() / "montages"


def builtin_montage_dir() -> Path:
    """Return the folder of the built-in montage YAMLs (checkout or installed wheel)."""
    package = Path(__file__).resolve().parents[1]
    # An installed wheel carries a copy inside the package (in a checkout, passport_kit/data/
    # montages is a symlink to the top-level montages/ that the build follows); a checkout
    # without symlink support still has the top-level folder itself.
    for candidate in (package / "data" / "montages", package.parent / "montages"):
        if candidate.is_dir() and any(candidate.glob("*.yaml")):
            return candidate.resolve()
    raise RuntimeError(f"built-in montages not found next to {package}; the installation is broken")


def _builtin_paths() -> dict[str, Path]:
    return {p.stem: p for p in sorted(builtin_montage_dir().glob("*.yaml"))}


def _user_paths() -> dict[str, Path]:
    folder = user_montage_dir()
    if not folder.is_dir():
        return {}
    return {p.stem: p for p in sorted(folder.glob("*.yaml")) if not p.name.startswith(".")}


@lru_cache(maxsize=64)
def _load_builtin(path: Path, mtime_ns: int) -> Montage:
    # Built-ins are read often (every test, every command); cache by file version.
    return Montage.from_yaml(path)


def _load(path: Path, source: Source) -> Montage:
    if source == "builtin":
        return _load_builtin(path, path.stat().st_mtime_ns)
    return Montage.from_yaml(path)


def known_montage_names() -> list[str]:
    """Return the names of every built-in and user montage, sorted."""
    return sorted({*_builtin_paths(), *_user_paths()})


def _unknown(name: str) -> MontageError:
    known = known_montage_names()
    close = difflib.get_close_matches(name.lower(), known, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return MontageError(
        f"unknown montage '{name}'{hint}; known montages: {', '.join(known)}; register your own "
        "with `passport-kit register-montage FILE.yaml`"
    )


def get_montage(name: str) -> Montage:
    """Return the built-in or user montage called ``name`` (case-insensitive)."""
    key = name.strip().lower()
    builtin = _builtin_paths()
    if key in builtin:
        return _load(builtin[key], "builtin")
    user = _user_paths()
    if key in user:
        montage = _load(user[key], "user")
        if montage.name != key:
            raise MontageError(f"registry file '{user[key]}' holds montage '{montage.name}', not "
                               f"'{key}'; rename the file or re-register the montage")
        return montage
    raise _unknown(name)


def resolve_montage(name_or_path: str | Path | Montage) -> Montage:
    """Return a montage given a registry name, a path to a montage YAML, or a Montage."""
    if isinstance(name_or_path, Montage):
        return name_or_path
    text = str(name_or_path)
    path = Path(text).expanduser()
    if text.lower().endswith((".yaml", ".yml")) or path.is_file() or os.sep in text:
        return warn_if_off_template(Montage.from_yaml(path))
    return get_montage(text)


def warn_if_off_template(montage: Montage) -> Montage:
    """Return ``montage`` after warning (PassportWarning) when its 10-05 channels sit off MNE's template.

    Done where a user's own file enters (a YAML path, registration), not for every load of a
    registered or built-in montage: :func:`~passport_kit.montage.mne_bridge.template_mismatch`.
    """
    from passport_kit.montage.mne_bridge import template_mismatch

    message = template_mismatch(montage)
    if message is not None:
        warn(message)
    return montage


def list_montages(source: Source | None = None) -> list[MontageEntry]:
    """Return every montage (built-ins first, then the user's), optionally of one source only."""
    rows: list[MontageEntry] = []
    for src, paths in (("builtin", _builtin_paths()), ("user", _user_paths())):
        if source not in (None, src):
            continue
        for name, path in paths.items():
            m = _load(path, src)  # type: ignore[arg-type]
            rows.append(MontageEntry(name=name, source=src, n_channels=m.n_channels,  # type: ignore[arg-type]
                                     description=m.description, path=path,
                                     content_hash=m.content_hash))
    return rows


def _lock():  # noqa: ANN202 - filelock's type
    from filelock import FileLock

    folder = user_montage_dir()
    with _registry_writable(folder):
        folder.mkdir(parents=True, exist_ok=True)
    return FileLock(str(folder / _LOCK_NAME), timeout=_LOCK_TIMEOUT_S)


def _registry_writable(target: Path):  # noqa: ANN202 - a context manager
    return user_writable(target, "to the montage registry",
                         f"make it writable or set {HOME_ENV} to a writable folder")


def is_registered(montage: Montage) -> bool:
    """Return True when the user registry already holds exactly ``montage`` (same name, same stored YAML)."""
    target = user_montage_dir() / f"{montage.name}.yaml"
    try:
        return target.read_text(encoding="utf-8") == montage.to_yaml_str(units="m")
    except OSError:
        return False


def register_montage(montage: Montage | str | Path, *, force: bool = False) -> Path:
    """Store ``montage`` (a Montage or a YAML path) in the user registry; return the stored file.

    Refuses a name of a built-in montage, and an existing, different user montage unless
    ``force=True``; registering the very same montage again changes nothing (a no-op, as
    re-running a notebook cell should be).
    """
    if not isinstance(montage, Montage):
        montage = Montage.from_yaml(Path(montage))
    warn_if_off_template(montage)
    name = montage.name
    if not NAME_PATTERN.match(name):  # pragma: no cover - Montage validates it already
        raise MontageError(f"montage name '{name}' is invalid")
    if name in _builtin_paths():
        raise MontageError(f"montage '{name}' is a built-in and cannot be replaced; choose another "
                           f"`name:` for your montage (for example '{name}-custom')")
    text = montage.to_yaml_str(units="m")
    from filelock import Timeout

    try:
        with _lock():
            target = user_montage_dir() / f"{name}.yaml"
            if is_registered(montage):
                return target
            if target.exists() and not force:
                raise MontageError(f"a different montage '{name}' is already registered ({target}); pass "
                                   "--force (force=True) to replace it, or choose another name")
            with _registry_writable(target):
                atomic_write_text(target, text)
    except Timeout:
        raise MontageError(f"the montage registry in {user_montage_dir()} is locked by another "
                           f"process for over {_LOCK_TIMEOUT_S:.0f} s; retry, or remove a stale "
                           f"'{_LOCK_NAME}' if no passport-kit is running") from None
    return target


def remove_montage(name: str) -> Path:
    """Delete the user montage ``name`` from the registry; return the path it had."""
    key = name.strip().lower()
    if key in _builtin_paths():
        raise MontageError(f"montage '{key}' is a built-in and cannot be removed")
    with _lock():
        path = user_montage_dir() / f"{key}.yaml"
        if not path.exists():
            users = sorted(_user_paths())
            listed = ", ".join(users) if users else "none"
            raise MontageError(f"no user montage '{name}' to remove; user montages: {listed}")
        with _registry_writable(path):
            path.unlink()
    return path
