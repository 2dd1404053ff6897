"""`torchrun --nproc_per_node 2` (gloo, CPU) runs `passport-kit pretrain --init-from` as one run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from pretrain_helpers import imported_cbramod
from safetensors.torch import load_file

from passport_kit.pretrain.upcycle import EMBEDDING_PREFIX


@pytest.mark.slow  # two torchrun processes reading simulated recordings: ~40 s on 2 shared cores
def test_torchrun_two_processes_upcycle_an_imported_cbramod(tmp_path: Path) -> None:
    from passport_kit.signals.simulator.simulate import simulate_dataset

    data = simulate_dataset("tuh-standard", tmp_path / "sim", n_subjects=2, hours=0.05, seed=0)
    source = imported_cbramod(tmp_path, 2)
    out = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PASSPORT_KIT_HOME": str(tmp_path / "home")}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           "-m", "passport_kit.cli.app", "pretrain", "--data", f"{data}:tuh-standard", "--init-from", str(source),
           "--embedding", "xattn-experts", "--train", "experts", "--steps", "3", "--batch-size", "2",
           "--amplitude-limit-uv", "none", "--val-fraction", "0", "--device", "cpu", "--no-progress",
           "--out", str(out)]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("base checkpoint written to") == 1  # rank 0 only

    config = json.loads((out / "config.json").read_text())
    assert config["training"]["world_size"] == 2
    assert config["init_from"]["trained"] == "experts"
    before, after = load_file(str(source / "model.safetensors")), load_file(str(out / "model.safetensors"))
    for name, tensor in before.items():
        assert torch.equal(after[name], tensor), name
    assert EMBEDDING_PREFIX + "keys" in after and EMBEDDING_PREFIX + "experts" in after
