"""`check` reports a label file's fault under its labels contract, not under channels (issue 57, item 7)."""

from __future__ import annotations

from pathlib import Path

from passport_kit.onboard.check import check
from tests.onboard.conftest import make_dataset


def test_an_unknown_label_value_fails_the_labels_contract(tmp_path: Path, montage_yaml: Path, checkpoint: str) -> None:
    data = make_dataset(tmp_path / "data", n_subjects=1, n_epochs=5)
    (data / "s01.csv").write_text("W\nN1\nnan\nN3\nREM\n")
    report = check(str(montage_yaml), data, checkpoint)
    failed = {item.name: item.detail for item in report.failures}
    assert list(failed) == ["labels"] and "unknown label values 'nan'" in failed["labels"]
