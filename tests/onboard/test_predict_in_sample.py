"""predict names a recording the adapter was trained on "in-sample" (issue 34, finding 6)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from passport_kit.cli.app import app
from tests.onboard.edf_helpers import rhythm_edf as _edf

RUN = CliRunner()


def test_a_training_recording_is_in_sample_and_its_agreement_says_so(tmp_path: Path, bundle: Path,
                                                                      dataset: Path) -> None:
    # A copy elsewhere under another name: the content, not the path, decides.
    copy = tmp_path / "night.edf"
    shutil.copyfile(dataset / "s01.edf", copy)
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(copy), "--labels", str(dataset / "s01.csv"),
                              "--out", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    assert "(in-sample: the adapter was trained on this recording)" in result.output
    assert "in-sample (a training recording, not a held-out score): kappa" in result.output
    summary = json.loads(next((tmp_path / "p").rglob("*_summary.json")).read_text())
    assert summary["in_sample"] is True and summary["scorer_agreement"]["in_sample"] is True


def test_a_new_recording_is_not_in_sample(tmp_path: Path, bundle: Path) -> None:
    new = _edf(tmp_path / "new.edf", ["EL1", "ER1", "EL2"], seed=99)
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(new), "--out", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    assert "in-sample" not in result.output
    summary = json.loads(next((tmp_path / "p").rglob("*_summary.json")).read_text())
    assert summary["in_sample"] is False


def test_predict_returns_the_probabilities(tmp_path: Path, bundle: Path, dataset: Path) -> None:
    import passport_kit as pk

    result = pk.predict(bundle, dataset / "s02.edf", tmp_path / "p")[0]
    assert result.proba.shape == (result.n_windows, len(result.classes))
    np.testing.assert_allclose(result.proba.sum(axis=1), 1.0, rtol=1e-5)
    assert result.onset_s.shape == (result.n_windows,)
