"""The two waits a new user meets first: ``make demo`` and the default ``adapt`` on real data.

Times, as a user runs them (the ``passport-kit`` command in a fresh process, a fresh
``PASSPORT_KIT_HOME``: empty window cache, nothing reused):

- ``demo``: ``passport-kit demo`` (what ``make demo`` runs once the venv exists), into a new folder;
  with ``--repeat``, a second time into the same folder (the simulated data reused);
- ``adapt``: ``passport-kit adapt`` with its defaults (recipe ``auto``, ``passport-small-mlp``) on the
  12 dev subjects of eegmat (rest vs arithmetic, ``benchmarks/montages/eegmat-temporal.yaml``,
  10-s windows, low-passed at 45 Hz: the dev protocol's task), from ``--data`` (``../shared/data``).

Each line gives the wall time and the CPU time (user + system) of the command and its children,
against the targets of issue 34 (demo <= 90 s, adapt <= 60 s of wall time on 2 idle cores), with
the machine, its thread setting and the load average before and after: on a shared machine the
wall time is an upper bound of what the same machine gives idle.

Run::

    .venv/bin/python benchmarks/bench_workflows.py [--only demo|adapt] [--threads 2] [--repeat] \\
        [--out bench-out/workflows]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from machine import machine_line  # noqa: E402  (benchmarks/ is not a package)
from real_data import DEFAULT_DATA, EEGMAT_MONTAGE, eegmat_folder  # noqa: E402

#: Issue 34's targets (seconds of wall time on 2 idle cores).
TARGETS = {"demo": 90.0, "adapt": 60.0}
COMMAND = Path(sys.executable).parent / "passport-kit"


def timed(argv: list[str], env: dict[str, str], log: Path) -> dict[str, float | int]:
    """Return ``{wall_s, cpu_s, rc}`` of running ``argv`` (its output to ``log``)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with log.open("w") as out:
        rc = subprocess.run(argv, env=env, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "rc": rc}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("demo", "adapt"), default=None, help="time one workflow only")
    parser.add_argument("--threads", type=int, default=2, help="OMP/MKL threads of the timed commands")
    parser.add_argument("--repeat", action="store_true", help="also time the demo's second run")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding eegmat/")
    parser.add_argument("--out", type=Path, default=Path("bench-out/workflows"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-workflows-"))
    env = {**os.environ, "PASSPORT_KIT_HOME": str(work / "home"), "OMP_NUM_THREADS": str(args.threads),
           "MKL_NUM_THREADS": str(args.threads)}
    rows: list[dict] = []
    load_before = os.getloadavg()
    try:
        if args.only in (None, "demo"):
            demo = [str(COMMAND), "demo", "--out", str(work / "passport-demo"), "--threads", str(args.threads)]
            rows.append({"workflow": "demo (first run)", **timed(demo, env, args.out / "demo.log"),
                         "target_s": TARGETS["demo"]})
            if args.repeat:
                rows.append({"workflow": "demo (second run)", **timed(demo, env, args.out / "demo-again.log"),
                             "target_s": TARGETS["demo"]})
        if args.only in (None, "adapt"):
            if not (args.data / "eegmat").is_dir():
                print(f"bench_workflows: no eegmat under {args.data}; adapt skipped")
            else:
                data = eegmat_folder(args.data / "eegmat", work / "eegmat", h_freq=45.0)
                adapt = [str(COMMAND), "adapt", "--montage", str(EEGMAT_MONTAGE), "--data", str(data), "--out",
                         str(work / "adapter"), "--threads", str(args.threads)]
                rows.append({"workflow": "adapt (default, 12 eegmat subjects)",
                             **timed(adapt, env, args.out / "adapt.log"), "target_s": TARGETS["adapt"]})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    machine = machine_line(args.threads)
    print(f"machine: {machine}")
    print(f"load average (1, 5, 15 min) before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    print(f"{'workflow':40s} {'wall s':>8s} {'CPU s':>8s} {'target s':>9s}  exit")
    for r in rows:
        print(f"{r['workflow']:40s} {r['wall_s']:8.1f} {r['cpu_s']:8.1f} {r['target_s']:9.0f}  {r['rc']}")
    (args.out / "workflows.json").write_text(json.dumps(
        {"machine": machine, "threads": args.threads, "load_before": load_before, "load_after": load_after,
         "rows": rows, "argv": sys.argv}, indent=2) + "\n")
    print(f"logs and workflows.json in {args.out}")
    return 0 if all(r["rc"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
