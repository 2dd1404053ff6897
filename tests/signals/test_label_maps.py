"""Label maps, label files, R&K → AASM conversion, and label errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from passport_kit.errors import LabelError
from passport_kit.signals.labels import (
    AASM_CLASSES,
    LabelMap,
    encode_labels,
    get_label_map,
    identity_map,
    labels_from_intervals,
    majority_per_window,
    read_label_file,
)

CLASSES = list(AASM_CLASSES)


def _encode(values, map_name: str, n: int, **kw) -> list[int]:
    return encode_labels(values, get_label_map(map_name), CLASSES, n_windows=n, window_seconds=30.0, **kw).tolist()


@pytest.mark.parametrize(("map_name", "values", "expected"), [
    ("aasm", ["W", "N1", "N2", "N3", "REM"], [0, 1, 2, 3, 4]),
    ("aasm", ["wake", "n2", " R ", "Sleep stage 4", "Sleep stage ?"], [0, 2, 4, 3, -1]),
    ("aasm", ["Sleep stage W", "Sleep stage 1", "Sleep stage 2", "Sleep stage 3", "Sleep stage R"], [0, 1, 2, 3, 4]),
    ("eesm", ["1", "2", "3", "4", "5"], [0, 4, 1, 2, 3]),
    ("eesm", ["1", "6", "7", "8", "5"], [0, -1, -1, -1, 3]),       # EESM: other codes dropped
])
def test_builtin_maps(map_name: str, values: list[str], expected: list[int]) -> None:
    assert _encode(values, map_name, len(values)) == expected


@pytest.mark.parametrize(("five_s", "stage"), [
    (["5"] * 6, "W"),
    (["1", "0", "1", "0", "0", "1"], "N3"),           # S3 + S4 → N3
    (["2", "2", "2", "1", "0", "0"], "N2"),           # 3 × S2 vs 3 × (S3|S4 → N3): a tie goes to the first seen
    (["3", "3", "2", "2", "2", "4"], "N2"),
    (["S1", "S1", "S1", "S1", "REM", "W"], "N1"),
    (["-1", "-1", "-1", "-1", "5", "5"], None),       # mostly unscored stays unscored
])
def test_rk_five_second_values_become_30_s_aasm_epochs(five_s: list[str], stage: str | None) -> None:
    y = _encode(five_s, "rk", 1)
    assert y == [CLASSES.index(stage) if stage else -1]


def test_majority_tie_goes_to_the_first_value() -> None:
    assert majority_per_window(["A", "B", "B", "A"], 4) == ["A"]
    assert majority_per_window(["B", "A", "A", "B", "C", "C"], 3) == ["A", "C"]


def test_unknown_values_are_listed() -> None:
    with pytest.raises(LabelError, match=r"hyp\.csv: unknown label values 'N5', 'X' \(map 'aasm' knows .*\); add them to label_map"):
        encode_labels(["W", "N5", "X", "N5"], get_label_map("aasm"), CLASSES, n_windows=4, window_seconds=30.0, source="hyp.csv")


def test_without_a_map_values_must_be_class_names() -> None:
    with pytest.raises(LabelError, match=r"unknown label values 'sleep'"):
        encode_labels(["rest", "sleep"], identity_map(["rest", "task"]), ["rest", "task"], n_windows=2, window_seconds=10.0)


def test_a_map_that_knows_none_of_the_values_is_an_error() -> None:
    with pytest.raises(LabelError, match=r"unknown label values 'W'"):
        encode_labels(["W", "W"], get_label_map("eesm"), CLASSES, n_windows=2, window_seconds=30.0)


@pytest.mark.parametrize(("n_values", "map_name", "message"), [
    (958, "aasm", r"labels cover 958 values but the recording holds 960 30-s windows \(2 windows fewer\)"),
    (963, "aasm", r"\(3 windows more\)"),
    (357, "rk", r"labels cover 357 values of 5 s = 59\.5 30-s windows but the recording holds 60 30-s windows \(0\.5 windows fewer\)"),
])
def test_label_count_mismatch_says_by_how_many_windows(n_values: int, map_name: str, message: str) -> None:
    n_windows = 960 if map_name == "aasm" else 60
    values = ["W"] * n_values if map_name == "aasm" else ["5"] * n_values
    with pytest.raises(LabelError, match=message):
        _encode(values, map_name, n_windows)


def test_map_targets_outside_classes_are_refused() -> None:
    with pytest.raises(LabelError, match=r"label map gives classes N3, which are not in classes \[W, N2\]"):
        encode_labels(["5", "1"], get_label_map("eesm"), ["W", "N2"], n_windows=2, window_seconds=30.0)


def test_unknown_map_name() -> None:
    with pytest.raises(LabelError, match=r"unknown label map 'aasm2'; use one of aasm, eesm, rk"):
        get_label_map("aasm2")


@pytest.mark.parametrize(("text", "expected"), [
    ("W\nN1\nN2\n", ["W", "N1", "N2"]),
    ("[Hypnogram]\n5\n5\n4\n", ["5", "5", "4"]),                       # DREAMS header
    ("stage,confidence\nW,0.9\nN2,0.8\n", ["W", "N2"]),                # csv with header, first column
    ("W\t0\nN3\t30\n", ["W", "N3"]),                                   # tsv without header
    ("# scorer 1\n\n1\n2\n", ["1", "2"]),                              # comments and blank lines
])
def test_read_label_file_first_column(tmp_path: Path, text: str, expected: list[str]) -> None:
    path = tmp_path / "labels.txt"
    path.write_text(text, encoding="utf-8")
    assert read_label_file(path) == expected


def test_read_label_file_named_column(tmp_path: Path) -> None:
    path = tmp_path / "labels.tsv"
    path.write_text("epoch\tstaging\n1\tW\n2\tN2\n", encoding="utf-8")
    assert read_label_file(path, column="staging") == ["W", "N2"]
    with pytest.raises(LabelError, match=r"has no column 'stage'; its first row is epoch, staging"):
        read_label_file(path, column="stage")


def test_empty_label_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(LabelError, match=r"is empty; it needs one label per window"):
        read_label_file(path)


def test_intervals_label_the_windows_their_midpoints_fall_in() -> None:
    values = labels_from_intervals(np.array([0.0, 60.0, 95.0]), np.array([60.0, 30.0, 0.0]),
                                   ["Sleep stage W", "Sleep stage 1", "Lights on"], 5, 30.0)
    assert values == ["Sleep stage W", "Sleep stage W", "Sleep stage 1", "Lights on", None]


def test_unknown_values_error_offers_on_unknown_label_drop() -> None:
    # Listing values one error at a time can loop; the message names the way out.
    with pytest.raises(LabelError, match=r"or set 'on_unknown_label: drop'"):
        encode_labels(["W", "N5"], get_label_map("aasm"), CLASSES, n_windows=2, window_seconds=30.0)


def test_rk_looking_values_suggest_the_rk_map() -> None:
    with pytest.raises(LabelError, match=r"'label_map: rk' maps them and sets label_seconds: 5"):
        encode_labels(["5", "4", "3", "-1"], identity_map(CLASSES), CLASSES, n_windows=4, window_seconds=30.0)


def test_several_values_per_window_suggest_label_seconds() -> None:
    # What a user who mapped R&K values by hand meets next: six 5-s values per 30-s window.
    by_hand = LabelMap(name="dataset.yaml", mapping={"5": "W", "4": "REM"})
    with pytest.raises(LabelError, match=r"62 values for 10 windows look like one value per 5 s: set 'label_seconds: 5'"):
        encode_labels(["5"] * 60 + ["4", "4"], by_hand, CLASSES, n_windows=10, window_seconds=30.0)
