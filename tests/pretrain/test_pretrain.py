"""Pretraining: objective, data order and sharding, checkpoint and card, resume, all embedding kinds."""

from __future__ import annotations

import signal
from pathlib import Path

import numpy as np
import pytest
import torch
from pretrain_helpers import tiny_config, two_montage_data

from passport_kit.checkpoint import load_base_checkpoint
from passport_kit.errors import ConfigError, DataError
from passport_kit.model import EMBEDDING_KINDS
from passport_kit.pretrain import corpus as pdata
from passport_kit.pretrain.objective import masked_mse, random_mask
from passport_kit.pretrain.run import STATE_FILE, DataSource, StepEvent, TrainingInterrupted, parse_sources, pretrain
from passport_kit.pretrain.log import read_metrics
from passport_kit.engine.state import load_training_state


# ------------------------------------------------------------------ objective and masking
def test_masked_mse_ignores_unmasked_patches() -> None:
    target = torch.randn(2, 3, 4, 200)
    mask = torch.zeros(2, 3, 4, dtype=torch.bool)
    mask[0, 1, 2] = True
    prediction = target + 5.0
    prediction[mask] = target[mask] + 1.0
    assert masked_mse(prediction, target, mask).item() == pytest.approx(1.0)


def test_masked_mse_without_masked_patches_is_zero_with_gradient() -> None:
    prediction = torch.randn(1, 2, 3, 200, requires_grad=True)
    loss = masked_mse(prediction, torch.zeros(1, 2, 3, 200), torch.zeros(1, 2, 3, dtype=torch.bool))
    loss.backward()
    assert loss.item() == 0.0 and prediction.grad is not None


def test_random_mask_masks_about_half_of_the_patches() -> None:
    mask = random_mask((64, 19, 30), 0.5, torch.Generator().manual_seed(0))
    assert mask.dtype == torch.bool and abs(mask.float().mean().item() - 0.5) < 0.01


# ------------------------------------------------------------------ data order and shards
@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_rank_shards_are_disjoint_and_equal(world_size: int) -> None:
    shards = [
        np.concatenate([pdata.batch_rows(50, 4, world_size, r, 0, 0, 0, b) for b in range(13)])
        for r in range(world_size)
    ]
    seen = np.concatenate(shards)
    assert len(set(seen.tolist())) == len(seen) == (50 // world_size) * world_size
    assert len({len(s) for s in shards}) == 1


def test_epoch_schedule_covers_every_pool_batch_once() -> None:
    schedule = pdata.epoch_schedule([10, 6], batch_size=4, world_size=1, seed=3, epoch=0)
    assert sorted(schedule) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]


@pytest.mark.parametrize("epoch", [0, 1])
def test_epoch_schedule_is_a_function_of_seed_and_epoch(epoch: int) -> None:
    a = pdata.epoch_schedule([40, 40], 4, 1, seed=5, epoch=epoch)
    assert a == pdata.epoch_schedule([40, 40], 4, 1, seed=5, epoch=epoch)
    assert a != pdata.epoch_schedule([40, 40], 4, 1, seed=5, epoch=epoch + 1)


@pytest.mark.parametrize(("n_subjects", "fraction", "expected"), [(10, 0.1, 1), (10, 0.25, 2), (1, 0.5, 0), (5, 0.0, 0)])
def test_split_subjects_holds_out_a_fraction(n_subjects: int, fraction: float, expected: int) -> None:
    subjects = np.array([f"s{i}" for i in range(n_subjects)])
    assert len(pdata.split_subjects(subjects, fraction, seed=0)) == expected


def test_flagged_windows_are_dropped() -> None:
    data = two_montage_data()
    data[0][1].flags[:5, 0] = 8  # over the amplitude limit
    corpus = pdata.build_corpus(data, val_fraction=0.0, seed=0)
    assert corpus.sources[0].n_dropped == 5 and corpus.sources[0].train_windows == 19


