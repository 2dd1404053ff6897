"""Pretraining data: unlabeled windows from several datasets, grouped by montage, sharded by rank.

Every dataset is read through the data layer (:func:`passport_kit.signals.load_dataset`), so
any format it reads can be pretrained on; labels are ignored. Windows with a quality flag
(NaN, flat, clipped, over the amplitude limit) are dropped, as CBraMod dropped segments over
100 µV. Per dataset, a fraction of *subjects* is held out for validation.

Batches never mix montages (their channel counts differ): the windows of each montage form a
*pool*, and an epoch is a shuffled interleaving of every pool's batches, so each montage is
seen in proportion to its size. The order is a pure function of ``(seed, epoch)``, which makes
the data position of a run two integers (epoch, batch index within the epoch): a resumed run
continues with exactly the batches it would have seen. Under DDP every rank draws the same
sequence of pools and batch numbers (so gradients of the same channel set are averaged) but
its own disjoint shard of each pool's windows.
"""

from __future__ import annotations

import math
import mmap
from dataclasses import dataclass, field

import numpy as np

from passport_kit.errors import DataError

#: Mixed into seeds so that the validation masks never coincide with training masks.
_VAL_SEED_OFFSET = 1_000_003


@dataclass
class SourceSummary:
    """What one dataset contributed to a pretraining run (for the model card)."""

    path: str
    montage: str
    n_subjects: int
    n_recordings: int
    n_windows: int
    n_dropped: int
    train_windows: int
    val_windows: int
    val_subjects: list[str]
    window_seconds: float

    @property
    def train_hours(self) -> float:
        """Return the hours of training windows."""
        return self.train_windows * self.window_seconds / 3600.0


@dataclass(frozen=True)
class _MappedFile:
    """Where a memory-mapped array lives, to open it again in another process."""

    filename: str
    dtype: str
    shape: tuple[int, ...]
    offset: int
    order: str

    @classmethod
    def of(cls, array: np.ndarray) -> _MappedFile | None:
        """Return the file of an array that maps a whole file region; None for other arrays (views, RAM)."""
        if not isinstance(array, np.memmap) or not isinstance(array.base, mmap.mmap) or array.filename is None:
            return None
        order = "F" if array.flags.f_contiguous and not array.flags.c_contiguous else "C"
        return cls(str(array.filename), array.dtype.str, tuple(array.shape), int(array.offset), order)

    def open(self) -> np.ndarray:
        """Return the array mapped read-only."""
        return np.memmap(self.filename, dtype=np.dtype(self.dtype), mode="r", offset=self.offset,
                         shape=self.shape, order=self.order)


@dataclass
class Pool:
    """Windows of one montage: per-dataset arrays and ``(dataset, window)`` index pairs."""

    montage_name: str
    montage: object  # passport_kit.montage.Montage (kept loose to avoid a hard import cycle)
    arrays: list[np.ndarray] = field(default_factory=list)  # each (N_s, C, P, 200), may be memmaps
    labels: list[str] = field(default_factory=list)         # dataset label per array
    index: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))

    def __len__(self) -> int:
        return int(self.index.shape[0])

    def __getstate__(self) -> dict:
        """Return the pool for pickling, memory-mapped arrays as their file (not their contents).

        A DataLoader worker started with 'spawn' or 'forkserver' receives the pool pickled; an
        ``np.memmap`` would pickle as a copy of the whole cache file.
        """
        state = dict(self.__dict__)
        state["arrays"] = [_MappedFile.of(a) or a for a in self.arrays]
        return state

    def __setstate__(self, state: dict) -> None:
        state["arrays"] = [a.open() if isinstance(a, _MappedFile) else a for a in state["arrays"]]
        self.__dict__.update(state)

    def add(self, array: np.ndarray, label: str, windows: np.ndarray) -> None:
        """Add the rows ``windows`` of ``array`` ``(N, C, P, 200)`` to this pool."""
        k = len(self.arrays)
        self.arrays.append(array)
        self.labels.append(label)
        pairs = np.stack([np.full(len(windows), k, dtype=np.int64), windows.astype(np.int64)], axis=1)
        self.index = np.concatenate([self.index, pairs], axis=0)

    def gather(self, rows: np.ndarray) -> np.ndarray:
        """Return the windows at pool rows ``rows`` stacked as ``(B, C, P, 200)`` float32."""
        out = []
        for source, window in self.index[rows]:
            out.append(np.asarray(self.arrays[source][window], dtype=np.float32))
        return np.stack(out, axis=0)

    def window_ids(self, rows: np.ndarray) -> list[str]:
        """Return stable names (``dataset#window``) of pool rows, for audits and tests."""
        return [f"{self.labels[s]}#{w}" for s, w in self.index[rows]]


@dataclass
class PretrainCorpus:
    """Training and validation pools plus a per-dataset summary."""

    train: list[Pool]
    val: list[Pool]
    sources: list[SourceSummary]


def split_subjects(subjects: np.ndarray, fraction: float, seed: int) -> set[str]:
    """Return the subjects held out for validation: ``round(fraction × n)``, at least one.

    No subject is held out when there is only one, or when ``fraction`` is 0.
    """
    unique = sorted({str(s) for s in subjects})
    if fraction <= 0 or len(unique) < 2:
        return set()
    n_val = min(len(unique) - 1, max(1, round(fraction * len(unique))))
    rng = np.random.default_rng(seed)
    return {unique[i] for i in rng.permutation(len(unique))[:n_val]}


