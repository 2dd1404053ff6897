"""A scorer's label file with an onset column is placed by onset, not by row order (issue 56)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from passport_kit.errors import LabelError
from passport_kit.signals.labels import read_label_file

STAGES = ["W", "W", "N1", "N2", "N2", "N3", "N2", "REM", "REM", "W"]


def write_rows(path: Path, rows: list[tuple[str, float]], header: str = "stage,onset_s") -> Path:
    path.write_text(header + "\n" + "".join(f"{s},{t:g}\n" for s, t in rows), encoding="utf-8")
    return path


def simulator_rows() -> list[tuple[str, float]]:
    """Return the rows the simulator writes: one AASM stage per 30-s epoch with its onset."""
    return [(s, 30.0 * k) for k, s in enumerate(STAGES)]


@pytest.mark.parametrize("shuffle", ["reversed", "permuted"])
def test_rows_out_of_order_are_read_in_onset_order(tmp_path: Path, shuffle: str) -> None:
    rows = simulator_rows()
    moved = rows[::-1] if shuffle == "reversed" else [rows[k] for k in np.random.default_rng(0).permutation(len(rows))]
    assert read_label_file(write_rows(tmp_path / "moved.csv", moved)) == STAGES


def test_onset_column_first_reads_the_stage_column(tmp_path: Path) -> None:
    path = tmp_path / "h.tsv"
    path.write_text("onset\tstage\n30\tN1\n0\tW\n", encoding="utf-8")
    assert read_label_file(path) == ["W", "N1"]


def test_epochs_before_the_first_onset_are_unscored(tmp_path: Path) -> None:
    rows = [("N2", 90.0), ("N1", 60.0), ("N3", 120.0)]
    assert read_label_file(write_rows(tmp_path / "late.csv", rows)) == [None, None, "N1", "N2", "N3"]


def test_a_file_without_onsets_keeps_its_row_order(tmp_path: Path) -> None:
    path = tmp_path / "plain.csv"
    path.write_text("stage,confidence\nREM,0.9\nW,0.8\n", encoding="utf-8")
    assert read_label_file(path) == ["REM", "W"]


@pytest.mark.parametrize(("rows", "message"), [
    ([("W", 0), ("N1", 30), ("N2", 30), ("N2", 60)],
     r"rows 3 and 4 \(onsets 30 and 30 s\) share an onset"),
    ([("W", 0), ("N1", 30), ("N2", 60), ("N2", 120), ("N3", 150)],
     r"rows 4 and 5 \(onsets 60 and 120 s\) leave a gap"),
    ([("W", 0), ("N1", 30), ("N2", 45), ("N2", 60), ("N3", 90), ("N3", 120)],
     r"rows 3 and 4 \(onsets 30 and 45 s\) overlap"),
    ([("W", -30), ("N1", 0)], r"row 2 has a negative onset \(-30 s\)"),
    ([("W", 15), ("N1", 45), ("N2", 75)], r"row 2's onset 15 s is off the 30-s grid"),
])
def test_onsets_off_one_grid_are_refused_naming_the_rows(tmp_path: Path, rows: list, message: str) -> None:
    with pytest.raises(LabelError, match=message) as err:
        read_label_file(write_rows(tmp_path / "bad.csv", rows))
    assert "\n" not in str(err.value)


def test_an_onset_that_is_not_a_number_names_its_row(tmp_path: Path) -> None:
    path = tmp_path / "clock.csv"
    path.write_text("stage,onset\nW,0\nN1,23:00:30\n", encoding="utf-8")
    with pytest.raises(LabelError, match=r"row 3 has onset '23:00:30', not a number of seconds"):
        read_label_file(path)


def test_reversed_rows_give_the_same_agreement(tmp_path: Path) -> None:
    """The issue's case: the simulator's file with its rows reversed gave kappa -0.13 instead of 0.92."""
    from passport_kit.inference.agreement import scorer_labels
    from passport_kit.validation import scored_night

    classes = ["W", "N1", "N2", "N3", "REM"]
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 5, 240)
    rows = [(classes[c], 30.0 * k) for k, c in enumerate(truth)]
    device = np.where(rng.random(240) < 0.9, truth, (truth + 1) % 5)
    onsets = 30.0 * np.arange(240)
    kappas = []
    for name, ordered in (("in_order", rows), ("reversed", rows[::-1])):
        ref = scorer_labels(write_rows(tmp_path / f"{name}.csv", ordered), classes, n_windows=240, window_seconds=30)
        kappas.append(scored_night(name, onsets, ref, device, classes, 30.0)["epoch_by_epoch"]["kappa"])
    assert kappas[0] > 0.8 and kappas[1] == kappas[0]
