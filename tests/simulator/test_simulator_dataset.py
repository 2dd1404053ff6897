"""simulate_dataset: EDF + labels + dataset.yaml that read back through MNE and the data layer."""

from __future__ import annotations

import json
from pathlib import Path

import mne
import numpy as np
import pytest
import yaml

from passport_kit.errors import ConfigError, DataError
from passport_kit.montage import Montage
from passport_kit.signals import load_dataset
from passport_kit.signals.simulator import simulate_dataset, simulate_recording

_HOURS = 0.1  # 12 epochs


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return a folder with two simulated subjects of the built-in eesm17-ear montage."""
    return simulate_dataset("eesm17-ear", tmp_path_factory.mktemp("sim"), n_subjects=2, hours=_HOURS,
                            seed=11, bad_channels="s02:ELB:flat")


def test_folder_holds_one_edf_and_one_label_file_per_subject(dataset: Path) -> None:
    names = sorted(p.name for p in dataset.iterdir())
    assert names == ["dataset.yaml", "s01.edf", "s01_hypnogram.csv", "s02.edf", "s02_hypnogram.csv",
                     "simulation.json"]


def test_dataset_yaml_has_exactly_the_design_keys(dataset: Path) -> None:
    doc = yaml.safe_load((dataset / "dataset.yaml").read_text(encoding="utf-8"))
    assert doc == {
        "task": "sleep-staging", "window_seconds": 30, "classes": ["W", "N1", "N2", "N3", "REM"],
        "recordings": [{"subject": f"s0{i}", "file": f"s0{i}.edf", "labels": f"s0{i}_hypnogram.csv"}
                       for i in (1, 2)],
    }


def test_label_file_has_header_and_one_stage_per_epoch(dataset: Path) -> None:
    lines = (dataset / "s01_hypnogram.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "stage,onset_s"
    assert len(lines) == 1 + 12
    assert {line.split(",")[0] for line in lines[1:]} <= {"W", "N1", "N2", "N3", "REM"}


def test_edf_round_trips_in_microvolts(dataset: Path) -> None:
    from passport_kit.montage import get_montage

    montage = get_montage("eesm17-ear")
    raw = mne.io.read_raw_edf(dataset / "s01.edf", preload=True, verbose=False)
    assert raw.ch_names == montage.ch_names
    assert raw.info["sfreq"] == 200.0 and raw.n_times == 12 * 30 * 200
    truth = simulate_recording(montage, seed=11, subject=0, n_epochs=12).data
    # MNE reads volts; the file stores µV in 16 bits over a range of a few hundred µV.
    step = 2 * np.abs(truth).max() / 65535 * 1.2
    np.testing.assert_allclose(raw.get_data() * 1e6, truth, atol=max(step, 0.02))


def test_dataset_loads_through_the_data_layer(dataset: Path) -> None:
    windows = load_dataset(dataset, "eesm17-ear", cache=False)
    labels = [line.split(",")[0] for line in
              (dataset / "s01_hypnogram.csv").read_text(encoding="utf-8").splitlines()[1:]]
    assert windows.x.shape == (24, 12, 30, 200)
    assert [windows.classes[i] for i in windows.y[:12]] == labels
    flat = windows.montage.ch_names.index("ELB")
    assert windows.flags[windows.subject == "s02", flat].all()
    assert not windows.flags[windows.subject == "s01", flat].any()


def test_simulation_json_records_the_ground_truth(dataset: Path) -> None:
    truth = json.loads((dataset / "simulation.json").read_text(encoding="utf-8"))
    assert truth["montage"] == "eesm17-ear" and truth["config"]["seed"] == 11
    assert truth["reference"] == "template electrode Cz"
    assert truth["subjects"]["s02"]["bad_channels"] == {"ELB": "flat"}
    assert sum(truth["subjects"]["s01"]["stage_epochs"].values()) == 12


def test_long_channel_names_are_shortened_and_mapped_back(tmp_path: Path) -> None:
    long = "VeryLongChannelName-01"
    montage = Montage.from_dict({"name": "sim-long", "units": "mm", "reference": "Cz", "channels": [
        {"name": long, "position": [-85.5, -8.0, 12.0]}, {"name": "ERA", "position": [85.5, -8.0, 12.0]}]})
    folder = simulate_dataset(montage, tmp_path, n_subjects=1, hours=0.05, seed=0)
    entry = yaml.safe_load((folder / "dataset.yaml").read_text(encoding="utf-8"))["recordings"][0]
    assert len(entry["channels"][long]) <= 16
    assert load_dataset(folder, montage, cache=False).x.shape[1] == 2


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"hours": 0}, "hours"),
    ({"n_subjects": 0}, "n_subjects"),
    ({"sfreq": 250.5}, "whole number"),
    ({"sfreq": 50}, "sfreq"),
    ({"bad_channels": "s01:ELA:broken"}, "noise, drift, flat"),
    ({"bad_channels": "s09:ELA:flat"}, "s01..s02"),
    ({"bad_channels": "s01:XYZ:flat"}, "no channel 'XYZ'"),
    ({"bad_channels": "s01-ELA-flat"}, "SUBJECT:CHANNEL:KIND"),
])
def test_bad_options_raise_one_line_config_errors(tmp_path: Path, kwargs: dict, message: str) -> None:
    options = {"n_subjects": 2, "hours": 0.05, "seed": 0, **kwargs}
    with pytest.raises(ConfigError, match=message):
        simulate_dataset("eesm17-ear", tmp_path / "out", **options)
    assert not (tmp_path / "out" / "dataset.yaml").exists()


def test_existing_dataset_is_not_overwritten_unless_asked(tmp_path: Path) -> None:
    simulate_dataset("muse", tmp_path, n_subjects=1, hours=0.05, seed=0)
    with pytest.raises(DataError, match="already holds a dataset.yaml"):
        simulate_dataset("muse", tmp_path, n_subjects=1, hours=0.05, seed=1)
    simulate_dataset("muse", tmp_path, n_subjects=1, hours=0.05, seed=1, overwrite=True)
    assert json.loads((tmp_path / "simulation.json").read_text(encoding="utf-8"))["config"]["seed"] == 1
