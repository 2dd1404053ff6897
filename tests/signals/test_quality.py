"""Channel quality scores: simulated poor contacts are flagged, clean channels are not, CLI and exports."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.errors import DataError
from passport_kit.montage import Montage, resolve_montage
from passport_kit.signals import PreprocessConfig, simulate_dataset
from passport_kit.signals.preprocess import preprocess_array
from passport_kit.signals.quality import ChannelQuality, channel_quality, neighbour_weights, windows_quality
from passport_kit.signals.simulator.artifacts import corrupt_channel
from passport_kit.signals.simulator.recording import simulate_recording
from passport_kit.signals.windows import make_windows

#: 12 minutes per simulated night: 24 windows of 30 s, enough for medians.
EPOCHS = 24
REASON = {"noise": "line noise", "flat": "flat", "drift": "drift"}


@functools.lru_cache(maxsize=16)
def _clean_night(montage: str, subject: int, seed: int) -> np.ndarray:
    """Return one clean simulated night, ``(C, T)`` µV at 200 Hz (cached: tests share nights)."""
    data = simulate_recording(resolve_montage(montage), seed=seed, subject=subject, n_epochs=EPOCHS).data
    data.flags.writeable = False
    return data


def _simulated(montage: str, subject: int, bad: dict[str, str] | None = None, seed: int = 7) -> tuple[np.ndarray, Montage]:
    """Return ``(data (C, T) volts, montage)`` of a simulated night, with the simulator's own poor contacts."""
    m = resolve_montage(montage)
    data = np.array(_clean_night(montage, subject, seed))
    for c, (name, kind) in enumerate((bad or {}).items()):
        # The same corruption simulate_recording applies (docs/simulator.md, "Poor contacts").
        data[m.ch_names.index(name)] = corrupt_channel(data[m.ch_names.index(name)], kind, 200.0,
                                                       np.random.default_rng([seed, subject, c]))
    return data.astype(np.float64) * 1e-6, m


@pytest.mark.parametrize("kind", ["noise", "flat", "drift"])
@pytest.mark.parametrize(("montage", "channel"), [("eesm23-ear", "LT"), ("tuh-standard", "C3")])
def test_poor_contact_is_flagged_with_its_reason(montage: str, channel: str, kind: str) -> None:
    data, m = _simulated(montage, 0, {channel: kind})
    q = channel_quality(data, 200.0, m)
    assert q.bad_channels == [channel]
    assert any(REASON[kind] in r for r in q.reasons[m.ch_names.index(channel)])


@pytest.mark.parametrize("montage", ["eesm23-ear", "tuh-standard", "muse"])
def test_clean_subjects_have_no_bad_channels_and_few_bad_windows(montage: str) -> None:
    bad_channels, bad_windows, cells = 0, 0, 0
    for subject in range(3):
        data, m = _simulated(montage, subject, seed=11)
        q = channel_quality(data, 200.0, m)
        bad_channels += int(q.bad.sum())
        bad_windows += int(q.window_bad.sum())
        cells += q.window_bad.size
    # Measured (docs/quality.md): 0 bad channels; window level at most a few per cent on muse.
    assert bad_channels == 0
    assert bad_windows / cells < 0.10


def test_scores_are_in_unit_interval_with_documented_shapes() -> None:
    data, m = _simulated("eesm23-ear", 1, {"RB": "noise"})
    q = channel_quality(data, 200.0, m)
    n = EPOCHS
    assert q.score.shape == (4,) and q.window_score.shape == (n, 4)
    assert set(q.window_statistics) >= {"std_uv", "var_z_channels", "line_rel", "drift_rel", "neighbour_corr"}
    assert all(v.shape == (n, 4) for v in q.window_statistics.values())
    assert ((q.window_score >= 0) & (q.window_score <= 1)).all()
    assert ((q.score >= 0) & (q.score <= 1)).all()
    assert q.window_bad[:, 2].mean() > 0.9 and q.bad_window_fraction[2] == pytest.approx(q.window_bad[:, 2].mean())


