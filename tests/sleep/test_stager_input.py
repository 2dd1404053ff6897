"""What a sleep stager reads (issue 55 item 4): the recording's own signal at the stager's rate, alike in adapt and
predict; the windows only where there is no recording."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import mne
import numpy as np
import pytest
from scipy.signal import resample_poly

from passport_kit.montage import Montage
from passport_kit.signals import PreprocessConfig, load_dataset, load_recording
from passport_kit.sleep import StagerChoice, prior_log_proba
from passport_kit.sleep.priors import SleepPrior, night_signal

MONTAGE = Montage.from_dict({"name": "stager-input", "units": "mm", "channels": [
    {"name": "C4", "position": [65.3, 0.0, 60.4]},
    {"name": "M1", "position": [-80.0, -20.0, -40.0]},
    {"name": "E1", "position": [-30.0, 80.0, 0.0], "kind": "eog"},
    {"name": "ECG", "position": [0.0, -60.0, -80.0], "kind": "ecg"},
]})
#: The windows' preprocessing (band top under the slower file's Nyquist frequency).
CONFIG = PreprocessConfig(h_freq=20.0)
#: (up, down) from each file rate to 100 Hz, and to GSSC's 85.33 Hz.
RATIOS = {(256.0, 100.0): (25, 64), (50.0, 100.0): (2, 1), (256.0, 256 / 3): (1, 3), (50.0, 256 / 3): (128, 75)}


class _Recorder(SleepPrior):
    """A test stager at 100 Hz that keeps what it was given; its stages follow the signal (so parity is tested on
    the output too)."""

    name: ClassVar[str] = "record-test"
    native_rate: ClassVar[float] = 100.0
    calls: ClassVar[list[dict]] = []

    def night_log_proba(self, eeg_uv, sfreq, *, eog_uv=None, emg_uv=None):  # noqa: ANN001, ANN201
        type(self).calls.append({"stager": self.name, "eeg": np.array(eeg_uv), "sfreq": sfreq,
                                 "eog": None if eog_uv is None else np.array(eog_uv)})
        n = int(len(eeg_uv) // (30 * sfreq))
        epochs = np.asarray(eeg_uv[: int(n * 30 * sfreq)]).reshape(n, -1) if n else np.zeros((0, 1))
        scores = np.stack([epochs.mean(1) / 100, epochs.std(1) / 30, np.abs(epochs).max(1) / 200,
                           np.zeros(n), np.ones(n)], axis=1)
        return scores - np.log(np.exp(scores).sum(1, keepdims=True))


class _RecorderGssc(_Recorder):
    """The same at GSSC's rate (2560 samples per 30 s)."""

    name: ClassVar[str] = "record-test-gssc"
    native_rate: ClassVar[float] = 256 / 3


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    _Recorder.calls.clear()


def _recording(folder: Path, sfreq: float, seconds: float = 180.0) -> tuple[Path, np.ndarray]:
    """Write a FIF recording of MONTAGE's channels at ``sfreq`` and return it with its samples ``(4, T)`` in volts:
    a 10-Hz rhythm on a 200-µV offset with a slow drift (what our band-pass removes), per channel distinct."""
    rng = np.random.default_rng(int(sfreq))
    t = np.arange(int(seconds * sfreq)) / sfreq
    data = np.stack([200e-6 + 40e-6 * np.sin(2 * np.pi * (0.05 * t + 10 * t * (1 + k / 10))) + 30e-6 * np.sin(
        2 * np.pi * 0.1 * t) + 5e-6 * rng.standard_normal(len(t)) for k in range(4)])
    raw = mne.io.RawArray(data, mne.create_info(["C4", "M1", "E1", "ECG"], sfreq, ["eeg", "eeg", "eog", "ecg"]),
                          verbose="error")
    path = folder / f"night{int(sfreq)}_raw.fif"
    raw.save(path, verbose="error")
    return path, data


