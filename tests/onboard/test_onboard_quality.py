"""Channel quality in check, adapt and predict (issue 8, item 1) and ``predict --mask-bad-channels``."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace

import edfio
import numpy as np
import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.contacts import channel_masks, quality_mask

from conftest import make_dataset

RUN = CliRunner()
BAD_SUBJECT, BAD_CHANNEL = "s02", "EL2"


@pytest.fixture(scope="module")
def noisy_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny dataset, with channel EL2 of s02 replaced by 300 µV RMS white noise (a loose contact)."""
    root = make_dataset(tmp_path_factory.mktemp("noisy") / "ds", n_subjects=3)
    edf = edfio.read_edf(root / f"{BAD_SUBJECT}.edf")
    rng = np.random.default_rng(7)
    signals = []
    for sig in edf.signals:
        data = sig.data
        if sig.label == BAD_CHANNEL:
            data = 300.0 * rng.standard_normal(data.size)
        signals.append(edfio.EdfSignal(data, sampling_frequency=sig.sampling_frequency, label=sig.label,
                                       physical_dimension="uV", physical_range=(-3000, 3000)))
    edfio.Edf(signals).write(root / f"{BAD_SUBJECT}.edf")
    return root


def test_check_lists_bad_channel_per_recording(montage_yaml: Path, noisy_dataset: Path, checkpoint: str) -> None:
    result = RUN.invoke(app, ["check", "--montage", str(montage_yaml), "--data", str(noisy_dataset),
                              "--checkpoint", checkpoint])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if "] channel quality:" in x)
    assert line.startswith("[WARN]") and f"{BAD_SUBJECT}.edf: {BAD_CHANNEL}" in line


@pytest.fixture(scope="module")
def noisy_adapt(session_home: Path, montage_yaml: Path, noisy_dataset: Path,
                tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("noisy_bundle") / "adapter"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PASSPORT_KIT_HOME", str(session_home))
        result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(noisy_dataset), "--checkpoint",
                              "tiny-mlp", "--max-steps", "2", "--batch-size", "8", "--out", str(out),
                                  "--no-progress"])
    return result, out


def test_adapt_prints_channel_quality(noisy_adapt) -> None:
    result, _ = noisy_adapt
    assert result.exit_code == 0, result.output
    assert f"channel quality: 1 of 3 recording(s) have bad channels ({BAD_SUBJECT}.edf: {BAD_CHANNEL})" in result.output


def test_adapt_counts_the_poor_contacts_it_masked_and_distrusted(noisy_adapt) -> None:
    result, out = noisy_adapt
    contacts = json.loads((out / "adapter.json").read_text())["metrics"]["poor_contacts"]
    # EL2 of s02 is white noise in all its 10 windows: uncorrelated with EL1 (masked) and low-scoring (distrusted).
    assert contacts["masked"] == 10 and contacts["distrusted"] >= 10
    assert contacts["channel_windows"] == 3 * 10 * 3
    assert (f"poor contacts in single windows: 10 masked, {contacts['distrusted']} distrusted of 90 channel-windows"
            in result.output)


def test_adapt_bundle_stores_quality_per_recording(noisy_adapt) -> None:
    _, out = noisy_adapt
    stored = json.loads((out / "adapter.json").read_text())["metrics"]["channel_quality"]
    assert set(stored) == {"s01.edf", "s02.edf", "s03.edf"}
    bad = stored[f"{BAD_SUBJECT}.edf"]
    assert bad["subject"] == BAD_SUBJECT and bad["bad_channels"] == [BAD_CHANNEL]
    assert bad["score"][BAD_CHANNEL] < 0.5 <= bad["score"]["EL1"]
    assert stored["s01.edf"]["bad_channels"] == []


# (predict options, the masking rule printed; None: no masking). The bundle was adapted with the defaults,
# so it masks channels uncorrelated with their neighbours (EL2 is white noise) unless told not to.
MASKINGS = [
    (["--mask-uncorrelated-channels", "none"], None),
    (["--mask-uncorrelated-channels", "none", "--mask-bad-channels", "0.5"], "quality below 0.5"),
    ([], "neighbour r below 0.2"),
    (["--mask-bad-channels", "0.5"], "quality below 0.5, neighbour r below 0.2"),
]


