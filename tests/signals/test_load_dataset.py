"""load_dataset / load_recording end to end: dataset.yaml, discovery, BIDS, and the errors a user can cause."""

from __future__ import annotations

from pathlib import Path

import mne
import numpy as np
import pytest
from signals_helpers import synthetic_raw, write_edf

from passport_kit.errors import ChannelMappingError, ConfigError, DataError, LabelError
from passport_kit.signals import PreprocessConfig, WindowSet, load_dataset, load_recording

CH = ["C3", "C4", "O1"]


def _edf(folder: Path, name: str, *, seconds: float = 90.0, ch: list[str] = CH, seed: int = 0,
         annotations: mne.Annotations | None = None) -> Path:
    return write_edf(synthetic_raw(ch, seconds=seconds, seed=seed, annotations=annotations), folder / name)


def _hyp(folder: Path, name: str, values: list[str]) -> Path:
    path = folder / name
    path.write_text("\n".join(values) + "\n", encoding="utf-8")
    return path


def test_sleep_staging_dataset_yaml(tmp_path: Path, montage, write_dataset) -> None:
    _edf(tmp_path, "s01.edf", seed=1)
    _edf(tmp_path, "s02.edf", seed=2, ch=["EEG C3-REF", "EEG C4-REF", "left occipital"])
    _hyp(tmp_path, "s01_hyp.csv", ["1", "3", "4"])
    _hyp(tmp_path, "s02_hyp.csv", ["5", "2", "7"])
    write_dataset({
        "task": "sleep-staging", "window_seconds": 30, "classes": ["W", "N1", "N2", "N3", "REM"], "label_map": "eesm",
        "recordings": [
            {"subject": "s01", "file": "s01.edf", "labels": "s01_hyp.csv"},
            {"subject": "s02", "file": "s02.edf", "labels": "s02_hyp.csv", "channels": {"O1": "left occipital"}},
        ],
    })
    ws = load_dataset(tmp_path, montage)
    assert isinstance(ws, WindowSet)
    assert ws.x.shape == (6, 3, 30, 200)
    assert ws.y.tolist() == [0, 1, 2, 3, 4, -1]
    assert ws.subject.tolist() == ["s01"] * 3 + ["s02"] * 3
    assert ws.recording.tolist() == ["s01.edf"] * 3 + ["s02.edf"] * 3
    assert ws.onset_s.tolist() == [0.0, 30.0, 60.0] * 2
    assert ws.flags.shape == (6, 3) and ws.flags.dtype == np.uint8
    assert ws.classes == ["W", "N1", "N2", "N3", "REM"]
    assert ws.class_counts() == {"W": 1, "N1": 1, "N2": 1, "N3": 1, "REM": 1}
    assert ws.montage is montage and ws.config == PreprocessConfig()


def test_classification_one_label_per_recording(tmp_path: Path, montage, write_dataset) -> None:
    _edf(tmp_path, "a.edf", seconds=40)
    _edf(tmp_path, "b.edf", seconds=30)
    write_dataset({"task": "classification", "window_seconds": 10, "recordings": [
        {"subject": "p1", "file": "a.edf", "label": "rest"}, {"subject": "p1", "file": "b.edf", "label": "task"}]})
    ws = load_dataset(tmp_path, montage)
    assert ws.classes == ["rest", "task"]  # found from the labels, sorted
    assert ws.y.tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert ws.config.window_seconds == 10


def test_dreams_text_through_dataset_yaml(tmp_path: Path, write_dataset) -> None:
    from passport_kit.montage import Montage

    raw = synthetic_raw(["C3-A1"], sfreq=100.0, seconds=60.0)
    lines = ["[C3-A1]"] + [f"{v:.4f}" for v in raw.get_data()[0] * 1e6]
    (tmp_path / "excerpt.txt").write_text("\n".join(lines), encoding="ascii")
    _hyp(tmp_path, "hyp.txt", ["[Hypnogram]"] + ["5"] * 6 + ["2"] * 4 + ["3"] * 2)
    write_dataset({"label_map": "rk", "recordings": [
        {"subject": "d1", "file": "excerpt.txt", "sfreq": 100, "labels": "hyp.txt"}]})
    m = Montage.from_dict({"name": "c3", "units": "mm", "channels": [
        {"name": "C3-A1", "position": [-67.1, 23.4, 104.5], "reference_position": [-87.9, 2.6, -26.9]}]})
    ws = load_dataset(tmp_path, m, PreprocessConfig(h_freq=45.0))
    assert ws.y.tolist() == [0, 2]
    assert ws.x.shape == (2, 1, 30, 200)