def _expected(data: np.ndarray, sfreq: float, rate: float) -> np.ndarray:
    """Return the rows of ``data`` (volts) in µV resampled from ``sfreq`` to ``rate`` (scipy, independently)."""
    up, down = RATIOS[(sfreq, rate)]
    return resample_poly(data * 1e6, up, down, axis=1, padtype="line")


SPEC = StagerChoice("record-test", "C4", eog="E1", eeg_ref="M1")


@pytest.mark.parametrize("sfreq", [256.0, 50.0])
def test_the_stager_reads_the_files_own_signal_at_its_rate_not_the_filtered_windows(tmp_path: Path,
                                                                                  sfreq: float) -> None:
    from passport_kit.onboard.ladder_inputs import spec_prior

    path, data = _recording(tmp_path, sfreq)
    spec_prior(load_recording(path, MONTAGE, CONFIG, cache=False), SPEC.as_dict())
    (call,) = _Recorder.calls
    expected = _expected(data, sfreq, 100.0)
    assert call["sfreq"] == 100.0
    assert len(call["eeg"]) == len(expected[0])
    np.testing.assert_allclose(call["eeg"], expected[0] - expected[1], atol=1e-3)  # C4 - M1, µV
    np.testing.assert_allclose(call["eog"], expected[2], atol=1e-3)
    assert abs(call["eeg"].mean()) < 20 and abs(call["eog"].mean() - 200) < 5  # the offset is the file's, unfiltered


def test_adapt_and_predict_give_the_stager_the_same_signal_and_stages(tmp_path: Path) -> None:
    """adapt (a dataset's WindowSet, its file read again), predict (a bundle stacking the prior: the recording read
    once) and predict --zero-shot read one file alike; an average of stagers at two rates too."""
    from passport_kit.inference.recording import head_stager_rates, night_prior, read_for_prediction
    from passport_kit.inference.zero_shot import predict_zero_shot
    from passport_kit.onboard.ladder_inputs import spec_prior

    path, data = _recording(tmp_path, 256.0)
    (tmp_path / "stages.csv").write_text("stage\n" + "\n".join(["W", "N2", "N3", "N2", "REM", "W"]) + "\n")
    (tmp_path / "dataset.yaml").write_text("task: sleep-staging\nwindow_seconds: 30\nrecordings:\n"
                                           f"  - subject: s1\n    file: {path.name}\n    labels: stages.csv\n")
    windows = load_dataset(tmp_path, MONTAGE, CONFIG)
    both = SPEC.with_name("record-test+record-test-gssc")
    fitted = {s.name: spec_prior(windows, s.as_dict()) for s in (SPEC, both)}
    at_fit = list(_Recorder.calls)
    assert spec_prior(windows, both.as_dict()) is fitted[both.name] and len(_Recorder.calls) == 2  # kept, not re-run
    _Recorder.calls.clear()
    predicted = {}
    for spec in (SPEC, both):
        head = SimpleNamespace(n_prior=5, prior=spec.as_dict())
        night = read_for_prediction(path, MONTAGE, CONFIG, stager_rates=head_stager_rates(head))
        predicted[spec.name] = night_prior(head, night, MONTAGE)
    at_predict = list(_Recorder.calls)
    assert [c["sfreq"] for c in at_fit] == [100.0, 256 / 3]  # each stager once, at its own rate
    assert [(c["stager"], c["sfreq"]) for c in at_predict] == [("record-test", 100.0), ("record-test", 100.0),
                                                                ("record-test-gssc", 256 / 3)]
    for fit, pred in zip(at_fit, at_predict[1:]):
        assert np.array_equal(fit["eeg"], pred["eeg"]) and np.array_equal(fit["eog"], pred["eog"])
    for name, logp in fitted.items():
        assert np.array_equal(logp, predicted[name])
    np.testing.assert_allclose(at_fit[1]["eeg"], (lambda e: e[0] - e[1])(_expected(data, 256.0, 256 / 3)), atol=1e-3)

    _Recorder.calls.clear()
    predict_zero_shot(MONTAGE, [path], tmp_path / "out", stager="record-test")
    zero = StagerChoice("record-test", "C4", eog="E1")  # the channel a zero-shot picks, as it is
    (call,) = _Recorder.calls
    _Recorder.calls.clear()
    spec_prior(windows, zero.as_dict())
    assert call["sfreq"] == 100.0 and np.array_equal(call["eeg"], _Recorder.calls[0]["eeg"])
    _Recorder.calls.clear()
    predict_zero_shot(MONTAGE, [path], tmp_path / "out2", stager="record-test+record-test-gssc")
    assert [c["sfreq"] for c in _Recorder.calls] == [100.0, 256 / 3]


