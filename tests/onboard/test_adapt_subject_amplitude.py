"""adapt warns when one training subject's amplitude is far from the others' (issue 46, item 6)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.signals.amplitude import subject_amplitude_outliers

RUN = CliRunner()


def _quality(uv: float, n: int = 8) -> SimpleNamespace:
    return SimpleNamespace(window_statistics={"band_uv": np.full((n, 3), uv), "std_uv": np.full((n, 3), uv)},
                           thresholds=SimpleNamespace(flat_std_uv=0.1))


@pytest.mark.parametrize(("scale", "warned"), [(10.0, True), (0.1, True), (3.0, False)])
def test_a_subject_far_from_the_others_is_named(scale: float, warned: bool) -> None:
    qualities = {"a.edf": _quality(20.0), "b.edf": _quality(25.0), "c.edf": _quality(18.0), "d.edf": _quality(20 * scale)}
    subject_of = {"a.edf": "s01", "b.edf": "s02", "c.edf": "s03", "d.edf": "s04"}
    found = subject_amplitude_outliers(qualities, subject_of)
    assert list(found) == (["s04"] if warned else [])


def test_two_subjects_cannot_tell_which_is_off() -> None:
    assert subject_amplitude_outliers({"a": _quality(20.0), "b": _quality(200.0)}, {"a": "s01", "b": "s02"}) == {}


def test_adapt_warns_about_a_subject_at_ten_times(tmp_path: Path, montage_yaml: Path, session_home: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 46: a subject at x10 was trained on silently (expected kappa 0.818 -> 0.507), loosening the guard.
    import edfio

    from tests.onboard.conftest import make_dataset

    monkeypatch.setenv("PASSPORT_KIT_HOME", str(session_home))
    data = make_dataset(tmp_path / "data")
    edf = edfio.read_edf(data / "s03.edf")
    for signal in edf.signals:
        signal.update_data(signal.data * 10)
    edf.write(data / "s03.edf")
    out = tmp_path / "adapter"
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(data), "--checkpoint", "tiny-mlp",
                              "--max-steps", "2", "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "training subject s03's 1-40 Hz amplitude" in result.output and "x that of the other subjects" in result.output
    recorded = json.loads((out / "adapter.json").read_text())["metrics"]["warnings"]
    assert any("training subject s03's" in w for w in recorded)


def test_a_channel_flat_in_every_window_is_named_not_the_labels() -> None:
    # Issue 46: a channel flat in every training subject gave "no labeled training windows; check the labels".
    from passport_kit.errors import DataError
    from passport_kit.onboard.run import usable_windows
    from passport_kit.signals.windows import FLAG_FLAT

    flags = np.zeros((4, 3), dtype=np.uint8)
    flags[:, 1] = FLAG_FLAT
    windows = SimpleNamespace(y=np.array([0, 1, 0, -1]), flags=flags,
                              montage=SimpleNamespace(ch_names=["EL1", "ER1", "EL2"]))
    with pytest.raises(DataError, match=r"every labeled window has a flat or NaN channel \(ER1 in every one\)"):
        usable_windows(windows)
    assert usable_windows(windows, skip_flagged=False).tolist() == [True, True, True, False]
    flags[0, 1] = 0  # one usable window: trained on it, as before
    assert usable_windows(windows).tolist() == [True, False, False, False]
