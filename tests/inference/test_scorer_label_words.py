"""A --labels file's path faults are said in the words of the command line (issue 57, item 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from passport_kit.errors import LabelError
from passport_kit.inference.agreement import scorer_labels


@pytest.mark.parametrize("make", [lambda p: p, lambda p: (p.mkdir(), p)[1]])
def test_a_missing_or_folder_labels_file_names_the_option_not_dataset_yaml(tmp_path: Path, make) -> None:  # noqa: ANN001
    path = make(tmp_path / "night.csv")
    with pytest.raises(LabelError) as caught:
        scorer_labels(path, ["W", "N1", "N2", "N3", "REM"], n_windows=4, window_seconds=30.0)
    assert "--labels" in str(caught.value) and "dataset.yaml" not in str(caught.value)


def test_a_labels_file_far_longer_than_the_night_is_refused_before_parsing(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 57: a 56 MB --labels file took 89 s before its one-line refusal; its lines are counted before any is split.
    import passport_kit.signals.labels as labels

    def no_parsing(*args: object) -> None:
        raise AssertionError("a label line was split: the file was parsed before its size was judged")

    monkeypatch.setattr(labels, "_split", no_parsing)
    path = tmp_path / "night.csv"
    path.write_text("stage\n" + "W\n" * 20_000, encoding="utf-8")
    with pytest.raises(LabelError, match=r"has 20,002 lines, more than labels of this recording take \(at most 2,400"):
        scorer_labels(path, ["W", "N1", "N2", "N3", "REM"], n_windows=40, window_seconds=30.0)


def test_a_labels_file_of_far_more_bytes_than_the_night_takes_is_not_read(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # One long line (no newline to count): refused by its size before a byte of it is read.
    path = tmp_path / "night.csv"
    path.write_text("W," * 300_000, encoding="utf-8")
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail(f"{self} was read"))
    with pytest.raises(LabelError, match=r"has 600,000 bytes, more than labels of this recording take \(at most 480,000"):
        scorer_labels(path, ["W", "N1", "N2", "N3", "REM"], n_windows=40, window_seconds=30.0)
