"""Readers: every supported format round-trips; bad files give one-line DataErrors."""

from __future__ import annotations

from pathlib import Path

import mne
import numpy as np
import pytest

from passport_kit.errors import DataError
from passport_kit.signals.readers import content_files, read_recording

from signals_helpers import synthetic_raw, write_edf

CHANNELS = ["C3", "C4", "O1"]


def _write(raw: mne.io.BaseRaw, folder: Path, fmt: str) -> Path:
    """Write ``raw`` in ``fmt`` into ``folder`` with the format's own writer; return the path to read."""
    if fmt == "edf":
        return write_edf(raw, folder / "rec.edf")
    if fmt == "bdf":
        path = folder / "rec.bdf"
        mne.export.export_raw(path, raw, fmt="bdf", overwrite=True, verbose="error")
        return path
    if fmt == "fif":
        path = folder / "rec_raw.fif"
        raw.save(path, overwrite=True, verbose="error")
        return path
    if fmt == "eeglab":  # eeglabio
        path = folder / "rec.set"
        mne.export.export_raw(path, raw, fmt="eeglab", overwrite=True, verbose="error")
        return path
    if fmt == "brainvision":  # pybv
        path = folder / "rec.vhdr"
        mne.export.export_raw(path, raw, fmt="brainvision", overwrite=True, verbose="error")
        return path
    if fmt == "dreams":
        path = folder / "rec.txt"
        lines = ["[C3]"] + [f"{v:.4f}" for v in raw.get_data(picks=[0])[0] * 1e6]
        path.write_text("\n".join(lines) + "\n", encoding="ascii")
        return path
    raise AssertionError(fmt)


# EDF/BDF quantise to 16/24 bits over the signal's range, text to 0.1 nV.
@pytest.mark.parametrize(("fmt", "atol_uv"), [
    ("edf", 0.01), ("bdf", 0.001), ("fif", 1e-6), ("eeglab", 1e-3), ("brainvision", 0.2), ("dreams", 1e-3),
])
def test_round_trip_keeps_samples_names_and_rate(tmp_path: Path, fmt: str, atol_uv: float) -> None:
    raw = synthetic_raw(CHANNELS, sfreq=256.0, seconds=10.0)
    path = _write(raw, tmp_path, fmt)
    back = read_recording(path, sfreq=256.0 if fmt == "dreams" else None)
    n_ch = 1 if fmt == "dreams" else 3
    assert back.ch_names == CHANNELS[:n_ch]
    assert back.info["sfreq"] == 256.0
    np.testing.assert_allclose(back.get_data() * 1e6, raw.get_data()[:n_ch] * 1e6, atol=atol_uv)


@pytest.mark.filterwarnings("ignore:No events found:RuntimeWarning")
def test_bids_round_trip(tmp_path: Path) -> None:
    import mne_bids

    from passport_kit.signals.bids import read_bids_recording

    raw = write_edf(synthetic_raw(CHANNELS, seconds=10.0), tmp_path / "src.edf")
    source = mne.io.read_raw_edf(raw, preload=False, verbose="error")
    source.info["line_freq"] = 50
    bids_path = mne_bids.BIDSPath(subject="01", task="sleep", datatype="eeg", root=tmp_path / "bids")
    mne_bids.write_raw_bids(source, bids_path, format="EDF", allow_preload=False, verbose=False)
    back = read_bids_recording(bids_path.fpath)
    assert back.ch_names == CHANNELS
    np.testing.assert_allclose(back.get_data(), source.get_data(), atol=1e-8)


def test_dreams_text_needs_a_sampling_rate(tmp_path: Path) -> None:
    path = _write(synthetic_raw(CHANNELS, seconds=2.0), tmp_path, "dreams")
    with pytest.raises(DataError, match=r"does not store its sampling rate; give it, e\.g\. 'sfreq: 100'"):
        read_recording(path)


def test_dreams_text_without_bracket_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("C3-A1\n1.0\n2.0\n", encoding="ascii")
    with pytest.raises(DataError, match=r"expected the channel name in brackets"):
        read_recording(path, sfreq=100)


def test_truncated_edf_says_how_much_is_missing(tmp_path: Path) -> None:
    path = write_edf(synthetic_raw(CHANNELS, seconds=20.0), tmp_path / "full.edf")
    cut = tmp_path / "cut.edf"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(DataError, match=r"cut\.edf' is truncated: the header promises 20 data records .* records missing"):
        read_recording(cut)


@pytest.mark.parametrize(("content", "message"), [
    (b"", r"EDF/BDF header is damaged or incomplete"),
    (b"this is not an EDF file at all" * 20, r"junk\.edf' is not EDF: its header starts with b'this is '"),
])
def test_unreadable_edf_is_a_data_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "junk.edf"
    path.write_bytes(content)
    with pytest.raises(DataError, match=message):
        read_recording(path)


