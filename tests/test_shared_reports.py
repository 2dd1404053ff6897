"""The figures and tables both rooms write (passport_kit.reports): files exist, parse back, and writes are atomic."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from passport_kit import reports


def test_json_writes_nan_as_null(tmp_path: Path) -> None:
    path = reports.write_json(tmp_path / "s.json", {"kappa": float("nan"), "n": np.int64(3)})
    assert json.loads(path.read_text()) == {"kappa": None, "n": 3}


def test_confusion_png(tmp_path: Path) -> None:
    path = reports.plot_confusion(tmp_path / "c.png", [[3, 1], [0, 0]], ["A", "B"])
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_sweep_png(tmp_path: Path) -> None:
    path = reports.plot_sweep(tmp_path / "s.png", {"mlp": {1: [0.2, 0.3], 2: [0.4, 0.5]}}, metric="kappa")
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_table_fills_missing_columns(tmp_path: Path) -> None:
    path = reports.write_table(tmp_path / "t.csv", [{"a": 1}, {"a": 2, "b": 0.5}])
    assert path.read_text().splitlines() == ["a,b", "1,", "2,0.5"]


def test_failed_write_keeps_previous_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with reports.atomic_output(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("crash mid-write")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_history_png(tmp_path: Path) -> None:
    history = [{"step": 2, "train_loss": 1.2, "val_kappa": 0.1}, {"step": 4, "train_loss": 0.9, "val_kappa": 0.3}]
    assert reports.plot_history(tmp_path / "h.png", history).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(("delimiter", "digits", "expected"), [
    (",", 6, ["x,y", "3.14159,", "1,"]),
    ("\t", 4, ["x\ty", "3.142\tn/a", "1\tn/a"]),
    ("\t", 2, ["x\ty", "3.1\tn/a", "1\tn/a"]),
])
def test_table_digits_and_missing_values(tmp_path: Path, delimiter: str, digits: int, expected: list[str]) -> None:
    rows = [{"x": 3.14159265, "y": float("inf")}, {"x": 1, "y": None}]
    path = reports.write_table(tmp_path / "t.txt", rows, delimiter=delimiter, digits=digits)
    assert path.read_text().splitlines() == expected


def test_quality_tsv_uses_the_table_writer() -> None:
    from passport_kit.atomic_io import format_table
    from passport_kit.signals.quality import TABLE_DIGITS, format_tsv

    rows = [{"name": "ELA", "score": 0.123456, "std_uv": float("nan")}]
    assert format_tsv(rows) == format_table(rows, delimiter="\t", digits=TABLE_DIGITS) == "name\tscore\tstd_uv\nELA\t0.1235\tn/a\n"
