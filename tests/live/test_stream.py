"""A night replayed through a real LSL stream on this machine, staged live: stage for stage what causal staging of the
file gives, the outlet read by a second process, gaps, the growing table and the night report."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from passport_kit.live import CausalSettings, adapter_scorer, stage_recording_causally, zero_shot_scorer
from passport_kit.live.stream import LiveOptions, stage_stream
from tests.live.conftest import night

pytestmark = pytest.mark.usefixtures("lsl")

#: A second process subscribing to the stages outlet: it prints the samples it pulls, once the stream ends.
SUBSCRIBER = """
import json, sys, time
from mne_lsl.lsl import StreamInlet, resolve_streams
print("ready", flush=True)
found = resolve_streams(timeout=60, name=sys.argv[1])
inlet = StreamInlet(found[0])
inlet.open_stream(timeout=30)
rows, last = [], time.time()
while time.time() - last < 8:
    data, ts = inlet.pull_chunk(timeout=0.5)
    if len(ts):
        last = time.time()
    rows += [[float(t), *map(float, d)] for d, t in zip(data, ts)]
print(json.dumps(rows), flush=True)
"""


def _raw(path: Path):  # noqa: ANN202 - an MNE Raw
    from passport_kit.signals import read_recording

    return read_recording(path)


def _live(scorer, raw, name: str, out: Path, replayed, settings=CausalSettings(), **plan):  # noqa: ANN001, ANN202
    """Replay ``raw`` as stream ``name`` (recording time stamps, as fast as it goes) and stage it live into ``out``."""
    from mne_lsl.lsl import local_clock

    replay = replayed(raw, name, start_time=plan.pop("start_time", local_clock()), chunk_s=0.5, buffer_s=7200, **plan)
    result = stage_stream(scorer, out, options=LiveOptions(name=name, end_after_s=3.0, buffer_s=7200),
                          settings=settings)
    replay.join()
    return result


def _same_stages(live, offline) -> None:  # noqa: ANN001
    assert len(live) == len(offline) > 0
    assert [e.onset_s for e in live] == [e.onset_s for e in offline]
    assert [int(np.argmax(e.proba)) for e in live] == [int(np.argmax(e.proba)) for e in offline]
    assert all(np.array_equal(a.proba, b.proba) for a, b in zip(live, offline))  # the same samples, the same numbers
    assert [e.flagged for e in live] == [e.flagged for e in offline]


def test_live_staging_with_the_adapter_equals_causal_staging_of_the_file(onboarded: Path, short_night: Path,
                                                                         tmp_path: Path, replayed) -> None:
    scorer = adapter_scorer(onboarded)
    offline = stage_recording_causally(short_night, scorer)
    result = _live(scorer, _raw(short_night), "pk-adapter", tmp_path, replayed)
    _same_stages(result.epochs, offline)
    assert result.gaps == []


def test_live_staging_zero_shot_yasa_equals_causal_staging_of_the_file(montage_file: Path, short_night: Path,
                                                                        tmp_path: Path, replayed) -> None:
    scorer = zero_shot_scorer(str(montage_file), "yasa")
    offline = stage_recording_causally(short_night, scorer)
    result = _live(scorer, _raw(short_night), "pk-yasa", tmp_path, replayed)
    _same_stages(result.epochs, offline)
    assert result.report.summary["zero_shot"]["stager"] == "yasa"


def test_the_forward_filter_with_look_ahead_live_equals_offline(onboarded: Path, short_night: Path, tmp_path: Path,
                                                                replayed) -> None:
    scorer = adapter_scorer(onboarded)
    scorer.smoothing = (np.full((5, 5), 0.05) + np.eye(5) * 0.75, np.full(5, 0.2))  # a night smoothing to filter
    settings = CausalSettings(look_ahead=2)
    offline = stage_recording_causally(short_night, scorer, settings=settings)
    result = _live(scorer, _raw(short_night), "pk-lookahead", tmp_path, replayed, settings=settings)
    _same_stages(result.epochs, offline)
    assert result.report.summary["staged_live"]["look_ahead_epochs"] == 2
    assert result.report.summary["staged_live"]["night_smoothing"] == "forward filter"


def test_the_outlet_is_read_by_a_second_process(montage_file: Path, short_night: Path, tmp_path: Path,
                                                replayed) -> None:
    from mne_lsl.lsl import local_clock

    scorer = zero_shot_scorer(str(montage_file), "yasa")
    child = subprocess.Popen([sys.executable, "-c", SUBSCRIBER, "pk-outlet-stages"], stdout=subprocess.PIPE, text=True)
    # 12 epochs in about 12 s: the subscriber (a fresh Python) connects while the night is being staged; the
    # replay starts once it has imported liblsl, so a loaded machine's slow start costs it no epochs
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    replay = replayed(_raw(short_night), "pk-outlet", start_time=local_clock(), chunk_s=0.5, speed=30.0)
    result = stage_stream(scorer, tmp_path, options=LiveOptions(name="pk-outlet", end_after_s=3.0))
    replay.join()
    rows = json.loads(child.communicate(timeout=120)[0])
    assert len(rows) >= 6 and len(result.epochs) == 12  # every epoch after it connected
    by_time = {round(e.ended_at, 3): e for e in result.epochs}
    for stamp, stage, flagged, *proba in rows:
        epoch = by_time[round(stamp, 3)]                  # stamped with the epoch's last sample
        assert stage == int(np.argmax(epoch.proba)) and flagged == float(epoch.flagged)
        np.testing.assert_allclose(proba, epoch.proba, rtol=1e-6)  # float32 on the wire
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)


def test_a_stream_that_stops_and_comes_back_is_reconnected_and_the_gap_is_never_bridged(
        onboarded: Path, tmp_path: Path, replayed) -> None:
    from mne_lsl.lsl import local_clock

    from passport_kit.live.causal import CausalStager

    recording = night(tmp_path / "gap.edf", 10)
    raw = _raw(recording)
    scorer = adapter_scorer(onboarded)
    n = int(raw.info["sfreq"] * 30)
    start = local_clock()
    # 4.5 epochs, the outlet closes, then a new one (same source id) from epoch 5, 100 s later in stream time
    first = replayed(raw, "pk-gap", start_time=start, chunk_s=0.5, stop=4 * n + n // 2, buffer_s=7200)

    def second_part() -> None:
        import time

        first.join()
        time.sleep(1.0)
        from passport_kit.live.replay import ReplayPlan, replay

        replay(raw, "pk-gap", source_id="pk-gap", plan=ReplayPlan(chunk_s=0.5, first=5 * n, buffer_s=7200,
                                                                  start_time=start + 5 * 30.0 + 100.0))

    import threading

    thread = threading.Thread(target=second_part, daemon=True)
    thread.start()
    lines: list[str] = []  # ends once the 9th epoch is staged (liblsl's recovery takes longer on a loaded machine)
    result = stage_stream(scorer, tmp_path / "out", options=LiveOptions(name="pk-gap", end_after_s=60.0, buffer_s=7200),
                          progress=lines.append, stop=lambda: len(lines) >= 9)
    thread.join(timeout=120)
    assert [e.segment for e in result.epochs] == [0] * 4 + [1] * 5
    assert [e.onset_s for e in result.epochs] == [0, 30, 60, 90, 250, 280, 310, 340, 370]
    (gap_onset, gap_s), = result.gaps
    assert gap_onset == pytest.approx(135.0, abs=0.01) and gap_s == pytest.approx(115.0, abs=0.01)
    # after the gap, as if the stream had started there: nothing of the epochs before it is read
    data = raw.get_data().T
    fresh = CausalStager(scorer, raw.ch_names, raw.info["sfreq"], name="fresh")
    after = fresh.push(data[5 * n:]) + fresh.finish()
    assert all(np.array_equal(a.proba, b.proba) for a, b in zip(result.epochs[4:], after))
    rows = list(csv.DictReader(result.table.open()))
    assert [r["class"] for r in rows][4] == "GAP" and len(rows) == 10
    hypnogram = json.loads((tmp_path / "out" / "pk-gap" / "pk-gap_summary.json").read_text())
    assert hypnogram["n_windows"] == 9 and hypnogram["staged_live"]["gaps"][0]["duration_s"] == pytest.approx(115.0,
                                                                                                             abs=0.01)


def test_the_table_grows_whole_after_every_epoch_and_the_report_is_marked_live(montage_file: Path, short_night: Path,
                                                                               tmp_path: Path, replayed) -> None:
    from mne_lsl.lsl import local_clock

    scorer = zero_shot_scorer(str(montage_file), "yasa")
    seen: list[int] = []
    table = tmp_path / "pk-table_live.csv"

    def line(text: str) -> None:  # called after each epoch is written: the file holds every epoch so far, whole
        rows = list(csv.DictReader(table.open()))
        assert all(r["class"] in scorer.classes and r["p_W"] != "" for r in rows)
        seen.append(len(rows))

    replay = replayed(_raw(short_night), "pk-table", start_time=local_clock(), chunk_s=0.5, buffer_s=7200)
    result = stage_stream(scorer, tmp_path, options=LiveOptions(name="pk-table", end_after_s=3.0, buffer_s=7200),
                          progress=line)
    replay.join()
    assert seen == list(range(1, 13))
    summary = json.loads((tmp_path / "pk-table" / "pk-table_summary.json").read_text())
    assert summary["staged_live"]["stream"] == "pk-table" and summary["n_windows"] == 12
    assert (tmp_path / "pk-table" / "pk-table_hypnogram.png").is_file()
    assert not list(tmp_path.glob("*.tmp*"))


def test_the_stream_command_stages_and_reports(montage_file: Path, short_night: Path, tmp_path: Path,
                                               replayed) -> None:
    from mne_lsl.lsl import local_clock
    from typer.testing import CliRunner

    from passport_kit.cli.app import app

    replay = replayed(_raw(short_night), "pk-cli", start_time=local_clock(), chunk_s=0.5, buffer_s=7200)
    done = CliRunner().invoke(app, ["stream", "--lsl", "pk-cli", "--zero-shot", "yasa", "--montage", str(montage_file),
                                    "--end-after", "3", "--out", str(tmp_path), "--no-outlet"])
    replay.join()
    assert done.exit_code == 0, done.output
    assert "12 epochs staged live, 0 gap(s)" in done.output and "night report:" in done.output


def test_a_missing_stream_is_one_line(montage_file: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from passport_kit.cli.app import app

    done = CliRunner().invoke(app, ["stream", "--lsl", "pk-nowhere", "--zero-shot", "yasa", "--montage",
                                    str(montage_file), "--wait", "0.5", "--out", str(tmp_path)])
    assert done.exit_code == 2
    assert done.output.strip().splitlines()[-1].startswith("error: no LSL stream with name 'pk-nowhere' was found")


def test_a_stream_in_the_wrong_units_is_refused_as_a_file_is(onboarded: Path, short_night: Path, tmp_path: Path,
                                                             replayed) -> None:
    from mne_lsl.lsl import local_clock

    from passport_kit.errors import DataError

    scorer = adapter_scorer(onboarded)
    replay = replayed(_raw(short_night), "pk-units", start_time=local_clock(), chunk_s=0.5, buffer_s=7200)
    with pytest.raises(DataError, match="stream 'pk-units'"):  # volts read as microvolts: a million times too small
        stage_stream(scorer, tmp_path, options=LiveOptions(name="pk-units", units="nV", end_after_s=3.0))
    replay.join()


@pytest.mark.slow
@pytest.mark.parametrize("which", ["adapter", "yasa"])
def test_a_two_hour_night_live_equals_causal_staging(which: str, onboarded: Path, montage_file: Path, tmp_path: Path,
                                                     replayed) -> None:
    recording = night(tmp_path / "two-hours.edf", 240, seed=3)
    scorer = adapter_scorer(onboarded) if which == "adapter" else zero_shot_scorer(str(montage_file), "yasa")
    offline = stage_recording_causally(recording, scorer)
    result = _live(scorer, _raw(recording), f"pk-2h-{which}", tmp_path, replayed)
    _same_stages(result.epochs, offline)
    assert len(result.epochs) == 240 and result.gaps == []
