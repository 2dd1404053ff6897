"""Built-in TUH aliases cover the channel names of real 10-20 recordings (skips without ../shared/data)."""

from __future__ import annotations

from pathlib import Path

import mne
import pytest

from passport_kit.montage import get_montage


@pytest.mark.realdata
def test_tuh_19_finds_every_eegmat_scalp_channel(shared_data: Path) -> None:
    raw = mne.io.read_raw_edf(shared_data / "eegmat" / "Subject00_1.edf", preload=False, verbose="error")
    # eegmat names channels 'EEG Fp1' ... with the old temporal names (T3-T6).
    scalp = [n.removeprefix("EEG ").strip() for n in raw.ch_names if n.startswith("EEG ") and "-" not in n]
    montage = get_montage("tuh-19")
    found = {montage.channel(n).name for n in scalp}
    assert found == set(montage.ch_names)
