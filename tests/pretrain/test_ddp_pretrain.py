"""DDP: two CPU processes under torchrun (gloo) train one model on disjoint shards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

WORKER = Path(__file__).with_name("pretrain_worker.py")
STEPS = 3


def _torchrun(folder: Path, *extra: str) -> Path:
    """Run the worker under ``torchrun --nproc_per_node=2``; return its folder."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PASSPORT_KIT_HOME": str(folder / "home")}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           str(WORKER), str(folder), str(STEPS), "2", *extra]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return folder


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return the folder of a 2-process torchrun run (no DataLoader workers)."""
    return _torchrun(tmp_path_factory.mktemp("ddp"))


def test_ranks_end_with_identical_weights(ddp_run: Path) -> None:
    rank0, rank1 = (load_file(str(ddp_run / f"rank{r}.safetensors")) for r in (0, 1))
    assert rank0.keys() == rank1.keys()
    for key in rank0:
        assert torch.equal(rank0[key], rank1[key]), key


def test_ranks_train_on_disjoint_windows_of_the_same_montage(ddp_run: Path) -> None:
    logs = [json.loads((ddp_run / f"rank{r}.json").read_text())["steps"] for r in (0, 1)]
    assert [len(steps) for steps in logs] == [STEPS, STEPS]
    for step0, step1 in zip(*logs):
        assert step0["montage"] == step1["montage"]
    windows = [{w for step in steps for w in step["windows"]} for steps in logs]
    assert windows[0] and windows[1] and not windows[0] & windows[1]


def test_only_rank_zero_writes_the_checkpoint(ddp_run: Path) -> None:
    config = json.loads((ddp_run / "run" / "config.json").read_text())
    assert config["training"]["world_size"] == 2
    assert sorted(p.name for p in (ddp_run / "run").iterdir()) == ["MODEL_CARD.md", "config.json", "model.safetensors", "train"]


@pytest.mark.slow  # a second torchrun run, each rank with 2 DataLoader worker processes: ~30 s on 2 cores
def test_dataloader_workers_under_torchrun_train_the_same_weights(ddp_run: Path, tmp_path: Path) -> None:
    with_workers = _torchrun(tmp_path, "--workers", "2")
    for rank in (0, 1):
        plain, parallel = (load_file(str(folder / f"rank{rank}.safetensors")) for folder in (ddp_run, with_workers))
        for key in plain:
            assert torch.equal(plain[key], parallel[key]), key
    assert json.loads((with_workers / "run" / "config.json").read_text())["training"]["data_workers_per_process"] == 2