def test_unreadable_fif_is_a_data_error_naming_the_format(tmp_path: Path) -> None:
    path = tmp_path / "junk_raw.fif"
    path.write_bytes(b"\x00" * 100)
    with pytest.raises(DataError, match=r"cannot read '.*junk_raw\.fif' as FIF .* check that the file is complete"):
        read_recording(path)


def test_missing_file_and_unknown_suffix(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"does not exist; check the path"):
        read_recording(tmp_path / "nope.edf")
    odd = tmp_path / "rec.xyz"
    odd.write_bytes(b"1")
    with pytest.raises(DataError, match=r"unknown format '\.xyz'; supported suffixes are"):
        read_recording(odd)


def test_given_rate_must_match_the_file(tmp_path: Path) -> None:
    path = write_edf(synthetic_raw(CHANNELS, seconds=2.0), tmp_path / "rec.edf")
    with pytest.raises(DataError, match=r"file says 256 Hz but 100 Hz was given"):
        read_recording(path, sfreq=100)


@pytest.mark.parametrize("fmt", ["eeglab", "brainvision"])
def test_content_files_include_companion_data_files(tmp_path: Path, fmt: str) -> None:
    path = _write(synthetic_raw(CHANNELS, seconds=2.0), tmp_path, fmt)
    files = content_files(path)
    assert files[0] == path
    if fmt == "brainvision":
        assert {p.suffix for p in files} == {".vhdr", ".eeg", ".vmrk"}
    else:  # eeglabio writes the data into the .set itself or a .fdt next to it
        assert all(p.exists() for p in files)


@pytest.mark.parametrize(("fmt", "atol"), [("bdf", 1e-3), ("fif", 1e-5), ("eeglab", 1e-3), ("brainvision", 2e-3), ("bids", 2e-3)])
@pytest.mark.filterwarnings("ignore:No events found:RuntimeWarning")
def test_simulated_recording_gives_the_same_windows_in_every_format(tmp_path: Path, fmt: str, atol: float) -> None:
    """Simulated EDF → each other writer → load_recording: the same windows (100 µV units)."""
    from passport_kit.signals import load_recording, simulate_dataset

    folder = simulate_dataset("tuh-standard", tmp_path / "sim", n_subjects=1, hours=2 / 60, seed=3)
    edf = folder / "s01.edf"
    reference = load_recording(edf, "tuh-standard", cache=False)
    raw = mne.io.read_raw_edf(edf, preload=True, verbose="error")
    if fmt == "bids":
        import mne_bids

        from passport_kit.signals import load_dataset

        raw.info["line_freq"] = 50
        bids_path = mne_bids.BIDSPath(subject="01", task="sleep", datatype="eeg", root=tmp_path / "bids")
        mne_bids.write_raw_bids(raw, bids_path, format="BrainVision", allow_preload=True, verbose=False)
        ws = load_dataset(tmp_path / "bids", "tuh-standard", cache=False)
        assert ws.subject.tolist() == ["sub-01"] * len(ws)
        np.testing.assert_allclose(ws.x, reference.x, atol=atol)
        return
    path = _write(raw, tmp_path, fmt)
    ws = load_recording(path, "tuh-standard", cache=False)
    assert ws.x.shape == reference.x.shape
    np.testing.assert_allclose(ws.x, reference.x, atol=atol)


def test_units_are_read_in_any_case_and_a_near_miss_is_named() -> None:
    """Issue 58: 'uv' was an unknown unit, with no hint; dataset.yaml's 'units:' reads the same way."""
    from passport_kit.signals.dataset_spec import spec_from_dict
    from passport_kit.signals.readers import canonical_units, unit_advice

    assert [canonical_units(u) for u in ("uv", "UV", "µv", "v", "nv", "uV", "mv")] == ["uV", "uV", "uV", "V", "nV",
                                                                                      "uV", "mV"]
    assert canonical_units("counts") is None and unit_advice("uW").startswith("did you mean 'uV'? give one of")
    # 'MV' is megavolts: not guessed to be mV, but suggested
    assert canonical_units("MV") is None and unit_advice("MV").startswith("did you mean 'mV'?")
    spec = spec_from_dict({"recordings": [{"subject": "a", "file": "a.edf", "units": "UV"}]}, root=Path("."),
                          origin="yaml", source="test")
    assert spec.recordings[0].units == "uV"


@pytest.mark.parametrize(("offset", "field", "message"), [
    (0, b"\x89PNG\r\n\x1a\n", r"is not EDF: its header starts with b'\\x89PNG"),   # issue 57: read as EDF
    (244, b"0       ", r"a data record duration of 0 s \(it must be positive\)"),
    (244, b"-1      ", r"a data record duration of -1 s"),
])
def test_an_edf_header_field_the_format_forbids_is_refused(tmp_path: Path, offset: int, field: bytes,
                                                           message: str) -> None:
    data = bytearray(write_edf(synthetic_raw(CHANNELS, seconds=4.0), tmp_path / "ok.edf").read_bytes())
    data[offset:offset + 8] = field
    path = tmp_path / "bad.edf"
    path.write_bytes(bytes(data))
    with pytest.raises(DataError, match=message):
        read_recording(path)
