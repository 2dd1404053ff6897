"""Live staging's delay and memory (issue 59): a night replayed through a real LSL stream on this machine, staged live.

A recording (``--recording``; ``--repeat`` N plays it N times end to end, e.g. a 2-h simulated
night four times for 8 h) is played as an LSL stream by a child process (the device) at
``--speed`` x real time, each chunk of ``--chunk`` seconds stamped when it is sent; this process
stages it live (``passport_kit.live.stage_stream``) with an adapter bundle (``--adapter``) or a
stager alone (``--zero-shot yasa --montage M``). Reported:

- the delay of each epoch from its last sample (its chunk sent by the device) to its stage
  (written, sent on the stages outlet): median, 95th percentile, max;
- this process's resident memory (VmRSS) after the first hour, at every hour, and its peak (VmHWM);
- this process's CPU time per epoch (user + system, all its threads: the staging's cost, whatever the load);
- the CPU, its load average (the 2 cores may be shared), and the command.

liblsl runs with the machine-scope configuration (``LSLAPICFG``, ``passport_kit.live.lsl_scope``): no packet
leaves the loopback interface. The replay must be slower than the staging (an epoch every 30/speed s) for the
delay to be the staging's own, not a queue's: the run says how many epochs were staged behind the stream.
Run::

    .venv/bin/python benchmarks/live_delay.py --adapter runs/my-ear --recording new-night/s01.edf --repeat 4 \\
        --speed 30 --out live-bench.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import cpu_model  # noqa: E402


def _rss_mb(field: str = "VmRSS") -> float:
    """Return this process's ``field`` of /proc/self/status in MiB."""
    with open("/proc/self/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _device(recording: str, repeat: int, speed: float, chunk: float, name: str) -> None:
    """The child process: play ``recording`` ``repeat`` times as the LSL stream ``name``."""
    import mne

    from passport_kit.live.replay import ReplayPlan, replay
    from passport_kit.signals import read_recording

    raw = read_recording(Path(recording))
    if repeat > 1:
        raw = mne.concatenate_raws([raw.copy() for _ in range(repeat)], verbose="error")
    replay(raw, name, source_id=name, plan=ReplayPlan(speed=speed, chunk_s=chunk, wait_s=300,
                                                      buffer_s=int(raw.n_times / raw.info["sfreq"]) + 60))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--recording", required=True)
    parser.add_argument("--adapter")
    parser.add_argument("--zero-shot")
    parser.add_argument("--montage")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--speed", type=float, default=30.0)
    parser.add_argument("--chunk", type=float, default=0.1, help="seconds of samples per push (a device's chunk)")
    parser.add_argument("--history", type=int, default=None)
    parser.add_argument("--out", default=None, help="JSON file for the figures")
    args = parser.parse_args()

    from passport_kit.live.lsl_scope import CONFIG_VARIABLE, write_machine_scope_config

    os.environ[CONFIG_VARIABLE] = str(write_machine_scope_config(Path(tempfile.mkdtemp()) / "lsl_api.cfg"))
    import numpy as np

    from passport_kit.live import CausalSettings, adapter_scorer, zero_shot_scorer
    from passport_kit.live.stream import LiveOptions, stage_stream

    scorer = (adapter_scorer(args.adapter) if args.adapter else zero_shot_scorer(args.montage, args.zero_shot))
    name = f"bench-live-{os.getpid()}"
    device = multiprocessing.get_context("spawn").Process(
        target=_device, args=(args.recording, args.repeat, args.speed, args.chunk, name), daemon=True)
    device.start()
    rss: dict[int, float] = {}
    epochs = [0]
    began, cpu_began = time.perf_counter(), time.process_time()

    def each(line: str) -> None:
        epochs[0] += 1
        if epochs[0] % 120 == 0:  # every hour of recording
            rss[epochs[0] // 120] = _rss_mb()
            print(f"{epochs[0] // 120} h staged, RSS {rss[epochs[0] // 120]:.0f} MiB, {line}", flush=True)

    with tempfile.TemporaryDirectory() as out:
        result = stage_stream(scorer, out, options=LiveOptions(name=name, end_after_s=10.0, resolve_s=60.0,
                                                               buffer_s=int(args.repeat * 4 * 3600)),
                              settings=CausalSettings(history=args.history), progress=each)
    device.join(timeout=60)
    delays = np.asarray(result.delays_s)
    period = 30.0 / args.speed
    figures = {
        "command": " ".join(["benchmarks/live_delay.py", *sys.argv[1:]]),
        "cpu": cpu_model(), "cores": os.cpu_count(), "load_average": os.getloadavg(),
        "read_out": "zero-shot " + args.zero_shot if args.zero_shot else str(args.adapter),
        "history_epochs": args.history or scorer.history, "epochs": len(result.epochs), "gaps": len(result.gaps),
        "hours": len(result.epochs) / 120, "speed": args.speed, "epoch_every_s": period,
        "delay_s": {"median": float(np.median(delays)), "p95": float(np.percentile(delays, 95)),
                    "max": float(delays.max())},
        "epochs_behind_the_stream": int((delays > period).sum()),
        "rss_mib_by_hour": rss, "peak_rss_mib": _rss_mb("VmHWM"), "wall_s": time.perf_counter() - began,
        "cpu_s_per_epoch": (time.process_time() - cpu_began) / max(1, len(result.epochs)),
    }
    print(json.dumps(figures, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
