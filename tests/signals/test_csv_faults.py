"""CSV recordings whose timestamps, rows or size cannot be trusted are refused with one line (issue 35, item 2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from passport_kit.errors import DataError
from passport_kit.signals import readers
from passport_kit.signals.readers import read_recording


def _csv(path: Path, stamps: np.ndarray, *, extra: dict[int, str] | None = None) -> Path:
    rows = [f"{t:.6f},{np.sin(t):.4f},{np.cos(t):.4f}" for t in stamps]
    for i, row in (extra or {}).items():
        rows[i] = row
    path.write_text("timestamps,TP9,AF7\n" + "\n".join(rows) + "\n")
    return path


def test_an_evenly_stamped_csv_reads_at_its_rate(tmp_path: Path) -> None:
    raw = read_recording(_csv(tmp_path / "ok.csv", np.arange(2000) / 200.0))
    assert raw.info["sfreq"] == 200 and raw.n_times == 2000


def test_timestamps_that_go_backwards_are_refused_naming_the_line(tmp_path: Path) -> None:
    # Issue 35: data inspect reported 212 Hz for a 200-Hz recording whose stamps jumped back.
    stamps = np.arange(2000) / 200.0
    stamps[1000:] -= 0.5
    with pytest.raises(DataError, match=r"timestamps go backwards at line 1002 "):
        read_recording(_csv(tmp_path / "back.csv", stamps))


def test_irregular_timestamps_are_refused_naming_the_line(tmp_path: Path) -> None:
    # Issue 35: 225 Hz for a 200-Hz recording; here the second half runs at 260 Hz.
    stamps = np.r_[np.arange(1000) / 200.0, 5.0 + np.arange(1000) / 260.0]
    with pytest.raises(DataError, match=r"timestamps are irregular at line \d+: 2\d\d samples span"):
        read_recording(_csv(tmp_path / "irregular.csv", stamps))


@pytest.mark.parametrize(("row", "line_no"), [("1.0,2.0,3.0,4.0", 101), ("1.0,2.0", 101)])
def test_ragged_rows_are_refused_naming_the_line(tmp_path: Path, row: str, line_no: int) -> None:
    # Issue 35: extra cells were ignored silently.
    path = _csv(tmp_path / "ragged.csv", np.arange(2000) / 200.0, extra={99: row})
    with pytest.raises(DataError, match=rf"line {line_no} has {row.count(',') + 1} cells but the header has 3"):
        read_recording(path)


def test_too_many_columns_are_refused_before_parsing(tmp_path: Path) -> None:
    # Issue 35: 20,000 columns ran out of memory.
    header = "timestamps," + ",".join(f"C{i}" for i in range(20_000))
    (tmp_path / "wide.csv").write_text(header + "\n" + ",".join(["0"] * 20_001) + "\n")
    with pytest.raises(DataError, match="header has 20,001 columns"):
        read_recording(tmp_path / "wide.csv")


def test_a_huge_line_is_refused(tmp_path: Path) -> None:
    # Issue 35: one 200 MB line raised _csv.Error; 2 MB shows the same check.
    (tmp_path / "line.csv").write_text("timestamps,TP9\n" + "1" * (2 * 1024**2) + "\n")
    with pytest.raises(DataError, match=r"line 2 has 2,097,152 characters"):
        read_recording(tmp_path / "line.csv")


def test_a_file_over_the_size_limit_is_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 35: a 10 GB sparse CSV raised MemoryError; a sparse file costs no disk.
    path = tmp_path / "huge.csv"
    with path.open("wb") as f:
        f.write(b"timestamps,TP9\n")
        f.truncate(10 * 1024**3)
    read = []
    monkeypatch.setattr(Path, "read_text", lambda *a, **k: read.append(1))
    with pytest.raises(DataError, match=r"has 10,240 MiB, more than a CSV recording is read at"):
        read_recording(path)
    assert not read
    assert readers._csv_size_limit() <= readers.MAX_CSV_BYTES