def test_windows_input_scores_flat_and_leaves_raw_only_statistics_nan() -> None:
    data, m = _simulated("tuh-standard", 0, {"O1": "flat"})
    config = PreprocessConfig()
    x = make_windows(preprocess_array(data, 200.0, config), config)
    q = windows_quality(x, m, scale_uv=config.scale_uv)
    assert q.inputs == "windows" and q.bad_channels == ["O1"]
    assert np.isnan(q.statistics["line_rel"]).all() and np.isnan(q.statistics["drift_rel"]).all()


def test_instance_normalised_windows_skip_the_variance_statistics() -> None:
    data, m = _simulated("eesm23-ear", 0)
    config = PreprocessConfig(instance_norm=True)
    q = windows_quality(make_windows(preprocess_array(data, 200.0, config), config), m, instance_norm=True)
    assert np.isnan(q.window_statistics["var_z_channels"]).all()
    assert not q.bad.any()


def test_ear_channels_take_neighbours_from_their_own_ear() -> None:
    m = resolve_montage("eesm23-ear")                       # LB LT | RB RT, ears ~17 cm apart
    w, near = neighbour_weights(m)
    assert w[0, 1] > 0 and w[0, 2] == 0 and w[0, 3] == 0
    assert np.allclose(w, w.T) and near.all()


def test_channel_without_near_peer_falls_back_to_its_nearest_peer_unscored() -> None:
    m = resolve_montage("muse")                             # TP9 AF7 AF8 TP10: none within 8 cm of another
    w, near = neighbour_weights(m)
    dist = np.linalg.norm(m.positions[0] - m.positions, axis=1)
    nearest = int(np.argmin(np.where(np.arange(4) == 0, np.inf, dist)))
    assert np.count_nonzero(w[0]) == 1 and w[0, nearest] == 1.0
    assert not near.any()


def test_unscored_neighbour_correlation_is_still_reported() -> None:
    data, m = _simulated("muse", 0)
    q = channel_quality(data, 200.0, m)
    assert np.isfinite(q.statistics["neighbour_corr"]).all()
    assert (q.subscores["neighbour_corr"] == 1.0).all()


def test_bipolar_channel_neighbours_use_its_active_position() -> None:
    m = Montage.from_dict({"name": "bip", "units": "mm", "channels": [
        {"name": "C3", "position": [-67.1, 23.4, 104.5]},
        {"name": "C3-A2", "position": [-60.0, 20.0, 100.0], "reference_position": [88.0, 2.6, -26.9]},
        {"name": "A2", "position": [70.0, 2.6, -10.0]},
    ]})
    w, _ = neighbour_weights(m)
    assert w[1, 0] > 0 and w[1, 2] == 0


def test_channels_are_compared_with_peers_of_their_own_kind() -> None:
    data, m = _simulated("eesm23-ear", 0)
    ecg = Montage.from_dict({"name": "with-ecg", "units": "mm", "channels": [
        *({"name": ch.name, "position": [p * 1000 for p in ch.position]} for ch in m.channels),
        {"name": "ECG", "position": [0.0, -60.0, -80.0], "kind": "ecg"},
    ]})
    heart = np.sin(2 * np.pi * 1.1 * np.arange(data.shape[1]) / 200.0) * 800e-6   # large, unlike EEG
    q = channel_quality(np.vstack([data, heart]), 200.0, ecg)
    assert not q.bad.any()
    assert np.isnan(q.statistics["var_z_channels"][-1]) and np.isnan(q.statistics["neighbour_corr"][-1])


def test_mains_none_skips_line_noise() -> None:
    data, m = _simulated("eesm23-ear", 0, {"LB": "noise"})
    q = channel_quality(data, 200.0, m, notch_freq=None)
    assert np.isnan(q.statistics["line_rel"]).all()
    assert not any("line noise" in r for r in q.reasons[0])


def test_wrong_channel_count_is_a_data_error() -> None:
    data, m = _simulated("eesm23-ear", 0)
    with pytest.raises(DataError, match="data has 3 channels but montage 'eesm23-ear' has 4"):
        channel_quality(data[:3], 200.0, m)


def test_recording_shorter_than_a_window_is_a_data_error() -> None:
    data, m = _simulated("eesm23-ear", 0)
    with pytest.raises(DataError, match="shorter than one 30-s quality window"):
        channel_quality(data[:, :1000], 200.0, m)


