"""Channel mapping: names, aliases, TUH spellings, old 10-20 names, bipolar derivations."""

from __future__ import annotations

import numpy as np
import pytest
from signals_helpers import synthetic_raw

from passport_kit.errors import ChannelMappingError
from passport_kit.signals.channels import channel_key, map_channels, mapped_data


@pytest.mark.parametrize(("name", "key"), [
    ("C3", "c3"), ("EEG C3-REF", "c3"), ("EEG FP1-LE", "fp1"), ("eeg  Fp1", "fp1"), ("EEG T3-REF", "t7"),
    ("T4", "t8"), ("T5", "p7"), ("EEG T6", "p8"), ("EEG A2-A1", "a2-a1"), ("T3-T5", "t7-p7"), ("ECG ECG", "ecg"),
])
def test_channel_key_normalises_names(name: str, key: str) -> None:
    assert channel_key(name) == key


@pytest.mark.parametrize(("file_names", "sources"), [
    (["C3", "C4", "O1"], ["C3", "C4", "O1"]),
    (["c3", "c4", "o1"], ["c3", "c4", "o1"]),                                        # case
    (["EEG C3-REF", "EEG C4-REF", "EEG O1-REF"], ["EEG C3-REF", "EEG C4-REF", "EEG O1-REF"]),  # TUH -REF
    (["EEG C3-LE", "EEG C4-LE", "EEG O1-LE"], ["EEG C3-LE", "EEG C4-LE", "EEG O1-LE"]),        # TUH -LE
    (["O1", "EEG C4", "C3", "ECG"], ["C3", "EEG C4", "O1"]),                         # order, extra channel
    (["C3", "C4", "Occ-L"], ["C3", "C4", "Occ-L"]),                                  # montage alias
])
def test_maps_to_montage_order(montage, file_names: list[str], sources: list[str]) -> None:
    raw = synthetic_raw(file_names, seconds=2.0)
    mapped = map_channels(raw, montage)
    assert mapped.ch_names == ["C3", "C4", "O1"]
    np.testing.assert_array_equal(mapped.get_data(), raw.get_data(picks=sources))


def test_old_temporal_names_map_to_new_ones(bipolar_montage) -> None:
    raw = synthetic_raw(["EEG T3-REF", "EEG A2-A1"], seconds=2.0)
    mapped = map_channels(raw, bipolar_montage)
    np.testing.assert_array_equal(mapped.get_data(picks=["T7"]), raw.get_data(picks=["EEG T3-REF"]))


def test_bipolar_derivation_is_computed_from_its_two_electrodes(bipolar_montage) -> None:
    raw = synthetic_raw(["T7", "A1", "A2"], seconds=2.0)
    mapped = map_channels(raw, bipolar_montage)
    expected = raw.get_data(picks=["A2"]) - raw.get_data(picks=["A1"])
    np.testing.assert_allclose(mapped.get_data(picks=["A2-A1"]), expected)


def test_bipolar_channel_in_the_file_is_used_as_is(bipolar_montage) -> None:
    raw = synthetic_raw(["T7", "EEG A2-A1", "A1", "A2"], seconds=2.0)
    mapped = map_channels(raw, bipolar_montage)
    np.testing.assert_array_equal(mapped.get_data(picks=["A2-A1"]), raw.get_data(picks=["EEG A2-A1"]))


def test_monopolar_channel_is_never_built_from_a_pair(montage) -> None:
    raw = synthetic_raw(["C3", "C4"], seconds=2.0)
    with pytest.raises(ChannelMappingError, match=r"needs O1, not found"):
        map_channels(raw, montage)


def test_renames_take_precedence(montage) -> None:
    raw = synthetic_raw(["left central", "C4", "O1", "C3"], seconds=2.0)
    mapped = map_channels(raw, montage, {"C3": "left central"})
    np.testing.assert_array_equal(mapped.get_data(picks=["C3"]), raw.get_data(picks=["left central"]))


def test_missing_channel_lists_what_the_recording_has(montage) -> None:
    raw = synthetic_raw(["Fp1", "Fp2", "C3"], seconds=2.0)
    with pytest.raises(ChannelMappingError) as info:
        map_channels(raw, montage, source="recording 's01.edf'")
    message = str(info.value)
    assert "recording 's01.edf': montage 'test-three' needs C4, O1" in message
    assert "the recording has: Fp1, Fp2, C3" in message
    assert "channels: {C4: <name in file>}" in message
    assert "\n" not in message


@pytest.mark.parametrize(("renames", "message"), [
    ({"Cz": "C3"}, r"'channels' renames Cz, which montage 'test-three' does not have"),
    ({"C3": "nothing"}, r"'channels' maps C3 to 'nothing', which the recording does not have; it has: C3, C4, O1"),
])
def test_bad_renames_are_explained(montage, renames: dict[str, str], message: str) -> None:
    raw = synthetic_raw(["C3", "C4", "O1"], seconds=2.0)
    with pytest.raises(ChannelMappingError, match=message):
        map_channels(raw, montage, renames)


def test_mapping_keeps_annotations(montage) -> None:
    import mne

    raw = synthetic_raw(["C3", "C4", "O1"], seconds=4.0,
                        annotations=mne.Annotations([1.0], [2.0], ["Sleep stage W"]))
    mapped = map_channels(raw, montage)
    assert list(mapped.annotations.description) == ["Sleep stage W"]
    assert mapped.annotations.onset[0] == pytest.approx(1.0)



@pytest.mark.parametrize("file_names", [["C3", "C4", "O1"], ["O1", "EEG C4", "C3", "ECG"]], ids=["as-is", "reordered"])
def test_mapped_data_is_map_channels_samples(montage, file_names: list[str]) -> None:
    raw = synthetic_raw(file_names, seconds=2.0)
    np.testing.assert_array_equal(mapped_data(raw, montage), map_channels(raw, montage).get_data())


def test_mapped_data_derives_bipolar_channels(bipolar_montage) -> None:
    raw = synthetic_raw(["EEG T3-REF", "A2", "A1"], seconds=2.0)
    data = mapped_data(raw, bipolar_montage)
    np.testing.assert_array_equal(data, map_channels(raw, bipolar_montage).get_data())
    np.testing.assert_allclose(data[1], raw.get_data(picks=["A2"])[0] - raw.get_data(picks=["A1"])[0])
