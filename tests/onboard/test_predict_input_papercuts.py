"""predict's small input faults are one line (issue 35, finding 7): no recordings, --label-map without --labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import passport_kit as pk
from passport_kit.cli.app import app
from passport_kit.errors import ConfigError, DataError


@pytest.mark.parametrize("recordings", [None, []])
def test_predict_without_recordings_is_a_config_error(bundle: Path, tmp_path: Path, recordings: object) -> None:
    import passport_kit as pk

    # Issue 35: pk.predict(None) raised TypeError.
    with pytest.raises(ConfigError, match="no recordings given"):
        pk.predict(bundle, recordings, out=tmp_path / "pred")


def test_label_map_without_labels_is_refused(bundle: Path, tmp_path: Path) -> None:
    from tests.onboard.conftest import CLASSES, write_recording

    night = write_recording(tmp_path / "n.edf", [CLASSES[i % 5] for i in range(4)], ["EL1", "ER1", "EL2"], seed=2)
    result = CliRunner().invoke(app, ["predict", "--adapter", str(bundle), str(night), "--label-map", "rk",
                                      "--out", str(tmp_path / "pred")])
    assert result.exit_code == 2 and "--label-map rk (label_map) says how to read --labels files" in result.output
    assert not (tmp_path / "pred").exists()


def test_the_python_api_writes_nothing_into_the_current_folder_unasked(bundle: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 35: pk.predict without out wrote ./predictions.
    import tempfile

    import passport_kit as pk
    from tests.onboard.conftest import CLASSES, write_recording

    night = write_recording(tmp_path / "n.edf", [CLASSES[i % 5] for i in range(4)], ["EL1", "ER1", "EL2"], seed=2)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    result = pk.predict(bundle, night)[0]
    assert list(work.iterdir()) == []
    assert result.files["summary"].is_file()
    assert result.files["summary"].is_relative_to(tmp_path / "tmp")


def test_an_adapter_that_is_no_path_is_a_config_error(tmp_path: Path) -> None:
    # Issue 46: pk.predict(None, ...) raised TypeError from pathlib.
    with pytest.raises(ConfigError, match="adapter must be the folder of an adapter bundle"):
        pk.predict(None, tmp_path / "x.edf", tmp_path / "out")


def test_an_array_without_channel_names_is_a_data_error(bundle: Path, tmp_path: Path) -> None:
    # Issue 46: pk.predict('b', (X, 200.0, None)) raised TypeError.
    with pytest.raises(DataError, match="ch_names must be a list of channel names"):
        pk.predict(bundle, (np.zeros((3, 200 * 60)), 200.0, None), tmp_path / "out")


def test_a_scorer_file_that_is_no_labels_is_shown_in_short(tmp_path: Path) -> None:
    # Issue 46: `predict --labels /etc/passwd` printed 8 whole lines of it.
    from passport_kit.errors import LabelError
    from passport_kit.inference.agreement import scorer_labels

    lines = [f"user{k}:x:{k}:{k}:secret-home-folder-{k}:/home/user{k}:/bin/bash" for k in range(10)]
    (tmp_path / "passwd").write_text("\n".join(lines) + "\n")
    with pytest.raises(LabelError) as caught:
        scorer_labels(tmp_path / "passwd", ["W", "N1", "N2", "N3", "REM"], n_windows=10, window_seconds=30.0)
    message = str(caught.value)
    assert "and 7 more" in message and "secret-home-folder" not in message and "/bin/bash" not in message
