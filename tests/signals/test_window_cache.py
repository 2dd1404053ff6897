"""The window cache: hits skip the files, keys follow content and config, writes are atomic."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from signals_helpers import synthetic_raw, write_edf

import passport_kit.signals.dataset as dataset_module
import passport_kit.signals.recording as recording_module
from passport_kit.signals import PreprocessConfig, load_dataset, load_recording
from passport_kit.signals.cache import cache_root, entry_dir, read_entry, write_entry


def _fail(*args, **kwargs):
    raise AssertionError("the recording was read again although its windows are cached")


@pytest.fixture
def dataset(tmp_path: Path, write_dataset) -> Path:
    for i in (1, 2):
        write_edf(synthetic_raw(["C3", "C4", "O1"], seconds=60, seed=i), tmp_path / f"s{i}.edf")
        (tmp_path / f"s{i}.csv").write_text("W\nN2\n", encoding="utf-8")
    return write_dataset({"recordings": [{"subject": f"s{i}", "file": f"s{i}.edf", "labels": f"s{i}.csv"} for i in (1, 2)]})


def test_second_load_does_not_read_the_recordings(dataset: Path, montage, monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_dataset(dataset, montage)
    monkeypatch.setattr(dataset_module, "read_recording", _fail)
    monkeypatch.setattr(recording_module, "mapped_data", _fail)
    second = load_dataset(dataset, montage)
    assert isinstance(second.x, np.memmap) and not second.x.flags.writeable
    np.testing.assert_array_equal(second.x, first.x)
    np.testing.assert_array_equal(second.y, first.y)
    np.testing.assert_array_equal(second.flags, first.flags)


def test_cache_lives_under_passport_kit_home(dataset: Path, montage, _isolated_home: Path) -> None:
    load_dataset(dataset, montage)
    assert cache_root() == _isolated_home / "cache"
    assert list((_isolated_home / "cache" / "windows").glob("*/*/meta.json"))


@pytest.mark.parametrize("change", ["config", "content", "montage"])
def test_a_change_misses_the_cache(tmp_path: Path, montage, change: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_edf(synthetic_raw(["C3", "C4", "O1"], seconds=30), tmp_path / "r.edf")
    load_recording(path, montage)
    calls = []
    original = dataset_module.read_recording
    monkeypatch.setattr(dataset_module, "read_recording", lambda *a, **k: calls.append(1) or original(*a, **k))
    config = PreprocessConfig()
    used_montage = montage
    if change == "config":
        config = PreprocessConfig(notch_freq=60.0)
    elif change == "content":
        write_edf(synthetic_raw(["C3", "C4", "O1"], seconds=30, seed=9), path)
    else:
        used_montage = montage.subset(["C3", "C4"])
    load_recording(path, used_montage, config)
    assert calls == [1]


def test_cache_false_neither_reads_nor_writes(tmp_path: Path, montage) -> None:
    path = write_edf(synthetic_raw(["C3", "C4", "O1"], seconds=30), tmp_path / "r.edf")
    ws = load_recording(path, montage, cache=False)
    assert not isinstance(ws.x, np.memmap)
    assert not (cache_root() / "windows").exists()


def test_killed_write_leaves_no_valid_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "ab" * 32
    calls = {"n": 0}
    real_dump = json.dump

    def dying_dump(*args, **kwargs):  # the process "dies" while writing meta.json
        calls["n"] += 1
        raise KeyboardInterrupt

    monkeypatch.setattr(json, "dump", dying_dump)
    with pytest.raises(KeyboardInterrupt):
        write_entry(key, {"x": np.ones((2, 3), dtype=np.float32)}, {})
    monkeypatch.setattr(json, "dump", real_dump)
    assert calls["n"] == 1
    assert read_entry(key) is None
    assert not entry_dir(key).exists()
    assert not list(entry_dir(key).parent.glob(f"{key}.tmp-*"))


@pytest.mark.parametrize("damage", ["no-meta", "bad-json", "wrong-key", "short-array"])
def test_incomplete_or_damaged_entries_read_as_missing(damage: str) -> None:
    key = "cd" * 32
    write_entry(key, {"x": np.arange(12, dtype=np.float32).reshape(3, 4)}, {})
    folder = entry_dir(key)
    if damage == "no-meta":
        (folder / "meta.json").unlink()
    elif damage == "bad-json":
        (folder / "meta.json").write_text("{", encoding="utf-8")
    elif damage == "wrong-key":
        meta = json.loads((folder / "meta.json").read_text())
        (folder / "meta.json").write_text(json.dumps({**meta, "key": "ef" * 32}))
    else:
        np.save(folder / "x.npy", np.zeros((2, 4), dtype=np.float32))
    assert read_entry(key) is None


def test_entry_round_trip_is_memory_mapped() -> None:
    key = "12" * 32
    x = np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32)
    entry = write_entry(key, {"x": x}, {"note": "hi"})
    assert isinstance(entry.arrays["x"], np.memmap)
    np.testing.assert_array_equal(entry.arrays["x"], x)
    assert entry.meta["note"] == "hi"


def test_a_leftover_temporary_folder_is_never_served() -> None:
    # A SIGKILL runs no cleanup: the temp folder stays, complete or not, under its temp name.
    key = "34" * 32
    write_entry(key, {"x": np.ones((2, 2), dtype=np.float32)}, {})
    final = entry_dir(key)
    final.rename(final.parent / f"{key}.tmp-999-deadbeef")
    assert read_entry(key) is None
