"""A pretraining process killed with SIGKILL resumes from its last state and ends like an unkilled run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from pretrain_helpers import imported_cbramod, tiny_config, two_montage_data
from safetensors.torch import load_file

from passport_kit.pretrain.run import STATE_FILE, pretrain
from passport_kit.pretrain.log import read_metrics
from passport_kit.engine.state import load_training_state

WORKER = Path(__file__).with_name("pretrain_worker.py")
STEPS = 10
EVERY = 2


def _worker(folder: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, str(WORKER), str(folder), str(STEPS), str(EVERY), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


@pytest.mark.slow  # two fresh processes and a reference run: about 30 s on 2 shared cores
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
@pytest.mark.parametrize(("upcycled", "workers"), [(False, 0), (True, 0), (False, 2)],
                         ids=["from-scratch", "init-from", "from-scratch-2-workers"])
def test_sigkilled_run_resumes_to_the_uninterrupted_result(tmp_path: Path, upcycled: bool, workers: int) -> None:
    extra: tuple[str, ...] = ("--workers", str(workers)) if workers else ()
    if upcycled:  # pretrain --init-from an imported 2-layer CBraMod, --train experts
        (tmp_path / "source").mkdir()
        extra += ("--init-from", str(imported_cbramod(tmp_path / "source", 2)))
    reference: dict[str, torch.Tensor] = {}
    pretrain(tiny_config(tmp_path / "reference", steps=STEPS, checkpoint_every=EVERY, val_fraction=0.0,
                         **({"init_from": extra[-1]} if upcycled else {})),
             datasets=two_montage_data(), on_end=lambda model, rank: reference.update(model.state_dict()))

    proc = _worker(tmp_path, *extra)
    assert proc.stdout is not None
    for line in proc.stdout:  # step 3 starts only after the state of step 2 was written
        if line.startswith("rank 0 step 3"):
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    killed_at = load_training_state(tmp_path / "run" / STATE_FILE).step
    assert EVERY <= killed_at < STEPS and not (tmp_path / "run" / "model.safetensors").exists()

    resumed = _worker(tmp_path, "--resume", *extra)
    output, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, output[-3000:]
    assert load_training_state(tmp_path / "run" / STATE_FILE).step == STEPS
    steps = [int(r["step"]) for r in read_metrics(tmp_path / "run" / "train" / "metrics.csv")]
    assert steps == list(range(1, STEPS + 1))
    weights = load_file(str(tmp_path / "rank0.safetensors"))
    for key, value in reference.items():
        assert torch.equal(value, weights[key]), key
