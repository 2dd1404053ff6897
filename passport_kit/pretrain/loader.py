"""The pretraining batch stream: the batches of one rank, read by DataLoader worker processes.

A batch is named by its data position ``(epoch, position)`` (:mod:`~passport_kit.pretrain.corpus`
fixes which pool and rows that is, from the seed alone). The stream is a ``torch`` DataLoader
over those positions, in order, from the position a run starts or resumes at. With
``workers > 0`` the windows are gathered from the pools' memory-mapped cache arrays in worker
processes while the main process trains; the loader hands batches back in position order, and
masks, faults and dropout are still drawn in the main process from ``(seed, step, rank)``, so a
run computes the same weights with any number of workers (tested bit for bit).

Workers ignore SIGINT and SIGTERM: a Ctrl-C reaches the whole process group, and the main
process finishes its step and saves the state while its workers keep serving. A worker whose
parent dies (SIGKILL) exits by itself (PyTorch's worker watchdog).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from passport_kit.pretrain import corpus as pdata

#: Worker processes per training process that ``workers=None`` gives on a GPU (see :func:`default_workers`).
MAX_AUTO_WORKERS = 4


@dataclass
class Batch:
    """One training batch of one rank: where it sits in the stream and its windows."""

    epoch: int
    position: int  # batch index within the epoch
    pool: int  # index into the corpus's training pools
    rows: np.ndarray  # the pool rows, for window names in audits
    x: torch.Tensor  # (B, C, P, 200) float32, pinned when the loader pins memory

    def pin_memory(self) -> Batch:
        """Return this batch with its windows in page-locked memory (the loader calls it to pin)."""
        self.x = self.x.pin_memory()
        return self


class RankBatches(Dataset):
    """Map-style dataset: item ``(epoch, position)`` is that batch of this rank."""

    def __init__(self, pools: list[pdata.Pool], batch_size: int, world_size: int, rank: int, seed: int) -> None:
        self.pools = pools
        self.sizes = [len(p) for p in pools]
        self.batch_size = batch_size
        self.world_size = world_size
        self.rank = rank
        self.seed = seed
        self._schedule: tuple[int, list[tuple[int, int]]] | None = None  # (epoch, its schedule), per process

    @property
    def batches_per_epoch(self) -> int:
        """Return the number of batches of every epoch (the same for each epoch)."""
        return len(self._epoch_schedule(0))

    def _epoch_schedule(self, epoch: int) -> list[tuple[int, int]]:
        if self._schedule is None or self._schedule[0] != epoch:
            self._schedule = (epoch, pdata.epoch_schedule(self.sizes, self.batch_size, self.world_size, self.seed,
                                                          epoch))
        return self._schedule[1]

    def __len__(self) -> int:  # positions are (epoch, position) pairs; this is one epoch's worth
        return self.batches_per_epoch

    def __getitem__(self, key: tuple[int, int]) -> Batch:
        epoch, position = key
        pool_idx, batch_no = self._epoch_schedule(epoch)[position]
        rows = pdata.batch_rows(self.sizes[pool_idx], self.batch_size, self.world_size, self.rank, self.seed,
                                epoch, pool_idx, batch_no)
        return Batch(epoch, position, pool_idx, rows, torch.from_numpy(self.pools[pool_idx].gather(rows)))


class StreamPositions(Sampler):
    """The data positions ``(epoch, position)`` of ``count`` consecutive steps from ``start``.

    ``start`` may point one past an epoch's last batch (where a saved state leaves it); the
    stream then begins with the next epoch.
    """

    def __init__(self, start: tuple[int, int], count: int, batches_per_epoch: int) -> None:
        self.start = start
        self.count = count
        self.per_epoch = batches_per_epoch

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[tuple[int, int]]:
        epoch, position = self.start
        for _ in range(self.count):
            epoch, position = epoch + position // self.per_epoch, position % self.per_epoch
            yield epoch, position
            position += 1


def default_workers(device_type: str, processes_per_machine: int = 1) -> int:
    """Return the worker count of ``workers=None``: 0 on CPU; on a GPU, up to 4 per process.

    On CPU the same cores gather windows and compute the step, and a worker only adds the cost
    of moving each batch between processes (measured in docs/pretraining.md). On a GPU the CPU
    is otherwise idle: each process gets ``min(4, its share of the cores - 1)`` workers.
    """
    if device_type != "cuda":
        return 0
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(0, min(MAX_AUTO_WORKERS, cores // max(1, processes_per_machine) - 1))


def _quiet_worker(worker_id: int) -> None:  # noqa: ARG001
    """Let the main process alone answer Ctrl-C/SIGTERM (it saves the state, then stops the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _one(items: list[Batch]) -> Batch:
    """Collate: a batch is already one item (the loader's own batching is off)."""
    return items[0]


@contextlib.contextmanager
def batch_stream(
    batches: RankBatches, start: tuple[int, int], count: int, *, workers: int, pin_memory: bool = False
) -> Iterator[Iterator[Batch]]:
    """Yield an iterator over ``count`` batches from data position ``start``, in order.

    ``workers`` worker processes read ahead (two batches each); 0 reads in this process. The
    workers stop when the block is left, also on an exception.
    """
    loader = DataLoader(
        batches, batch_size=1, sampler=StreamPositions(start, count, batches.batches_per_epoch),
        collate_fn=_one, num_workers=workers, pin_memory=pin_memory,
        worker_init_fn=_quiet_worker if workers else None,
    )
    iterator = iter(loader)
    try:
        yield iterator
    finally:
        # Why not wait for garbage collection: a stopped run's traceback keeps the iterator alive,
        # and with it the workers, until the exception is handled.
        shutdown = getattr(iterator, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()
