"""Tests of benchmarks/dev_protocol_compare.py: differences are paired over the draws both runs share."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import dev_protocol_compare as dpc


def _run(folder: Path, default: list[float], random: list[float]) -> Path:
    folder.mkdir()
    scores = {"default": default, "random backbone 0": random, "band power alone (product, weight 0)": default}
    (folder / "eegmat-ear.json").write_text(json.dumps({"scores": scores}))
    return folder


def test_differences_use_the_shared_draws_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = _run(tmp_path / "ref", [0.6, 0.6, 0.6, 0.9, 0.9], [0.6] * 5)  # five draws
    new = _run(tmp_path / "new", [0.7, 0.7, 0.7], [0.6, 0.6, 0.6])     # its first three
    assert dpc.main([f"ref={ref}", f"new={new}"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| eegmat-ear")]
    assert rows[0].split(" | ")[2:4] == ["3", "0.600"]  # the reference over the 3 shared draws, not 0.72
    assert rows[1].endswith("| +0.100 [+0.100, +0.100] | +0.100 [+0.100, +0.100] |")