# ---------------------------------------------------------------------- discovery and BIDS

def test_discovers_same_stem_hypnograms(tmp_path: Path, montage) -> None:
    _edf(tmp_path, "n1.edf")
    _hyp(tmp_path, "n1_hypnogram.csv", ["W", "N2", "REM"])
    _edf(tmp_path, "n2-PSG.edf")
    _hyp(tmp_path, "n2.txt", ["N3", "N3", "N1"])
    ws = load_dataset(tmp_path, montage)
    assert ws.subject.tolist() == ["n1"] * 3 + ["n2"] * 3
    assert [ws.classes[i] for i in ws.y] == ["W", "N2", "REM", "N3", "N3", "N1"]


def test_discovers_edf_plus_annotations_sleep_edf_style(tmp_path: Path, montage) -> None:
    ann = mne.Annotations([0, 60, 80], [60, 30, 0], ["Sleep stage W", "Sleep stage 4", "Lights on"])
    _edf(tmp_path, "SC4001E0-PSG.edf", annotations=ann)
    ws = load_dataset(tmp_path, montage)
    assert [ws.classes[i] for i in ws.y] == ["W", "W", "N3"]
    assert ws.subject.tolist() == ["SC4001E0"] * 3


def test_discovers_a_sleep_edf_hypnogram_file(tmp_path: Path, montage) -> None:
    _edf(tmp_path, "SC4001E0-PSG.edf")
    hyp = mne.io.RawArray(np.zeros((1, 900)), mne.create_info(["x"], 10.0, "misc"), verbose="error")
    hyp.set_annotations(mne.Annotations([0, 30], [30, 60], ["Sleep stage 2", "Sleep stage R"]))
    write_edf(hyp, tmp_path / "SC4001EC-Hypnogram.edf")
    ws = load_dataset(tmp_path, montage)
    assert len(set(ws.recording.tolist())) == 1  # the hypnogram is not a recording
    assert [ws.classes[i] for i in ws.y] == ["N2", "REM", "REM"]


def test_discovered_folder_without_labels_is_unlabeled(tmp_path: Path, montage) -> None:
    _edf(tmp_path, "a.edf")
    ws = load_dataset(tmp_path, montage)
    assert ws.classes == [] and (ws.y == -1).all()


@pytest.mark.filterwarnings("ignore:No events found:RuntimeWarning")
def test_bids_dataset_with_events_label_column(tmp_path: Path, montage, write_dataset) -> None:
    import mne_bids

    root = tmp_path / "bids"
    for sub, stages in (("01", ["1", "4", "2"]), ("02", ["5", "5", "3"])):
        src = mne.io.read_raw_edf(_edf(tmp_path, f"src{sub}.edf"), verbose="error")
        src.info["line_freq"] = 50
        bp = mne_bids.BIDSPath(subject=sub, task="sleep", datatype="eeg", root=root)
        mne_bids.write_raw_bids(src, bp, format="EDF", allow_preload=False, verbose=False)
        events = bp.copy().update(suffix="events", extension=".tsv").fpath
        rows = ["onset\tduration\ttrial_type\tstaging"] + [f"{30 * i}\t30\tsleep\t{s}" for i, s in enumerate(stages)]
        events.write_text("\n".join(rows) + "\n", encoding="utf-8")
    write_dataset({"task": "sleep-staging", "label_map": "eesm", "label_column": "staging"}, root)
    ws = load_dataset(root, montage)
    assert ws.subject.tolist() == ["sub-01"] * 3 + ["sub-02"] * 3
    assert [ws.classes[i] for i in ws.y] == ["W", "N2", "REM", "N3", "N3", "N1"]