def held_out_subjects(subjects: np.ndarray, named: set[str], fraction: float, seed: int) -> set[str]:
    """Return a dataset's held-out subjects: those of ``named`` it has, else a random ``fraction``.

    Naming subjects (``--val-subjects``) fixes who is held out, e.g. the same people across
    runs that differ in their data; a dataset that has none of the named subjects falls back to
    :func:`split_subjects`. Holding out every subject of a dataset is refused (nothing to train on).
    """
    present = {str(s) for s in subjects}
    chosen = named & present
    if not chosen:
        return split_subjects(subjects, fraction, seed)
    if chosen == present:
        raise DataError(
            f"--val-subjects holds out every subject of a dataset ({', '.join(sorted(chosen)[:5])}); "
            "leave at least one subject of it to train on"
        )
    return chosen


def build_corpus(
    window_sets: list[tuple[str, object]],
    *,
    val_fraction: float,
    seed: int,
    val_subjects: list[str] | None = None,
) -> PretrainCorpus:
    """Return pools from ``(dataset label, WindowSet)`` pairs; drops flagged windows.

    Training datasets of the same montage (same content hash) share a pool; validation keeps
    one pool per dataset, so the model card can report each dataset's held-out loss. Held out
    per dataset: the ``val_subjects`` it has, else a ``val_fraction`` of its subjects.
    """
    named = set(val_subjects or [])
    train: dict[str, Pool] = {}
    val: dict[str, Pool] = {}
    summaries: list[SourceSummary] = []
    for label, ws in window_sets:
        x = ws.x
        n = int(x.shape[0])
        good = ~(np.asarray(ws.flags) != 0).any(axis=1) if n else np.zeros(0, dtype=bool)
        subjects = np.asarray(ws.subject).astype(str)
        held = held_out_subjects(subjects[good], named, val_fraction, seed)
        is_val = np.isin(subjects, sorted(held)) if held else np.zeros(n, dtype=bool)
        key = f"{ws.montage.content_hash}:{x.shape[2] if n else 0}"
        for target, chosen, pool_key in ((train, good & ~is_val, key), (val, good & is_val, label)):
            rows = np.flatnonzero(chosen)
            if rows.size:
                pool = target.setdefault(pool_key, Pool(ws.montage.name, ws.montage))
                pool.add(x, label, rows)
        window_seconds = float(getattr(ws.config, "window_seconds", x.shape[2] if n else 0))
        summaries.append(
            SourceSummary(
                path=label,
                montage=ws.montage.name,
                n_subjects=len(set(subjects.tolist())),
                n_recordings=len(set(np.asarray(ws.recording).astype(str).tolist())),
                n_windows=n,
                n_dropped=int(n - good.sum()),
                train_windows=int((good & ~is_val).sum()),
                val_windows=int((good & is_val).sum()),
                val_subjects=sorted(held),
                window_seconds=window_seconds,
            )
        )
    if not train:
        raise DataError(
            "no usable training windows: every window is flagged (NaN, flat, clipped or over the "
            "amplitude limit) or held out; check the data or raise --amplitude-limit-uv"
        )
    return PretrainCorpus(list(train.values()), list(val.values()), summaries)


def _rng(seed: int, *keys: int) -> np.random.Generator:
    """Return a generator that depends on ``seed`` and ``keys`` only."""
    return np.random.default_rng([seed % 2**32, *keys])


def _shard(pool_size: int, world_size: int, rank: int, seed: int, epoch: int, pool: int) -> np.ndarray:
    """Return this rank's rows of a pool for one epoch (disjoint across ranks, equal lengths)."""
    perm = _rng(seed, epoch, pool).permutation(pool_size)
    per_rank = pool_size // world_size
    return perm[rank::world_size][:per_rank]


def epoch_schedule(
    pool_sizes: list[int], batch_size: int, world_size: int, seed: int, epoch: int
) -> list[tuple[int, int]]:
    """Return the epoch's ``(pool, batch number)`` sequence, the same on every rank."""
    schedule: list[tuple[int, int]] = []
    for pool, size in enumerate(pool_sizes):
        per_rank = size // world_size
        schedule += [(pool, b) for b in range(math.ceil(per_rank / batch_size))]
    if not schedule:
        raise DataError(
            f"too few training windows ({sum(pool_sizes)}) for {world_size} processes; "
            "add data or run fewer processes"
        )
    order = _rng(seed, epoch, 2**31 - 1).permutation(len(schedule))
    return [schedule[i] for i in order]


def batch_rows(
    pool_size: int,
    batch_size: int,
    world_size: int,
    rank: int,
    seed: int,
    epoch: int,
    pool: int,
    batch: int,
) -> np.ndarray:
    """Return the pool rows of one batch of one rank (the last batch of a pool may be short)."""
    shard = _shard(pool_size, world_size, rank, seed, epoch, pool)
    return shard[batch * batch_size : (batch + 1) * batch_size]


def validation_rows(pool: Pool, max_windows: int | None) -> np.ndarray:
    """Return the validation rows of a pool: all, or ``max_windows`` evenly spaced ones."""
    rows = np.arange(len(pool))
    if max_windows is not None and len(pool) > max_windows:
        rows = np.unique(np.linspace(0, len(pool) - 1, max_windows).round().astype(np.int64))
    return rows


def validation_batches(pool: Pool, batch_size: int, max_windows: int | None = None) -> list[np.ndarray]:
    """Return the validation rows of a pool in fixed order, in batches."""
    rows = validation_rows(pool, max_windows)
    return [rows[i : i + batch_size] for i in range(0, len(rows), batch_size)]


def validation_seed(seed: int) -> int:
    """Return the seed of the fixed validation masks of a run."""
    return seed + _VAL_SEED_OFFSET
