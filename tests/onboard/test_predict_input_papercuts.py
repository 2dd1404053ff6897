"""predict's small input faults are one line (issue 35, finding 7): no recordings, --label-map without --labels."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.errors import ConfigError


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