def test_held_out_subjects_never_reach_training() -> None:
    corpus = pdata.build_corpus(two_montage_data(), val_fraction=0.25, seed=0)
    train_ids = {w for pool in corpus.train for w in pool.window_ids(np.arange(len(pool)))}
    val_ids = {w for pool in corpus.val for w in pool.window_ids(np.arange(len(pool)))}
    assert val_ids and not train_ids & val_ids


@pytest.mark.parametrize(
    ("named", "expected"),
    [({"sub01", "sub03"}, {"sub01", "sub03"}),          # the named subjects the dataset has
     ({"sub01", "other-dataset-subject"}, {"sub01"}),   # names of other datasets are ignored
     ({"nobody"}, None)],                               # none of them: the random fraction
)
def test_named_held_out_subjects_replace_the_random_fraction(named: set[str], expected: set[str] | None) -> None:
    subjects = np.array([f"sub{i:02d}" for i in range(6)])
    held = pdata.held_out_subjects(subjects, named, 0.5, seed=0)
    assert held == (expected if expected is not None else pdata.split_subjects(subjects, 0.5, seed=0))


def test_naming_every_subject_of_a_dataset_is_refused() -> None:
    with pytest.raises(DataError, match="leave at least one subject"):
        pdata.held_out_subjects(np.array(["a", "b"]), {"a", "b"}, 0.1, seed=0)


def test_val_subjects_reach_validation_per_dataset() -> None:
    corpus = pdata.build_corpus(two_montage_data(), val_fraction=0.25, seed=0, val_subjects=["sub02", "sub05"])
    assert corpus.sources[0].val_subjects == ["sub02", "sub05"]  # sim-standard: 6 subjects
    assert corpus.sources[1].val_subjects == ["sub02"]           # sim-frontal: 4 subjects, sub05 absent
    val_ids = {w for pool in corpus.val for w in pool.window_ids(np.arange(len(pool)))}
    train_ids = {w for pool in corpus.train for w in pool.window_ids(np.arange(len(pool)))}
    assert val_ids and not train_ids & val_ids


# ------------------------------------------------------------------ sources on the command line
@pytest.mark.parametrize(
    ("data", "montages", "expected"),
    [
        (["a", "b"], ["m1"], [("a", "m1"), ("b", "m1")]),
        (["a", "b"], ["m1", "m2"], [("a", "m1"), ("b", "m2")]),
        (["a:m1", "b"], ["m2"], [("a", "m1"), ("b", "m2")]),
        (["a:m1", "b:m2"], [], [("a", "m1"), ("b", "m2")]),
    ],
)
def test_parse_sources_pairs_data_with_montages(data: list[str], montages: list[str], expected: list) -> None:
    assert parse_sources(data, montages) == [DataSource(path=Path(p), montage=m) for p, m in expected]