# ------------------------------------------------------------------------------ exports

@pytest.fixture(scope="module")
def flat_quality() -> ChannelQuality:
    data, m = _simulated("eesm23-ear", 0, {"RT": "flat"})
    return channel_quality(data, 200.0, m)


def test_to_tsv_writes_bids_status_columns(flat_quality: ChannelQuality, tmp_path: Path) -> None:
    path = flat_quality.to_tsv(tmp_path / "sub-01_channels.tsv")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0].split("\t")[:4] == ["name", "status", "status_description", "score"]
    rows = {line.split("\t")[0]: line.split("\t") for line in lines[1:]}
    assert rows["RT"][1] == "bad" and rows["RT"][2].startswith("flat")
    assert rows["LB"][1:3] == ["good", "n/a"]
    assert not list(tmp_path.glob(".*tmp"))   # atomic write leaves no temp file


def test_to_json_is_strict_json_with_nan_as_null(flat_quality: ChannelQuality) -> None:
    payload = json.loads(flat_quality.to_json())
    assert payload["bad_channels"] == ["RT"]
    assert payload["channels"][0]["var_z_time"] is None    # not scored at recording level
    assert payload["thresholds"]["bad_below"] == 0.5


def test_to_frame_has_one_row_per_channel(flat_quality: ChannelQuality) -> None:
    frame = flat_quality.to_frame()
    assert list(frame["name"]) == ["LB", "LT", "RB", "RT"]
    assert list(frame["status"]) == ["good", "good", "good", "bad"]


# ------------------------------------------------------------------------------ real data

def test_injected_faults_in_a_real_recording_are_flagged(shared_data: Path) -> None:
    from passport_kit.signals import map_channels, read_recording

    m = resolve_montage("tuh-19")
    raw = read_recording(shared_data / "eegmat" / "Subject03_1.edf")
    data = map_channels(raw, m).get_data()
    sfreq = raw.info["sfreq"]
    clean = channel_quality(data, sfreq, m, window_seconds=10)
    assert clean.bad_channels == []
    rng = np.random.default_rng(0)
    t = np.arange(data.shape[1]) / sfreq
    faulty = data.copy()
    names = m.ch_names
    faulty[names.index("Fp1")] += 40e-6 * rng.standard_normal(t.size) + 100e-6 * np.sin(2 * np.pi * 50 * t)
    faulty[names.index("C4")] = 3e-6                                                 # disconnected input
    faulty[names.index("O2")] += 250e-6 * np.sin(2 * np.pi * 0.05 * t + 1.0)         # slow wander
    q = channel_quality(faulty, sfreq, m, window_seconds=10)
    assert q.bad_channels == ["Fp1", "C4", "O2"]
    assert "flat" in q.reasons[names.index("C4")][0]
    assert any("drift" in r for r in q.reasons[names.index("O2")])


# ------------------------------------------------------------------------------ CLI

@pytest.fixture(scope="module")
def sim_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("quality_sim")
    return simulate_dataset("eesm23-ear", folder, n_subjects=2, hours=0.25, seed=5, bad_channels="s02:LB:noise")


def test_cli_prints_a_table_per_recording(sim_folder: Path) -> None:
    result = CliRunner().invoke(app, ["data", "quality", str(sim_folder), "--montage", "eesm23-ear"])
    assert result.exit_code == 0, result.output
    assert "s01.edf" in result.output and "s02.edf" in result.output
    assert "bad channels: none" in result.output and "bad channels: LB" in result.output


