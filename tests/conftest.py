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
