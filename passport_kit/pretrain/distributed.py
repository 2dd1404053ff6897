"""Several processes, one run: PyTorch DDP set up from the environment ``torchrun`` provides.

The same command runs alone or under ``torchrun --nproc_per_node=N``: :func:`init_distributed`
reads ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` (and ``MASTER_ADDR``/``MASTER_PORT``) and joins the
process group with gloo on CPU or NCCL on GPU. Without those variables it is a no-op and the
run is a world of one. Only rank 0 writes files (:attr:`DistContext.is_main`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from passport_kit.errors import ConfigError


@dataclass(frozen=True)
class DistContext:
    """Where this process sits in the run: rank, world size, local rank on its machine."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str | None = None

    @property
    def is_main(self) -> bool:
        """Return whether this process writes files and prints progress (rank 0)."""
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        """Return whether a process group of more than one process is running."""
        return self.world_size > 1


def env_context() -> DistContext:
    """Return the rank layout that ``torchrun`` put into the environment (world of one if none)."""
    try:
        world = int(os.environ.get("WORLD_SIZE", "1"))
        rank = int(os.environ.get("RANK", "0"))
        local_rank = int(os.environ.get("LOCAL_RANK", str(rank)))
    except ValueError as exc:
        raise ConfigError(f"RANK/WORLD_SIZE/LOCAL_RANK must be integers ({exc}); launch with torchrun") from None
    if world < 1 or not 0 <= rank < world:
        raise ConfigError(f"RANK={rank} does not fit WORLD_SIZE={world}; launch with torchrun")
    return DistContext(rank=rank, world_size=world, local_rank=local_rank)


def init_distributed(device_type: str) -> DistContext:
    """Join the process group described by the environment; return this process's context.

    ``device_type`` is ``'cpu'`` (gloo) or ``'cuda'`` (NCCL). Safe to call when the group
    already exists (it is then reused).
    """
    ctx = env_context()
    if not ctx.enabled:
        return ctx
    backend = "nccl" if device_type == "cuda" else "gloo"
    if not dist.is_initialized():
        if device_type == "cuda":
            torch.cuda.set_device(ctx.local_rank % torch.cuda.device_count())
        dist.init_process_group(backend=backend, rank=ctx.rank, world_size=ctx.world_size)
    return DistContext(ctx.rank, ctx.world_size, ctx.local_rank, dist.get_backend())


def shutdown_distributed(ctx: DistContext) -> None:
    """Leave the process group if this run joined one."""
    if ctx.enabled and dist.is_initialized():
        dist.destroy_process_group()


def any_rank(flag: bool, ctx: DistContext, device: torch.device) -> bool:
    """Return whether ``flag`` is true on at least one rank (every rank gets the same answer).

    Used for stop requests (Ctrl-C), so that all ranks leave the loop at the same step instead
    of one rank waiting forever in the next gradient all-reduce.
    """
    if not ctx.enabled:
        return flag
    value = torch.tensor([1.0 if flag else 0.0], device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item() > 0)


def sum_over_ranks(values: torch.Tensor, ctx: DistContext) -> torch.Tensor:
    """Return ``values`` summed over all ranks (unchanged when running alone)."""
    if ctx.enabled:
        values = values.clone()
        dist.all_reduce(values, op=dist.ReduceOp.SUM)
    return values


def barrier(ctx: DistContext) -> None:
    """Wait until every rank gets here (no-op alone)."""
    if ctx.enabled:
        dist.barrier()