def test_only_the_channels_a_stager_reads_are_kept_at_its_rate_as_float32(tmp_path: Path) -> None:
    from passport_kit.inference.recording import read_for_prediction

    path, data = _recording(tmp_path, 256.0)
    night = read_for_prediction(path, MONTAGE, CONFIG, stager_rates=(100.0,))
    kept = night.stager_signal(100.0)
    assert kept.names == ("C4", "M1", "E1") and kept.data.dtype == np.float32 and kept.sfreq == 100.0
    assert kept.data.shape == (3, data.shape[1] * 25 // 64)
    assert read_for_prediction(path, MONTAGE, CONFIG).stager == {}  # nothing kept where no stager reads it


def test_without_the_recording_the_stager_reads_the_windows(tmp_path: Path) -> None:
    """The fallback: windows made elsewhere (no stager_sources), or a night read without a stager's rates."""
    from passport_kit.inference.recording import night_prior, read_for_prediction
    from passport_kit.onboard.ladder_inputs import spec_prior

    path, _ = _recording(tmp_path, 256.0)
    windows = dataclasses.replace(load_recording(path, MONTAGE, CONFIG, cache=False), stager_sources=None)
    spec_prior(windows, SPEC.as_dict())
    night = read_for_prediction(path, MONTAGE, CONFIG)
    night_prior(SimpleNamespace(n_prior=5, prior=SPEC.as_dict()), night, MONTAGE)
    x, onsets = np.asarray(windows.x), np.asarray(windows.onset_s)
    laid_out = night_signal(x, onsets, 0) - night_signal(x, onsets, 1)
    for call in _Recorder.calls:
        assert call["sfreq"] == 200.0 and np.array_equal(call["eeg"], laid_out)
    with pytest.raises(ValueError, match="windows x or the recording"):
        prior_log_proba(_Recorder(), None, onsets, list(MONTAGE.ch_names), SPEC, window_seconds=30.0)


def test_a_channel_no_stager_reads_is_refused_in_one_line(tmp_path: Path) -> None:
    from passport_kit.errors import ConfigError
    from passport_kit.onboard.ladder_inputs import spec_prior

    path, _ = _recording(tmp_path, 256.0)
    with pytest.raises(ConfigError, match="ECG.*not EEG, EOG or EMG"):
        spec_prior(load_recording(path, MONTAGE, CONFIG, cache=False), StagerChoice("record-test", "ECG").as_dict())


def test_a_recording_in_memory_or_from_the_window_cache_reaches_the_stager_as_its_file_would(tmp_path: Path) -> None:
    from passport_kit.onboard.ladder_inputs import spec_prior

    path, data = _recording(tmp_path, 256.0)
    spec_prior(load_recording(path, MONTAGE, CONFIG, cache=False), SPEC.as_dict())
    spec_prior(load_recording((data, 256.0, ["C4", "M1", "E1", "ECG"]), MONTAGE, CONFIG), SPEC.as_dict())
    load_recording(path, MONTAGE, CONFIG)
    spec_prior(load_recording(path, MONTAGE, CONFIG), SPEC.as_dict())  # windows from the cache: the file opened now
    from_file, in_memory, cached = _Recorder.calls
    assert in_memory["sfreq"] == 100.0 and np.array_equal(cached["eeg"], from_file["eeg"])
    np.testing.assert_allclose(in_memory["eeg"], from_file["eeg"], atol=1e-3)  # FIF holds float32 samples