@pytest.mark.parametrize(
    ("data", "montages", "message"),
    [(["a"], [], "no montage for --data a"), (["a", "b", "c"], ["m1", "m2"], "2 --montage values for 3"),
     ([], ["m1"], "no --data")],
)
def test_parse_sources_rejects_ambiguous_options(data: list[str], montages: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_sources(data, montages)


# ------------------------------------------------------------------ a whole run
def test_run_writes_a_loadable_checkpoint_card_and_metrics(tmp_path: Path) -> None:
    out = pretrain(tiny_config(tmp_path / "run", name="tiny-test"), datasets=two_montage_data())
    backbone, info = load_base_checkpoint(out)
    assert info.name == "tiny-test" and backbone.config.embedding == "mlp-experts"
    card = (out / "MODEL_CARD.md").read_text()
    assert "**not** pretrained on the TUH EEG corpus" in card and "predicting zeros" in card
    rows = read_metrics(out / "train" / "metrics.csv")
    assert [int(r["step"]) for r in rows] == [1, 2, 3, 4]
    assert rows[-1]["val_loss"] and rows[-1]["val_zero_loss"]


def test_batches_never_mix_montages_and_both_montages_are_used(tmp_path: Path) -> None:
    events: list[StepEvent] = []
    pretrain(tiny_config(tmp_path / "run", steps=10), datasets=two_montage_data(), on_step=events.append)
    for event in events:
        assert len({w.split("#")[0] for w in event.window_ids}) == 1
    assert {e.montage for e in events} == {"tuh-standard", "tuh-frontal"}


@pytest.mark.parametrize("kind", EMBEDDING_KINDS)
def test_every_embedding_kind_trains(tmp_path: Path, kind: str) -> None:
    losses: list[float] = []
    out = pretrain(tiny_config(tmp_path / kind, embedding=kind, steps=2, checkpoint_every=2),
                   datasets=two_montage_data(), on_step=lambda e: losses.append(e.loss))
    assert len(losses) == 2 and all(np.isfinite(losses))
    assert load_base_checkpoint(out)[0].config.embedding == kind


def test_expert_bank_is_learned(tmp_path: Path) -> None:
    from passport_kit.model import build_backbone, model_config

    torch.manual_seed(42)
    initial = build_backbone(model_config("cbramod-tiny", "mlp-experts")).state_dict()
    trained = {}
    pretrain(tiny_config(tmp_path / "run", steps=2), datasets=two_montage_data(),
             on_end=lambda model, rank: trained.update(model.state_dict()))
    expert_keys = [k for k in trained if "expert" in k]
    assert expert_keys and all(not torch.equal(initial[k], trained[k]) for k in expert_keys)


# ------------------------------------------------------------------ long runs
def test_ctrl_c_saves_state_and_resume_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    reference: dict[str, torch.Tensor] = {}
    pretrain(tiny_config(tmp_path / "ref", steps=5), datasets=two_montage_data(),
             on_end=lambda model, rank: reference.update(model.state_dict()))

    def ctrl_c_at_step_3(event: StepEvent) -> None:
        if event.step == 3:
            signal.raise_signal(signal.SIGINT)

    cfg = tiny_config(tmp_path / "run", steps=5, checkpoint_every=100)
    with pytest.raises(TrainingInterrupted, match="step 3"):
        pretrain(cfg, datasets=two_montage_data(), on_step=ctrl_c_at_step_3)
    assert load_training_state(tmp_path / "run" / STATE_FILE).step == 3
    resumed: dict[str, torch.Tensor] = {}
    pretrain(cfg.model_copy(update={"resume": True}), datasets=two_montage_data(),
             on_end=lambda model, rank: resumed.update(model.state_dict()))
    assert [int(r["step"]) for r in read_metrics(tmp_path / "run" / "train" / "metrics.csv")] == [1, 2, 3, 4, 5]
    for key, value in reference.items():
        assert torch.equal(value, resumed[key]), key


def test_an_interrupted_run_ends_where_it_stopped_with_stop_at(tmp_path: Path) -> None:
    def ctrl_c_at_step_3(event: StepEvent) -> None:
        if event.step == 3:
            signal.raise_signal(signal.SIGINT)

    stopped: dict[str, torch.Tensor] = {}
    cfg = tiny_config(tmp_path / "run", steps=6, checkpoint_every=100)
    with pytest.raises(TrainingInterrupted):
        pretrain(cfg, datasets=two_montage_data(), on_step=ctrl_c_at_step_3)
    out = pretrain(cfg.model_copy(update={"resume": True, "stop_at": 3}), datasets=two_montage_data(),
                   on_end=lambda model, rank: stopped.update(model.state_dict()))
    backbone, info = load_base_checkpoint(out)  # a checkpoint, with the weights of step 3
    for key, value in backbone.state_dict().items():
        assert torch.equal(value, stopped[key]), key
    assert info.training["steps"] == 3 and info.training["schedule_steps"] == 6
    assert "stopped early: the cosine schedule spans 6" in (out / "MODEL_CARD.md").read_text()


def test_stop_at_matches_the_first_steps_of_the_full_run(tmp_path: Path) -> None:
    pretrain(tiny_config(tmp_path / "full", steps=5), datasets=two_montage_data())
    pretrain(tiny_config(tmp_path / "early", steps=5, stop_at=2), datasets=two_montage_data())
    full = read_metrics(tmp_path / "full" / "train" / "metrics.csv")
    early = read_metrics(tmp_path / "early" / "train" / "metrics.csv")
    assert [r["loss"] for r in early] == [r["loss"] for r in full[:2]]
    assert [r["lr"] for r in early] == [r["lr"] for r in full[:2]]  # the schedule spans --steps


@pytest.mark.parametrize(("stop_at", "message"), [(7, "after the last step"), (0, "stop_at")])
def test_stop_at_outside_the_run_is_refused(tmp_path: Path, stop_at: int, message: str) -> None:
    from passport_kit.pretrain.run import PretrainConfig

    options = tiny_config(tmp_path / "run", steps=6).model_dump()
    with pytest.raises(ConfigError, match=message):
        PretrainConfig.from_options(**{**options, "stop_at": stop_at})


def test_existing_run_needs_resume(tmp_path: Path) -> None:
    cfg = tiny_config(tmp_path / "run", steps=2)
    pretrain(cfg, datasets=two_montage_data())
    (tmp_path / "run" / "model.safetensors").unlink()
    with pytest.raises(ConfigError, match="pass --resume"):
        pretrain(cfg, datasets=two_montage_data())


def test_resume_refuses_a_changed_setting(tmp_path: Path) -> None:
    def stop_at_1(event: StepEvent) -> None:
        if event.step == 1:
            signal.raise_signal(signal.SIGINT)

    with pytest.raises(TrainingInterrupted):
        pretrain(tiny_config(tmp_path / "run", steps=3), datasets=two_montage_data(), on_step=stop_at_1)
    changed = tiny_config(tmp_path / "run", steps=3, batch_size=2, resume=True)
    with pytest.raises(ConfigError, match="different batch_size"):
        pretrain(changed, datasets=two_montage_data())


def test_metrics_log_drops_rows_after_the_resumed_step(tmp_path: Path) -> None:
    from passport_kit.pretrain.log import MetricsLog

    log = MetricsLog(tmp_path / "metrics.csv")
    for step in range(1, 6):
        log.write({"step": step, "loss": 1.0 / step})
    log.close()
    resumed = MetricsLog(tmp_path / "metrics.csv", resume_step=3)
    resumed.write({"step": 4, "loss": 0.5})
    resumed.close()
    assert [r["step"] for r in read_metrics(tmp_path / "metrics.csv")] == ["1", "2", "3", "4"]


@pytest.mark.parametrize(
    ("per_dataset", "named"),
    [({"sim": {"val_loss": 0.01, "val_zero_loss": 0.04}, "real": {"val_loss": 0.012, "val_zero_loss": 0.01}}, "`real`"),
     ({"sim": {"val_loss": 0.01, "val_zero_loss": 0.04}, "real": {"val_loss": 0.008, "val_zero_loss": 0.01}}, None),
     ({"sim": {"val_loss": 0.05, "val_zero_loss": 0.04}}, None)],
)
def test_card_names_a_dataset_where_the_model_loses_to_zeros(per_dataset: dict, named: str | None) -> None:
    from passport_kit.pretrain.objective import _per_dataset_warning

    warning = _per_dataset_warning(per_dataset)
    assert (warning is None) if named is None else (named in warning and "`sim`" not in warning)


def test_card_command_parses_back_to_the_same_sources(tmp_path: Path) -> None:
    import shlex

    from passport_kit.pretrain.card import reproduce_command

    cfg = tiny_config(tmp_path / "run", sources=[
        DataSource(path=Path("muse-data"), montage="muse"),
        DataSource(path=Path("dreams"), montage=str(tmp_path / "dreams-c3.yaml")),  # a montage file
        DataSource(path=Path("sim"), montage="tuh-19"),
    ], val_subjects=["s1", "s2"])
    argv = shlex.split(reproduce_command(cfg))
    data = [argv[i + 1] for i, a in enumerate(argv) if a == "--data"]
    montages = [argv[i + 1] for i, a in enumerate(argv) if a == "--montage"]
    assert parse_sources(data, montages) == cfg.sources
    assert argv[argv.index("--val-subjects") + 1] == "s1,s2"
