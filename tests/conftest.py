"""Shared fixtures: every test gets its own user registry (PASSPORT_KIT_HOME)."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the user registry and caches at a fresh folder for each test."""
    home = tmp_path_factory.mktemp("passport_home")
    monkeypatch.setenv("PASSPORT_KIT_HOME", str(home))
    return home


@pytest.fixture
def shared_data() -> Path:
    """Path of ../shared/data; skips the test cleanly where it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present on this machine")
    return SHARED_DATA


@pytest.fixture
def night_of():
    """Return ``(onsets_s, flags) -> RecordingWindows``: a recording as read, for ``write_prediction`` (no samples)."""
    import numpy as np

    from passport_kit.signals import PreprocessConfig
    from passport_kit.signals.recording import RecordingWindows

    def night(onsets_s, flags) -> RecordingWindows:
        onsets_s = np.asarray(onsets_s, dtype=np.float64)
        return RecordingWindows(x=np.zeros((len(onsets_s), 0, 0, 0), np.float32), flags=np.asarray(flags),
                                onset_s=onsets_s, quality=None, config=PreprocessConfig())

    return night
