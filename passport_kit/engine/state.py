"""Resumable training state: one atomic safetensors file that a killed run can continue from.

A training state holds everything a run needs to continue exactly where it stopped: model
tensors, optimizer and scheduler state, the step count, every random-number generator, the
position in the data and the run's configuration. Pretraining and adaptation both use it::

    state = TrainingState.capture(model, optimizer, scheduler, step=step,
                                  data={"epoch": 3, "offset": 128}, config=cfg.model_dump())
    save_training_state(out / "state.safetensors", state)
    ...
    state = load_training_state(out / "state.safetensors")
    state.restore(model, optimizer, scheduler)       # strict, and restores the RNGs

File format (version 1): a safetensors file. Every tensor of the nested state is a named
tensor (``model.<key>``, ``optimizer.state.0.exp_avg``, ``rng.torch`` ...); the metadata
holds ``format`` (``passport-kit/training-state``), ``format_version`` and ``state``, a JSON
skeleton of the nested state where each tensor is replaced by ``{"__tensor__": name}``.
Tuples and dicts with integer keys (optimizer state) are tagged so they round-trip exactly.
No pickle is involved, so loading a state file cannot run code.

Atomicity: the file is written to a temporary name in the same folder, flushed to disk, then
renamed over the target (``os.replace``). A run killed mid-write leaves the previous state and
a stray ``.tmp`` file, never a truncated state under the real name. The ``complete`` marker in
the metadata is written last in the header and checked on load, so a foreign or partial file
is refused with a :class:`~passport_kit.errors.CheckpointError`.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from passport_kit.atomic_io import atomic_output
from passport_kit.errors import CheckpointError

FORMAT = "passport-kit/training-state"
FORMAT_VERSION = 1

_TENSOR = "__tensor__"
_TUPLE = "__tuple__"
_INTDICT = "__intdict__"


@dataclass
class TrainingState:
    """Everything needed to continue a run; tensors live on CPU."""

    step: int
    model: dict[str, torch.Tensor]
    optimizer: dict[str, Any] | None = None
    scheduler: dict[str, Any] | None = None
    rng: dict[str, Any] | None = None
    data: dict[str, Any] = field(default_factory=dict)     # data position (JSON-able)
    config: dict[str, Any] = field(default_factory=dict)   # run configuration (JSON-able)
    metrics: dict[str, Any] = field(default_factory=dict)  # e.g. last loss, elapsed seconds

    @classmethod
    def capture(
        cls,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
        *,
        step: int,
        data: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
        metrics: dict[str, Any] | None = None,
    ) -> TrainingState:
        """Return a snapshot of a run (pass the bare model, not its DDP wrapper)."""
        return cls(
            step=int(step),
            model={k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
            optimizer=optimizer.state_dict() if optimizer is not None else None,
            scheduler=scheduler.state_dict() if scheduler is not None else None,
            rng=capture_rng_state(),
            data=dict(data or {}),
            config=dict(config or {}),
            metrics=dict(metrics or {}),
        )

    def restore(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
        *,
        restore_rng: bool = True,
    ) -> None:
        """Load this state into ``model``/``optimizer``/``scheduler`` (strict) and the RNGs."""
        result = model.load_state_dict(self.model, strict=False)
        if result.missing_keys or result.unexpected_keys:
            raise CheckpointError(
                f"training state does not fit this model: {len(result.missing_keys)} missing "
                f"tensors (e.g. {result.missing_keys[:3]}), {len(result.unexpected_keys)} "
                f"unexpected (e.g. {result.unexpected_keys[:3]}); resume with the same --config "
                "and --embedding, or start a new --out folder"
            )
        if optimizer is not None:
            if self.optimizer is None:
                raise CheckpointError("training state has no optimizer state; start without --resume")
            optimizer.load_state_dict(self.optimizer)
        if scheduler is not None:
            if self.scheduler is None:
                raise CheckpointError("training state has no scheduler state; start without --resume")
            scheduler.load_state_dict(self.scheduler)
        if restore_rng and self.rng is not None:
            restore_rng_state(self.rng)


def capture_rng_state() -> dict[str, Any]:
    """Return the states of Python's, NumPy's and torch's (CPU and CUDA) generators."""
    version, internal, gauss = random.getstate()
    np_name, np_keys, np_pos, np_has_gauss, np_gauss = np.random.get_state()
    state: dict[str, Any] = {
        "python": {"version": version, "internal": torch.tensor(internal, dtype=torch.int64),
                   "gauss": gauss},
        "numpy": {"name": np_name, "keys": torch.from_numpy(np_keys.astype(np.int64)),
                  "pos": int(np_pos), "has_gauss": int(np_has_gauss), "gauss": float(np_gauss)},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = list(torch.cuda.get_rng_state_all())
    return state


def restore_rng_state(state: dict[str, Any]) -> None:
    """Restore generators captured by :func:`capture_rng_state`."""
    py = state["python"]
    random.setstate((py["version"], tuple(int(v) for v in py["internal"].tolist()), py["gauss"]))
    npy = state["numpy"]
    np.random.set_state((npy["name"], npy["keys"].numpy().astype(np.uint32), npy["pos"],
                         npy["has_gauss"], npy["gauss"]))
    torch.set_rng_state(state["torch"].to(torch.uint8))
    # A state saved on a GPU machine resumes on CPU too: CUDA states are then ignored.
    if "cuda" in state and torch.cuda.is_available():
        cuda_states = state["cuda"][: torch.cuda.device_count()]
        torch.cuda.set_rng_state_all([s.to(torch.uint8) for s in cuda_states])


def save_training_state(path: str | os.PathLike[str], state: TrainingState) -> Path:
    """Write ``state`` atomically to ``path`` (a ``.safetensors`` file); return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors: dict[str, torch.Tensor] = {}
    skeleton = _encode(
        {"step": state.step, "model": state.model, "optimizer": state.optimizer,
         "scheduler": state.scheduler, "rng": state.rng, "data": state.data,
         "config": state.config, "metrics": state.metrics},
        "",
        tensors,
    )
    metadata = {
        "format": FORMAT,
        "format_version": str(FORMAT_VERSION),
        "state": json.dumps(skeleton),
        "complete": "true",
    }
    # Also on KeyboardInterrupt, atomic_output leaves neither a temp file nor a partial state.
    with atomic_output(path) as tmp:
        save_file(tensors, str(tmp), metadata=metadata)
    _fsync_dir(path.parent)
    return path


def load_training_state(path: str | os.PathLike[str]) -> TrainingState:
    """Return the training state stored at ``path``; refuse missing, partial or foreign files."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no training state at {path}; start the run without --resume")
    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(
            f"training state {path} is unreadable ({exc}); delete it to start over"
        ) from None
    if metadata.get("format") != FORMAT or metadata.get("complete") != "true":
        raise CheckpointError(f"{path} is not a complete passport-kit training state; delete it to start over")
    version = int(metadata.get("format_version", "0"))
    if version > FORMAT_VERSION:
        raise CheckpointError(
            f"training state {path} has format version {version}, newer than this passport-kit "
            f"reads ({FORMAT_VERSION}); upgrade passport-kit"
        )
    try:
        payload = _decode(json.loads(metadata["state"]), tensors)
    except (KeyError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"training state {path} is corrupt ({exc}); delete it to start over") from None
    return TrainingState(**payload)


