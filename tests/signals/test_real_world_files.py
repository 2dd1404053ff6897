"""Files as users have them: more MNE formats, padded names, BioSemi ABC caps, honest read errors (issue 19, item 9)."""

from __future__ import annotations

from pathlib import Path

import mne
import numpy as np
import pytest

from passport_kit.errors import ChannelMappingError, DataError
from passport_kit.signals import load_dataset_spec, load_recording
from passport_kit.signals.channels import channel_key, map_channels
from passport_kit.signals.readers import content_files, is_recording_file, read_recording

from signals_helpers import synthetic_raw, write_edf


def _nxe(path: Path, seconds: float = 35.0) -> Path:
    """Write an eXimia recording: 64 channels of little-endian int16 at 1450 Hz, nothing else (MNE's layout)."""
    rng = np.random.default_rng(0)
    samples = rng.integers(-200, 200, size=(int(seconds * 1450), 64), dtype=np.int16)
    path.write_bytes(samples.astype("<i2").tobytes())
    return path


def test_an_mne_format_beyond_the_first_six_is_read_end_to_end(tmp_path: Path) -> None:
    # eXimia (.nxe) was refused as "unknown format"; MNE reads it, so must we.
    windows = load_recording(_nxe(tmp_path / "rec.nxe"), "tuh-standard", cache=False)
    assert windows.x.shape == (1, 6, 30, 200)


@pytest.mark.parametrize(("suffix", "reader"), [(".gdf", "read_raw_gdf"), (".lay", "read_raw_persyst"),
                                                (".EEG", "read_raw_nihon"), (".cnt", "read_raw_cnt")])
def test_other_mne_formats_go_to_their_mne_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str,
                                                  reader: str) -> None:
    raw = synthetic_raw(["C3", "C4", "O1"], seconds=10)
    monkeypatch.setattr(mne.io, reader, lambda *a, **k: raw)
    path = tmp_path / f"rec{suffix}"
    path.write_bytes(b"\0" * 16)
    assert read_recording(path) is raw and is_recording_file(path)


def test_a_brainvision_data_file_points_to_its_header(tmp_path: Path) -> None:
    vhdr = tmp_path / "rec.vhdr"
    mne.export.export_raw(vhdr, synthetic_raw(["C3", "C4"], seconds=5), fmt="brainvision", verbose="error")
    assert not is_recording_file(tmp_path / "rec.eeg") and is_recording_file(vhdr)
    with pytest.raises(DataError, match=r"is the data file of the BrainVision recording .*rec\.vhdr'; give the header"):
        read_recording(tmp_path / "rec.eeg")
    assert [r.file for r in load_dataset_spec(tmp_path).recordings] == ["rec.vhdr"]


def test_nihon_kohden_companions_are_part_of_the_content(tmp_path: Path) -> None:
    for name in ("night.EEG", "night.21E", "night.PNT", "night.LOG", "other.21E"):
        (tmp_path / name).write_bytes(b"x")
    assert sorted(p.name for p in content_files(tmp_path / "night.EEG")) == [
        "night.21E", "night.EEG", "night.LOG", "night.PNT"]


@pytest.mark.parametrize(("name", "key"), [("C3..", "c3"), ("Fp1.", "fp1"), ("Fcz.", "fcz"), ("EEG T3-REF", "t7")])
def test_padded_physionet_names_match(name: str, key: str) -> None:
    assert channel_key(name) == key


def test_padded_names_map_onto_a_montage(montage) -> None:
    mapped = map_channels(synthetic_raw(["C3..", "C4..", "O1..", "Fp1."], seconds=5), montage)
    assert mapped.ch_names == ["C3", "C4", "O1"]


def _biosemi_names() -> list[str]:
    return [f"{bank}{i}" for bank in "ABCD" for i in range(1, 33)]  # a 128-electrode cap: C3 is a cap position


def test_biosemi_abc_labels_are_not_taken_for_10_20_sites(montage) -> None:
    raw = synthetic_raw(_biosemi_names(), sfreq=128.0, seconds=2)
    with pytest.raises(ChannelMappingError, match=r"BioSemi ABC cap position .* its 'C3' is not the 10-20 site C3"):
        map_channels(raw, montage)


def test_biosemi_abc_labels_map_when_renamed(montage) -> None:
    raw = synthetic_raw(_biosemi_names(), sfreq=128.0, seconds=2)
    mapped = map_channels(raw, montage, {"C3": "A15", "C4": "B22", "O1": "A27"})
    assert mapped.ch_names == ["C3", "C4", "O1"]


def test_a_missing_optional_package_is_named_not_blamed_on_the_file(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    def needs_pymatreader(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - MNE's reader signature
        raise RuntimeError("For reading MATLAB v7.3 files to work, the module pymatreader is needed, but it could "
                           "not be imported. Use the following installation method appropriate for your "
                           "environment:\n\n    pip install pymatreader\n    conda install -c conda-forge pymatreader")

    monkeypatch.setattr(mne.io, "read_raw_eeglab", needs_pymatreader)
    (tmp_path / "rec.set").write_bytes(b"\0")
    with pytest.raises(DataError, match=r"needs the optional Python package 'pymatreader'.*pip install pymatreader") as e:
        read_recording(tmp_path / "rec.set")
    assert "EDFbrowser" not in str(e.value)


def test_a_maxshield_fif_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def maxshield(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise ValueError("This file contains raw Internal Active Shielding data. It may be distorted. Use "
                         "allow_maxshield=True if you are sure you want to load the data despite this warning.")

    monkeypatch.setattr(mne.io, "read_raw_fif", maxshield)
    (tmp_path / "rec_raw.fif").write_bytes(b"\0")
    with pytest.raises(DataError, match=r"raw MaxShield .* MaxFilter"):
        read_recording(tmp_path / "rec_raw.fif")


def test_a_broken_non_edf_file_is_not_sent_to_edfbrowser(tmp_path: Path) -> None:
    (tmp_path / "rec.vhdr").write_text("not a header")
    with pytest.raises(DataError, match=r"opening it in MNE \(mne\.io\.read_raw\)"):
        read_recording(tmp_path / "rec.vhdr")


def test_edf_written_here_still_reads(tmp_path: Path) -> None:
    assert read_recording(write_edf(synthetic_raw(["C3"], seconds=2), tmp_path / "a.edf")).ch_names == ["C3"]
