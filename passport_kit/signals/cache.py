"""On-disk cache of preprocessed windows: memory-mapped, content-addressed, written atomically.

An entry is a folder ``<root>/windows/<key[:2]>/<key>/`` holding

- ``x.npy``      ``(N, C, P, 200)`` float32 windows (opened with ``mmap_mode='r'``),
- ``flags.npy``  ``(N, C)`` uint8 quality flags,
- ``meta.json``  written last: the key, shapes, and what the recording said besides samples
  (its annotations, so labels from EDF+ annotations need no second read of the file).

The key is the SHA-256 of: the SHA-256 of every byte of the recording's files, the
preprocessing config, the montage (content hash, plus names and aliases, which decide the
channel mapping), the channel renames and any sampling rate given by hand. Change any of these
and the entry is a different one; an edited file is never served stale.

Atomicity: an entry is built in a temporary sibling folder and renamed into place only after
``meta.json`` is written and every file flushed, so a killed run leaves at most a ``*.tmp-*``
folder that is never read (:func:`clear_cache` removes it). An entry is
served only if ``meta.json`` parses, names its own key, and the arrays have the shapes it records.

Root: ``$PASSPORT_KIT_HOME/cache`` when that variable is set, else the per-user cache folder
of ``platformdirs``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from passport_kit.atomic_io import atomic_write_text
from passport_kit.errors import DataError

#: Bump when the layout or the meaning of cached arrays changes; old entries are then ignored.
CACHE_FORMAT = 1
_HASH_CHUNK = 8 * 1024 * 1024


def cache_root() -> Path:
    """Return the cache folder (``$PASSPORT_KIT_HOME/cache`` or the platform user cache)."""
    from passport_kit.montage.registry import HOME_ENV

    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser() / "cache"
    import platformdirs

    return Path(platformdirs.user_cache_dir("passport-kit", appauthor=False))


def file_sha256(path: Path) -> str:
    """Return the SHA-256 hex digest of a file's bytes, read in chunks.

    The digest is remembered by (path, size, mtime, inode) under the cache root, so a second
    run over an unchanged file does not read it again.
    """
    path = Path(path).resolve()
    st = path.stat()
    stamp = f"{path}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}"
    memo = cache_root() / "file-hashes" / (hashlib.sha256(stamp.encode()).hexdigest() + ".txt")
    try:
        digest = memo.read_text(encoding="ascii").strip()
        if len(digest) == 64:
            return digest
    except OSError:
        pass
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_HASH_CHUNK):
            h.update(chunk)
    digest = h.hexdigest()
    atomic_write_text(memo, digest)
    return digest


def entry_key(parts: dict[str, Any]) -> str:
    """Return the SHA-256 hex key of a JSON-able description of what produced an entry."""
    payload = json.dumps({"format": CACHE_FORMAT, **parts}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True)
class CacheEntry:
    """Return-value object of :func:`read_entry`: the arrays (read-only memmaps) and metadata."""

    arrays: dict[str, np.ndarray]
    meta: dict[str, Any]


def entry_dir(key: str, *, kind: str = "windows") -> Path:
    """Return the folder of the entry with ``key`` (it may not exist)."""
    return cache_root() / kind / key[:2] / key


def read_entry(key: str, *, kind: str = "windows") -> CacheEntry | None:
    """Return the complete entry for ``key``, memory-mapped, or None when there is none."""
    folder = entry_dir(key, kind=kind)
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("key") != key or meta.get("format") != CACHE_FORMAT:
        return None
    arrays: dict[str, np.ndarray] = {}
    for name, spec in meta.get("arrays", {}).items():
        try:
            arr = np.load(folder / f"{name}.npy", mmap_mode="r")
        except (OSError, ValueError):
            return None
        if list(arr.shape) != spec["shape"] or str(arr.dtype) != spec["dtype"]:
            return None
        arrays[name] = arr
    return CacheEntry(arrays=arrays, meta=meta)


def write_entry(
    key: str, arrays: dict[str, np.ndarray], meta: dict[str, Any], *, kind: str = "windows"
) -> CacheEntry:
    """Write an entry of whole arrays atomically and return it re-opened memory-mapped."""
    return write_entry_chunks(key, {name: ([arr], arr.shape, arr.dtype) for name, arr in arrays.items()}, meta, kind=kind)


def write_entry_chunks(
    key: str,
    arrays: dict[str, tuple[Any, tuple[int, ...], np.dtype]],
    meta: dict[str, Any],
    *,
    kind: str = "windows",
) -> CacheEntry:
    """Write an entry whose arrays arrive as chunks along axis 0; return it memory-mapped.

    ``arrays`` maps a name to ``(chunks, shape, dtype)``: the chunks are concatenated along
    the first axis into an ``.npy`` of ``shape`` without holding them all in memory.
    """
    final = entry_dir(key, kind=kind)
    final.parent.mkdir(parents=True, exist_ok=True)
    # Memory-mapped writes onto a full disk end in SIGBUS, not an error: check the space first.
    needed = sum(int(np.prod(shape)) * np.dtype(dtype).itemsize for _, shape, dtype in arrays.values())
    free = shutil.disk_usage(final.parent).free
    if free < needed + _SPARE_BYTES:
        raise _cache_full(needed, free)
    tmp = final.parent / f"{key}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        specs = {}
        for name, (chunks, shape, dtype) in arrays.items():
            out = np.lib.format.open_memmap(tmp / f"{name}.npy", mode="w+", dtype=dtype, shape=tuple(shape))
            row = 0
            for chunk in chunks:
                out[row : row + len(chunk)] = chunk
                row += len(chunk)
            if row != shape[0]:
                raise RuntimeError(f"cache entry {name}: got {row} rows, expected {shape[0]}")
            out.flush()
            del out
            specs[name] = {"shape": list(shape), "dtype": str(np.dtype(dtype))}
        full_meta = {**meta, "key": key, "format": CACHE_FORMAT, "arrays": specs}
        # meta.json last: it is what makes an entry read as complete.
        with (tmp / "meta.json").open("w", encoding="utf-8") as f:
            json.dump(full_meta, f)
            f.flush()
            os.fsync(f.fileno())
        for name in specs:
            _fsync_path(tmp / f"{name}.npy")
        _clear_stale(final.parent, key)
        try:
            os.rename(tmp, final)
        except OSError:
            # Another process finished the same key first; its entry is equivalent, keep it.
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise _cache_full(needed, shutil.disk_usage(final.parent).free) from None
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    entry = read_entry(key, kind=kind)
    if entry is None:  # pragma: no cover - a broken rename or a concurrent deletion
        raise RuntimeError(f"cache entry {key} could not be read back after writing")
    return entry


#: Space left free on the cache's disk after an entry is written.
_SPARE_BYTES = 64 * 1024 * 1024


def _cache_full(needed: int, free: int) -> DataError:
    """Return the error for a window cache whose disk cannot hold the next entry (it says where the cache is)."""
    from passport_kit.montage.registry import HOME_ENV

    return DataError(f"the window cache at {cache_root()} needs {needed / 2**20:,.0f} MiB more, but its disk has "
                     f"{free / 2**20:,.0f} MiB free; free space (`passport-kit data clear-cache`), or set {HOME_ENV} to a "
                     "folder on a larger disk (the cache is its cache/ subfolder)")


def _clear_stale(parent: Path, key: str) -> None:
    """Remove an invalid folder at the final place of ``key`` (e.g. from an older format)."""
    final = parent / key
    if final.exists() and read_entry_meta_ok(final, key) is False:
        shutil.rmtree(final, ignore_errors=True)


def read_entry_meta_ok(folder: Path, key: str) -> bool:
    """Return True when ``folder/meta.json`` names ``key`` in the current format."""
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("key") == key and meta.get("format") == CACHE_FORMAT


def _fsync_path(path: Path) -> None:
    """Flush a written file to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def clear_cache() -> int:
    """Remove every cache entry; return how many bytes were freed."""
    root = cache_root()
    if not root.exists():
        return 0
    freed = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    shutil.rmtree(root)
    return freed