def _encode(obj: Any, name: str, tensors: dict[str, torch.Tensor]) -> Any:
    """Return a JSON skeleton of ``obj``; move its tensors into ``tensors`` under dotted names."""
    if isinstance(obj, torch.Tensor):
        # clone: safetensors refuses tensors that share memory (tied weights, views).
        tensors[name] = obj.detach().cpu().contiguous().clone()
        return {_TENSOR: name}
    if isinstance(obj, np.ndarray):
        return _encode(torch.from_numpy(np.ascontiguousarray(obj)), name, tensors)
    if isinstance(obj, tuple):
        return {_TUPLE: [_encode(v, f"{name}.{i}", tensors) for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [_encode(v, f"{name}.{i}", tensors) for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        if all(isinstance(k, str) for k in obj):
            return {k: _encode(v, f"{name}.{k}" if name else k, tensors) for k, v in obj.items()}
        if all(isinstance(k, int) for k in obj):
            return {_INTDICT: [[k, _encode(v, f"{name}.{k}", tensors)] for k, v in obj.items()]}
        raise TypeError(f"cannot store dict with mixed key types at '{name}'")
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"cannot store {type(obj).__name__} at '{name}' in a training state")


def _decode(obj: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """Invert :func:`_encode`."""
    if isinstance(obj, dict):
        if set(obj) == {_TENSOR}:
            return tensors[obj[_TENSOR]]
        if set(obj) == {_TUPLE}:
            return tuple(_decode(v, tensors) for v in obj[_TUPLE])
        if set(obj) == {_INTDICT}:
            return {int(k): _decode(v, tensors) for k, v in obj[_INTDICT]}
        return {k: _decode(v, tensors) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_decode(v, tensors) for v in obj]
    return obj


def _fsync_dir(folder: Path) -> None:
    """Flush the rename in ``folder`` to disk where the platform allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
