"""Content hashes of a dataset's recordings and label files: what an adapter bundle was trained on.

``adapt`` stores them in ``adapter.json`` (``training_data``), and a rerun into a finished bundle
compares them with the data as it is now, so a bundle is reused only for the same data (issue 28).
The digests are the cache's (:func:`~passport_kit.signals.cache.file_sha256`, remembered by file
stamp), so hashing a dataset the cache has seen reads no file again.
"""

from __future__ import annotations

from pathlib import Path

from passport_kit.signals.cache import file_sha256
from passport_kit.signals.dataset_spec import DatasetSpec
from passport_kit.signals.readers import content_files


def dataset_hashes(spec: DatasetSpec) -> dict[str, str]:
    """Return ``{path: SHA-256}`` of every file the recordings and labels of ``spec`` are read from.

    Paths are relative to the dataset folder (POSIX separators) where they lie inside it, so a
    dataset moved as a whole keeps its hashes; files outside it keep their absolute path.
    """
    files: list[Path] = []
    for rec in spec.recordings:
        files += content_files(spec.path_of(rec.file))
        if rec.labels is not None:
            files.append(spec.path_of(rec.labels))
    return {_name(path, spec.root): file_sha256(path) for path in files}


def changed_files(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    """Return the files whose content differs between two :func:`dataset_hashes`: changed, added or removed, sorted."""
    return sorted(name for name in set(recorded) | set(current) if recorded.get(name) != current.get(name))


def _name(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            pass
    return str(Path(path).resolve())


__all__ = ["changed_files", "dataset_hashes"]
