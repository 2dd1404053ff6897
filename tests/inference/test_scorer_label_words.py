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
