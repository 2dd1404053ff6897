"""Pretraining with DataLoader workers: the batch stream, memory maps across processes, same weights."""

from __future__ import annotations

import json
import pickle
import signal
from pathlib import Path

import numpy as np
import pytest
import torch
from pretrain_helpers import tiny_config, two_montage_data
from typer.testing import CliRunner

from passport_kit.pretrain import corpus as pdata
from passport_kit.pretrain import loader as pretrain_loader
from passport_kit.pretrain.run import STATE_FILE, StepEvent, TrainingInterrupted, pretrain
from passport_kit.engine.state import load_training_state


# ------------------------------------------------------------------ the stream
def test_stream_positions_start_after_a_finished_epoch_in_the_next() -> None:
    positions = list(pretrain_loader.StreamPositions((2, 3), 5, batches_per_epoch=3))
    assert positions == [(3, 0), (3, 1), (3, 2), (4, 0), (4, 1)]


def test_rank_batches_are_the_schedules_batches() -> None:
    pools = pdata.build_corpus(two_montage_data(), val_fraction=0.0, seed=3).train
    sizes = [len(p) for p in pools]
    batches = pretrain_loader.RankBatches(pools, 4, world_size=2, rank=1, seed=3)
    for epoch in (0, 1):
        for position, (pool, number) in enumerate(pdata.epoch_schedule(sizes, 4, 2, 3, epoch)):
            batch = batches[epoch, position]
            rows = pdata.batch_rows(sizes[pool], 4, 2, 1, 3, epoch, pool, number)
            assert batch.pool == pool and np.array_equal(batch.rows, rows)
            assert torch.equal(batch.x, torch.from_numpy(pools[pool].gather(rows)))


@pytest.mark.parametrize("workers", [0, 2])
def test_the_stream_gives_the_batches_in_order_from_its_start(workers: int) -> None:
    pools = pdata.build_corpus(two_montage_data(), val_fraction=0.0, seed=0).train
    batches = pretrain_loader.RankBatches(pools, 4, world_size=1, rank=0, seed=0)
    with pretrain_loader.batch_stream(batches, (0, 2), 12, workers=workers) as stream:
        got = [(b.epoch, b.position, b.rows.tolist()) for b in stream]
    expected = [(e, p, batches[e, p].rows.tolist()) for e, p in pretrain_loader.StreamPositions((0, 2), 12, len(batches))]
    assert got == expected and len(got) == 12


def test_a_memory_mapped_pool_pickles_as_its_file(tmp_path: Path) -> None:
    windows = np.random.default_rng(0).normal(size=(6, 3, 2, 200)).astype(np.float32)
    np.save(tmp_path / "x.npy", windows)
    pool = pdata.Pool("m", None)
    pool.add(np.load(tmp_path / "x.npy", mmap_mode="r"), "mapped", np.arange(6))
    blob = pickle.dumps(pool)
    assert len(blob) < windows.nbytes / 4  # the file's name and layout, not its contents
    copy = pickle.loads(blob)
    assert isinstance(copy.arrays[0], np.memmap)
    assert np.array_equal(copy.gather(np.arange(6)), windows)


@pytest.mark.parametrize(("device", "cores", "processes", "expected"),
                         [("cpu", 16, 1, 0), ("cuda", 16, 1, 4), ("cuda", 16, 8, 1), ("cuda", 2, 1, 1), ("cuda", 1, 1, 0)])
def test_default_workers(monkeypatch: pytest.MonkeyPatch, device: str, cores: int, processes: int, expected: int) -> None:
    monkeypatch.setattr(pretrain_loader.os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    assert pretrain_loader.default_workers(device, processes) == expected


# ------------------------------------------------------------------ runs
def _weights(tmp_path: Path, name: str, **overrides: object) -> tuple[dict[str, torch.Tensor], list[list[str]]]:
    weights: dict[str, torch.Tensor] = {}
    windows: list[list[str]] = []
    pretrain(tiny_config(tmp_path / name, **overrides), datasets=two_montage_data(),
             on_step=lambda event: windows.append(event.window_ids),
             on_end=lambda model, rank: weights.update(model.state_dict()))
    return weights, windows


def test_workers_train_the_same_weights_as_none_and_record_their_count(tmp_path: Path) -> None:
    # 7 steps of batch 4 span more than one epoch of the training pools.
    serial, serial_windows = _weights(tmp_path, "serial", steps=7, workers=0)
    parallel, parallel_windows = _weights(tmp_path, "parallel", steps=7, workers=2)
    assert parallel_windows == serial_windows
    for key, value in serial.items():
        assert torch.equal(value, parallel[key]), key
    training = json.loads((tmp_path / "parallel" / "config.json").read_text())["training"]
    assert training["data_workers_per_process"] == 2 and "--workers 2" in training["command"]


@pytest.mark.parametrize("resume_workers", [2, 0])
def test_ctrl_c_with_workers_resumes_to_the_uninterrupted_weights(tmp_path: Path, resume_workers: int) -> None:
    reference, _ = _weights(tmp_path, "ref", steps=5, workers=2)

    def ctrl_c_at_step_3(event: StepEvent) -> None:
        if event.step == 3:
            signal.raise_signal(signal.SIGINT)

    cfg = tiny_config(tmp_path / "run", steps=5, checkpoint_every=100, workers=2)
    with pytest.raises(TrainingInterrupted, match="step 3"):
        pretrain(cfg, datasets=two_montage_data(), on_step=ctrl_c_at_step_3)
    assert load_training_state(tmp_path / "run" / STATE_FILE).step == 3
    resumed: dict[str, torch.Tensor] = {}
    pretrain(cfg.model_copy(update={"resume": True, "workers": resume_workers}), datasets=two_montage_data(),
             on_end=lambda model, rank: resumed.update(model.state_dict()))
    for key, value in reference.items():
        assert torch.equal(value, resumed[key]), key


def test_pretrain_command_reads_cached_windows_in_workers(tmp_path: Path) -> None:
    from passport_kit.cli.app import app
    from passport_kit.signals.simulator.simulate import simulate_dataset

    data = simulate_dataset("tuh-standard", tmp_path / "sim", n_subjects=2, hours=0.05, seed=0)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [
        "pretrain", "--data", f"{data}:tuh-standard", "--embedding", "mlp-experts", "--config", "cbramod-tiny",
        "--steps", "2", "--batch-size", "2", "--amplitude-limit-uv", "none", "--val-fraction", "0",
        "--device", "cpu", "--threads", "1", "--workers", "1", "--no-progress", "--out", str(out),
    ])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "config.json").read_text())["training"]["data_workers_per_process"] == 1
