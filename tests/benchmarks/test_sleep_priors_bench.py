"""benchmarks/sleep_priors.py skips cleanly without the shared recordings (the real run is a benchmark)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import sleep_priors  # noqa: E402


def test_skips_cleanly_without_the_shared_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sleep_priors.main(["--data", str(tmp_path / "none"), "--out", str(tmp_path / "out")]) == 0
    assert "skipped" in capsys.readouterr().out