# ------------------------------------------------------------------------------- errors

def test_label_count_mismatch_through_the_pipeline(tmp_path: Path, montage, write_dataset) -> None:
    _edf(tmp_path, "s01.edf", seconds=120)
    _hyp(tmp_path, "h.csv", ["W", "W"])
    write_dataset({"label_map": "aasm", "recordings": [{"subject": "s01", "file": "s01.edf", "labels": "h.csv"}]})
    with pytest.raises(LabelError, match=r"h\.csv': labels cover 2 values but the recording holds 4 30-s windows \(2 windows fewer\)"):
        load_dataset(tmp_path, montage)


def test_a_label_file_far_longer_than_its_recording_is_refused_before_parsing(tmp_path: Path, montage, write_dataset,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 57: a 56 MB label file was parsed for 89 s before its count was refused; now its lines are counted first.
    import passport_kit.signals.labels as labels

    def no_parsing(*args: object) -> None:
        raise AssertionError("a label line was split: the file was parsed before its size was judged")

    monkeypatch.setattr(labels, "_split", no_parsing)
    _edf(tmp_path, "s01.edf", seconds=120)
    _hyp(tmp_path, "h.csv", ["W"] * 5000)  # 4 windows of 30 s: at most 1000 lines
    write_dataset({"label_map": "aasm", "recordings": [{"subject": "s01", "file": "s01.edf", "labels": "h.csv"}]})
    with pytest.raises(LabelError, match=r"h\.csv' has 5,001 lines, more than labels of this recording take \(at most 1,000"):
        load_dataset(tmp_path, montage)


def test_unknown_label_values_through_the_pipeline(tmp_path: Path, montage, write_dataset) -> None:
    _edf(tmp_path, "s01.edf")
    _hyp(tmp_path, "h.csv", ["W", "Stage 2", "?"])
    write_dataset({"recordings": [{"subject": "s01", "file": "s01.edf", "labels": "h.csv"}]})
    with pytest.raises(LabelError, match=r"unknown label values '\?', 'Stage 2'"):
        load_dataset(tmp_path, montage)


def test_recording_shorter_than_a_window(tmp_path: Path, montage, write_dataset) -> None:
    _edf(tmp_path, "short.edf", seconds=20)
    write_dataset({"recordings": [{"subject": "s", "file": "short.edf"}]})
    with pytest.raises(DataError, match=r"short\.edf': recording is 20\.0 s long, shorter than one window of 30 s"):
        load_dataset(tmp_path, montage)


def test_missing_channel_through_the_pipeline(tmp_path: Path, montage) -> None:
    _edf(tmp_path, "s.edf", ch=["Fz", "Cz"])
    with pytest.raises(ChannelMappingError, match=r"needs C3, C4, O1, not found .* the recording has: Fz, Cz"):
        load_recording(tmp_path / "s.edf", montage)


def test_low_sampling_rate_through_the_pipeline(tmp_path: Path, montage) -> None:
    write_edf(synthetic_raw(CH, sfreq=100.0, seconds=60), tmp_path / "slow.edf")
    with pytest.raises(DataError, match=r"sampling rate 100 Hz .*lower h_freq to 45 Hz"):
        load_recording(tmp_path / "slow.edf", montage)


def test_window_seconds_disagreement(tmp_path: Path, montage, write_dataset) -> None:
    _edf(tmp_path, "s.edf")
    write_dataset({"window_seconds": 30, "recordings": [{"subject": "s", "file": "s.edf"}]})
    with pytest.raises(ConfigError, match=r"dataset\.yaml says window_seconds 30 but the preprocessing config uses 10"):
        load_dataset(tmp_path, montage, PreprocessConfig(window_seconds=10))


@pytest.mark.parametrize(("text", "message"), [
    ("task: sleep-staging\nrecordings:\n  - subject: s\n    file: [unclosed\n", r"malformed .*dataset\.yaml at line \d+, column \d+"),
    ("- just\n- a list\n", r"expected a mapping of keys .* got list"),
    ("task: regression\nrecordings: []\n", r"malformed .*dataset\.yaml: task: Input should be 'sleep-staging' or 'classification'"),
    ("recordings:\n  - subject: s1\n    fil: s.edf\n", r"recordings\[0\] \(s1\)\.file: Field required"),
    ("recordings:\n  - {subject: s1, file: s.edf, label: W, labels: h.csv}\n", r"give either 'labels' \(a file\) or 'label'"),
    ("recordings: []\n", r"'recordings' is empty"),
    ("label_map: {'1': X}\nclasses: [W]\nrecordings: []\n", r"label_map maps to X, which are not in 'classes'"),
    ("label_map: nope\nrecordings:\n  - {subject: s, file: s.edf}\n", r"unknown label map 'nope'"),
])
def test_malformed_dataset_yaml(tmp_path: Path, montage, text: str, message: str) -> None:
    _edf(tmp_path, "s.edf")
    (tmp_path / "dataset.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=message) as info:
        load_dataset(tmp_path, montage)
    assert "\n" not in str(info.value)


def test_missing_files_named_in_dataset_yaml(tmp_path: Path, montage, write_dataset) -> None:
    _edf(tmp_path, "s01.edf")
    write_dataset({"recordings": [{"subject": "s01", "file": "s01.edf", "labels": "s01.csv"},
                                  {"subject": "s02", "file": "s02.edf"}]})
    with pytest.raises(DataError, match=r"names files that do not exist: s01\.csv, s02\.edf; fix the paths"):
        load_dataset(tmp_path, montage)


def test_montage_by_name(tmp_path: Path) -> None:
    _edf(tmp_path, "s.edf", ch=["EEG F3-REF", "EEG F4-REF", "EEG C3-REF", "EEG C4-REF", "EEG O1-REF", "EEG O2-REF"])
    ws = load_recording(tmp_path / "s.edf", "tuh-standard")
    assert ws.montage.name == "tuh-standard" and ws.x.shape == (3, 6, 30, 200)


def test_classification_labels_per_window_and_progress(tmp_path: Path, montage, write_dataset) -> None:
    _edf(tmp_path, "a.edf", seconds=30)
    _hyp(tmp_path, "a.csv", ["label", "eyes-open", "eyes-closed", "eyes-open"])
    write_dataset({"task": "classification", "window_seconds": 10,
                   "recordings": [{"subject": "p1", "file": "a.edf", "labels": "a.csv"}]})
    calls = []
    ws = load_dataset(tmp_path, montage, progress=lambda done, total, name: calls.append((done, total, name)))
    assert ws.classes == ["eyes-closed", "eyes-open"]
    assert ws.y.tolist() == [1, 0, 1]
    assert calls == [(1, 1, "a.edf")]


def test_unquoted_numbers_in_dataset_yaml_are_read_as_text(tmp_path: Path, montage) -> None:
    _edf(tmp_path, "s.edf")
    _hyp(tmp_path, "h.csv", ["1", "2", "9"])
    (tmp_path / "dataset.yaml").write_text(
        "label_map: {1: W, 2: REM}\nrecordings:\n  - {subject: 7, file: s.edf, labels: h.csv}\n", encoding="utf-8")
    ws = load_dataset(tmp_path, montage)
    assert ws.subject.tolist() == ["7"] * 3
    assert ws.y.tolist() == [0, 4, -1]


def test_annotation_labels_in_dataset_yaml_come_from_the_cache(tmp_path: Path, montage, write_dataset,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import passport_kit.signals.dataset as dataset_module

    ann = mne.Annotations([0, 30], [30, 60], ["Sleep stage 2", "Sleep stage R"])
    _edf(tmp_path, "s.edf", annotations=ann)
    write_dataset({"label_map": "aasm", "recordings": [{"subject": "s", "file": "s.edf", "annotation_labels": True}]})
    first = load_dataset(tmp_path, montage)
    monkeypatch.setattr(dataset_module, "read_recording", lambda *a, **k: pytest.fail("re-read"))
    second = load_dataset(tmp_path, montage)
    assert [first.classes[i] for i in first.y] == ["N2", "REM", "REM"]
    np.testing.assert_array_equal(second.y, first.y)
