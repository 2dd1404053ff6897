"""Shared fixtures: every test gets its own user registry (PASSPORT_KIT_HOME).

The whole run, collection included, points PASSPORT_KIT_HOME at a temporary folder that is set
here, at import time: pytest imports this file before it imports any test module, so what a
test module reads while it is collected (``known_montage_names()`` in a parametrisation) never
sees the user's registry, checkpoints or cache (issue 34, finding 9). The folder is removed when
the run ends; each test then gets a fresh one of its own (``_isolated_home``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

_RUN_HOME = Path(tempfile.mkdtemp(prefix="passport-kit-test-home-"))
os.environ["PASSPORT_KIT_HOME"] = str(_RUN_HOME)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_RUN_HOME, ignore_errors=True)

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