@pytest.mark.parametrize(("extra", "rule"), MASKINGS)
def test_predict_writes_channel_quality_tsv_and_summary(noisy_adapt, noisy_dataset: Path, tmp_path: Path,
                                                        extra: list[str], rule: str | None) -> None:
    _, bundle = noisy_adapt
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(noisy_dataset / f"{BAD_SUBJECT}.edf"), "--out",
                              str(tmp_path), *extra])
    assert result.exit_code == 0, result.output
    assert f"bad channels: {BAD_CHANNEL}" in result.output
    folder = tmp_path / BAD_SUBJECT
    rows = list(csv.DictReader((folder / f"{BAD_SUBJECT}_channel_quality.tsv").open(), delimiter="\t"))
    assert [r["name"] for r in rows] == ["EL1", "ER1", "EL2"]
    assert [r["status"] for r in rows] == ["good", "good", "bad"]
    summary = json.loads((folder / f"{BAD_SUBJECT}_summary.json").read_text())["channel_quality"]
    assert summary["bad_channels"] == [BAD_CHANNEL]
    if rule is None:
        assert summary["masking"] is None and "masked_windows" not in rows[0]
    else:
        assert summary["masking"]["masked_windows"] == {"EL1": 0, "ER1": 0, "EL2": 10}
        assert summary["masking"]["uncorrelated_below"] == (0.2 if "neighbour" in rule else None)
        assert [r["masked_windows"] for r in rows] == ["0", "0", "10"]
        assert f"masked ({rule}) in 10 windows" in result.output


def test_mask_changes_predictions_of_masked_windows_only(noisy_adapt, noisy_dataset: Path, tmp_path: Path) -> None:
    _, bundle = noisy_adapt
    probs = {}
    off = ["--mask-uncorrelated-channels", "none"]
    for name, extra in (("plain", off), ("masked", [*off, "--mask-bad-channels", "0.5"]), ("uncorrelated", [])):
        RUN.invoke(app, ["predict", "--adapter", str(bundle), str(noisy_dataset / f"{BAD_SUBJECT}.edf"),
                         str(noisy_dataset / "s01.edf"), "--out", str(tmp_path / name), *extra])
        probs[name] = {s: [float(r["p_W"]) for r in csv.DictReader((tmp_path / name / s / f"{s}_predictions.csv").open())]
                       for s in ("s01", BAD_SUBJECT)}
    for name in ("masked", "uncorrelated"):
        assert probs["plain"]["s01"] == probs[name]["s01"]
        assert probs["plain"][BAD_SUBJECT] != probs[name][BAD_SUBJECT]


@pytest.mark.parametrize("value", ["1.5", "-0.2", "abc"])
def test_predict_mask_threshold_is_validated(bundle: Path, dataset: Path, tmp_path: Path, value: str) -> None:
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), "--out", str(tmp_path),
                              "--mask-bad-channels", value])
    assert result.exit_code == 2
    assert "--mask-bad-channels" in result.output


@pytest.mark.parametrize(("onsets", "expected"), [
    ([0.0, 30.0, 60.0], [[False, True], [False, False], [False, False]]),  # window 2: both bad, kept
    ([30.0, 90.0], [[False, False], [False, False]]),                       # 90 s: past the scored grid
])
def test_quality_mask_places_windows_and_keeps_all_bad_windows(onsets: list[float], expected: list) -> None:
    score = np.array([[0.9, 0.2], [0.8, 0.7], [0.1, 0.3]])
    assert quality_mask(score, np.array(onsets), 30.0, 0.5).tolist() == expected


def _quality(score: list[list[float]], corr: list[list[float]]) -> SimpleNamespace:
    """A stand-in ChannelQuality: what channel_masks reads (score, scored neighbour correlation)."""
    return SimpleNamespace(window_score=np.array(score), window_neighbour_corr=np.array(corr))


def test_uncorrelated_channels_are_masked_where_scored_only() -> None:
    # Channel 0 shares nothing with its neighbours in window 0; channel 2's correlation is not scored (NaN).
    q = _quality([[0.0, 0.9, 0.9], [0.9, 0.9, 0.9]], [[0.05, 0.9, np.nan], [0.6, 0.9, np.nan]])
    masked, distrusted = channel_masks(q, np.array([0.0, 30.0]), 30.0, mask_uncorrelated=0.2)
    assert masked.tolist() == [[True, False, False], [False, False, False]] and distrusted is None
    nothing = channel_masks(q, np.array([0.0, 30.0]), 30.0)
    assert nothing == (None, None)


def test_mask_rules_add_up_but_never_mask_a_whole_window() -> None:
    q = _quality([[0.9, 0.3, 0.9], [0.3, 0.3, 0.9]], [[0.9, 0.9, 0.1], [0.9, 0.9, 0.1]])
    masked, distrusted = channel_masks(q, np.array([0.0, 30.0]), 30.0, mask_below=0.5, distrust_below=0.5,
                                       mask_uncorrelated=0.2)
    assert masked.tolist() == [[False, True, True], [False, False, False]]   # window 1: all three → none
    assert distrusted.tolist() == [[False, True, False], [True, True, False]]
