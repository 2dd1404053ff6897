"""scripts/real_pretrain_sources.py: the dataset descriptions of the real-data recipe.

Tests on made-up folders run everywhere; the one over ../shared/data skips where it is absent.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from passport_kit.montage import resolve_montage
from passport_kit.signals.dataset_spec import load_dataset_spec
from passport_kit.pretrain import corpus as pdata

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "real_pretrain_sources.py"
_spec = importlib.util.spec_from_file_location("real_pretrain_sources", SCRIPT)
sources = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sources)


def _fake_data(root: Path) -> Path:
    """Return a ../shared/data look-alike with empty files (enough for the descriptions)."""
    muse = root / "muse"
    (muse / "visual" / "a").mkdir(parents=True)
    rows = ["file\tsubject\texperiment\tseconds"]
    for i, subject in enumerate(["cueing-subject105", "cueing-subject999", "P300-subject1"]):
        name = f"visual/a/rec{i}.edf"
        (muse / name).write_bytes(b"")
        rows.append(f"{name}\t{subject}\tvisual/cueing\t60.0")
    (muse / "recordings.tsv").write_text("\n".join(rows) + "\n")
    (root / "eegmat").mkdir()
    for n in range(12):
        for k in (1, 2):
            (root / "eegmat" / f"Subject{n:02d}_{k}.edf").write_bytes(b"")
    return root


def test_descriptions_name_the_recordings_in_place_and_hold_out_whole_subjects(tmp_path: Path) -> None:
    data = _fake_data(tmp_path / "data")
    args = sources.write_sources(tmp_path / "work", data)
    assert args[:2] == [f"--data={tmp_path / 'work' / 'sources' / 'muse'}:muse",
                        f"--data={tmp_path / 'work' / 'sources' / 'eegmat'}:tuh-19"]  # no DREAMS folder: left out
    muse = load_dataset_spec(tmp_path / "work" / "sources" / "muse")
    assert [r.subject for r in muse.recordings] == ["cueing-subject105", "cueing-subject999", "P300-subject1"]
    assert all(Path(r.file).is_relative_to(data) for r in muse.recordings)  # named in place, not copied
    eegmat = load_dataset_spec(tmp_path / "work" / "sources" / "eegmat")
    assert eegmat.h_freq == 45 and len({r.subject for r in eegmat.recordings}) == 12
    held = args[-1].removeprefix("--val-subjects=").split(",")
    subjects = np.array([r.subject for r in eegmat.recordings])
    assert pdata.held_out_subjects(subjects, set(held), 0.1, seed=0) == {"Subject10", "Subject11"}


@pytest.mark.parametrize(("maker", "names"), [("dreams_montage", ["C3"]), ("dreams_psg_montage", ["Fp1", "C3", "O1"])])
def test_dreams_montages_read_as_montages(tmp_path: Path, maker: str, names: list[str]) -> None:
    import yaml

    spec = getattr(sources, maker)()
    path = tmp_path / f"{spec['name']}.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert resolve_montage(path).ch_names == names


def test_each_dreams_source_gets_its_own_montage_file_in_order(tmp_path: Path) -> None:
    data = _fake_data(tmp_path / "data")
    (data / "dreams-spindles").mkdir()
    (data / "dreams-spindles" / "excerpt3.edf").write_bytes(b"")
    args = sources.write_sources(tmp_path / "work", data)
    out = tmp_path / "work" / "sources"
    # --montage values apply to the plain --data values in order (parse_sources)
    assert args[2:6] == [f"--data={out / 'dreams'}", f"--montage={out / 'dreams-c3.yaml'}",
                         f"--data={out / 'dreams-psg'}", f"--montage={out / 'dreams-psg.yaml'}"]
    psg = load_dataset_spec(out / "dreams-psg")
    assert [(r.subject, r.units, r.channels) for r in psg.recordings] == [
        ("dreams-excerpt3", "uV", {"Fp1": "FP1-A1", "C3": "C3-A1", "O1": "O1-A1"})]


def test_sleep_views_add_one_channel_datasets_of_excerpt3(tmp_path: Path) -> None:
    data = _fake_data(tmp_path / "data")
    (data / "dreams-spindles").mkdir()
    (data / "dreams-spindles" / "excerpt3.edf").write_bytes(b"")
    out = tmp_path / "work" / "sources"
    assert not any("dreams-o1" in a for a in sources.write_sources(tmp_path / "work", data))
    args = sources.write_sources(tmp_path / "work", data, sleep_views=True)
    assert args[6:10] == [f"--data={out / 'dreams-o1'}", f"--montage={out / 'dreams-o1.yaml'}",
                          f"--data={out / 'dreams-fp1'}", f"--montage={out / 'dreams-fp1.yaml'}"]
    for channel in ("O1", "Fp1"):
        spec = load_dataset_spec(out / f"dreams-{channel.lower()}")
        assert [(r.subject, r.units, r.channels) for r in spec.recordings] == [
            ("dreams-excerpt3", "uV", {channel: f"{channel.upper()}-A1"})]
        assert resolve_montage(out / f"dreams-{channel.lower()}.yaml").ch_names == [channel]


def test_real_sources_describe_the_shared_corpus(shared_data: Path, tmp_path: Path) -> None:
    args = sources.write_sources(tmp_path, shared_data)
    folders = [a.removeprefix("--data=").split(":")[0] for a in args if a.startswith("--data=")]
    specs = {Path(f).name: load_dataset_spec(f) for f in folders}  # checks that every named file exists
    assert len(specs["muse"].recordings) == 252 and len(specs["eegmat"].recordings) == 24
    assert {r.subject for r in specs["dreams"].recordings} == {"dreams-excerpt1", "dreams-excerpt3"}
    assert {r.subject for r in specs["dreams-psg"].recordings} == {"dreams-excerpt3"}  # excerpt 1 stays held out