def test_cli_writes_tsv_and_fails_on_bad_when_asked(sim_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "channels.tsv"
    result = CliRunner().invoke(app, ["data", "quality", str(sim_folder / "s02.edf"), "-m", "eesm23-ear",
                                      "--out", str(out), "--fail-on-bad"])
    assert result.exit_code == 1
    assert f"wrote {out}" in result.output
    assert out.read_text(encoding="utf-8").splitlines()[1].startswith("LB\tbad\t")


def test_cli_json_of_a_dataset_lists_every_recording(sim_folder: Path) -> None:
    result = CliRunner().invoke(app, ["data", "quality", str(sim_folder), "-m", "eesm23-ear", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert [r["bad_channels"] for r in payload["recordings"]] == [[], ["LB"]]


@pytest.mark.parametrize(("args", "message"), [
    (["nope.edf", "-m", "eesm23-ear"], "does not exist; give a recording file, a dataset folder or a dataset.yaml"),
    (["{folder}", "-m", "eesm23-ear", "--window-seconds", "0"], "--window-seconds must be positive"),
    (["{folder}", "-m", "tuh-19"], "the recording has:"),
])
def test_cli_user_errors_exit_2_with_one_line(sim_folder: Path, tmp_path: Path, args: list[str], message: str) -> None:
    args = [a.replace("{folder}", str(sim_folder)) if a != "nope.edf" else str(tmp_path / a) for a in args]
    result = CliRunner().invoke(app, ["data", "quality", *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_bipolar_channel_correlation_is_reported_not_scored() -> None:
    # eegmat's ear-to-ear derivation: its active electrode (A2) sits 4 cm from T4.
    m = Montage.from_dict({"name": "bip2", "units": "mm", "channels": [
        {"name": "T3", "position": [-80.0, -10.0, 0.0]},
        {"name": "T4", "position": [80.0, -10.0, 0.0]},
        {"name": "T6", "position": [70.0, -50.0, 0.0]},
        {"name": "A2-A1", "position": [85.0, -20.0, -40.0], "reference_position": [-85.0, -20.0, -40.0]},
    ]})
    w, near = neighbour_weights(m)
    assert near.tolist() == [False, True, True, False] and w[3, 1] > 0     # weights kept for the report
    assert (w[:3, 3] == 0).all()                        # monopolar channels never lean on the derivation
    rng = np.random.default_rng(0)
    common = rng.standard_normal(200 * 60)
    data = np.vstack([common + 0.3 * rng.standard_normal(common.size) for _ in range(3)]
                     + [rng.standard_normal(common.size)]) * 20e-6   # the derivation shares nothing with them
    q = channel_quality(data, 200.0, m)
    assert q.statistics["neighbour_corr"][3] < 0.2 and not q.bad.any()
    # ... and the correlation the uncorrelated-channel rule reads leaves it out (NaN), as it does T3 (no near peer).
    scored = q.window_neighbour_corr
    assert np.isnan(scored[:, [0, 3]]).all() and np.isfinite(scored[:, 1:3]).all()


@pytest.mark.parametrize(("notch", "line_ratio"), [("50", True), ("none", False)])
def test_cli_notch_sets_or_skips_the_line_noise_statistic(sim_folder: Path, notch: str, line_ratio: bool) -> None:
    result = CliRunner().invoke(app, ["data", "quality", str(sim_folder), "-m", "eesm23-ear", "--json", "--notch", notch])
    assert result.exit_code == 0, result.output
    values = [row["line_ratio"] for r in json.loads(result.output)["recordings"] for row in r["channels"]]
    assert values and (all(v is not None for v in values) if line_ratio else all(v is None for v in values))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_non_finite_samples_count_as_zero(dtype: type) -> None:
    data, m = _simulated("eesm23-ear", 1)
    broken = data.astype(dtype)
    broken[1, 300:340] = np.nan
    broken[2, 9000] = np.inf
    zeroed = broken.copy()
    zeroed[~np.isfinite(zeroed)] = 0.0
    a, b = channel_quality(broken, 200.0, m), channel_quality(zeroed, 200.0, m)
    for name, values in b.window_statistics.items():
        np.testing.assert_array_equal(a.window_statistics[name], values, err_msg=name)


def test_the_chunk_of_windows_changes_no_number(monkeypatch: pytest.MonkeyPatch) -> None:
    import passport_kit.signals.quality as quality

    data, m = _simulated("eesm23-ear", 2)
    by_chunk = {}
    for chunk in (1, 5, 64):
        monkeypatch.setattr(quality, "_CHUNK_WINDOWS", chunk)
        by_chunk[chunk] = channel_quality(data, 200.0, m).window_statistics
    for name, values in by_chunk[64].items():
        assert all(np.array_equal(by_chunk[c][name], values, equal_nan=True) for c in (1, 5)), name
