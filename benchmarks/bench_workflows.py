"""The two waits a new user meets first: ``make demo`` and the default ``adapt`` on real data.

Times, as a user runs them (the ``passport-kit`` command in a fresh process, a fresh
``PASSPORT_KIT_HOME``: empty window cache, nothing reused):

- ``demo``: ``passport-kit demo`` (what ``make demo`` runs once the venv exists), into a new folder;
  with ``--repeat``, a second time into the same folder (the simulated data reused);
- ``adapt``: ``passport-kit adapt`` with its defaults (recipe ``auto``, ``passport-small-mlp``) on the
  12 dev subjects of eegmat (rest vs arithmetic, ``benchmarks/montages/eegmat-temporal.yaml``,
  10-s windows, low-passed at 45 Hz: the dev protocol's task), from ``--data`` (``../shared/data``);
- ``adapt-sleep``: ``passport-kit adapt`` with its defaults on 3 simulated half-hour ``eesm17-ear`` nights
  (simulated once, seed 0, not timed): the sleep ladder, the stager first (issue 47's target: 10 s of CPU).

``--code DIR`` (repeatable) times each workflow with the package at ``DIR`` first on ``PYTHONPATH`` (e.g. a
checkout of the commit before a change, and this one), every code in turn, ``--rounds`` times: paired
figures from one run on one machine.

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

#: Issue 34's targets (seconds of wall time on 2 idle cores); issue 47's for the sleep adapt (seconds of CPU).
TARGETS = {"demo": 90.0, "adapt": 60.0, "adapt-sleep": 10.0}
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


def code_env(code: Path | None, threads: int) -> dict[str, str]:
    """Return the environment of a timed command: ``threads`` OMP/MKL threads, the package tree ``code`` first on
    ``PYTHONPATH`` (None: as it is here)."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(code.resolve()), env.get("PYTHONPATH", "")) if p)
    return env


def simulated_nights(folder: Path, threads: int) -> Path:
    """Return a folder of 3 simulated half-hour ``eesm17-ear`` nights (seed 0), written by ``passport-kit simulate``."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    subprocess.run([str(COMMAND), "simulate", "--montage", "eesm17-ear", "--out", str(folder), "--subjects", "3",
                    "--hours", "0.5", "--seed", "0", "--quiet"], env=env, check=True, stdout=subprocess.DEVNULL)
    return folder


def workflows(args: argparse.Namespace, work: Path, env: dict[str, str], tag: str,
              sleep_data: Path | None) -> list[dict]:
    """Return the rows of the workflows ``args.only`` names (all by default), each in a fresh home under ``work``."""
    rows: list[dict] = []
    work.mkdir(parents=True, exist_ok=True)

    def fresh(name: str) -> dict[str, str]:
        return {**env, "PASSPORT_KIT_HOME": str(work / f"home-{name}")}

    log = args.out / (work.name + "-{}.log")
    if args.only in (None, "demo"):
        demo = [str(COMMAND), "demo", "--out", str(work / "passport-demo"), "--threads", str(args.threads)]
        demo_env = fresh("demo")
        rows.append({"workflow": "demo (first run)" + tag, **timed(demo, demo_env, Path(str(log).format("demo"))),
                     "target_s": TARGETS["demo"]})
        if args.repeat:
            rows.append({"workflow": "demo (second run)" + tag,
                         **timed(demo, demo_env, Path(str(log).format("demo-again"))), "target_s": TARGETS["demo"]})
    if args.only in (None, "adapt"):
        if not (args.data / "eegmat").is_dir():
            print(f"bench_workflows: no eegmat under {args.data}; adapt skipped")
        else:
            data = eegmat_folder(args.data / "eegmat", work / "eegmat", h_freq=45.0)
            adapt = [str(COMMAND), "adapt", "--montage", str(EEGMAT_MONTAGE), "--data", str(data), "--out",
                     str(work / "adapter"), "--threads", str(args.threads)]
            rows.append({"workflow": "adapt (default, 12 eegmat subjects)" + tag,
                         **timed(adapt, fresh("adapt"), Path(str(log).format("adapt"))), "target_s": TARGETS["adapt"]})
    if sleep_data is not None:
        adapt = [str(COMMAND), "adapt", "--montage", "eesm17-ear", "--data", str(sleep_data), "--out",
                 str(work / "adapter-sleep"), "--threads", str(args.threads)]
        rows.append({"workflow": "adapt (default, 3 simulated half-hour nights)" + tag,
                     **timed(adapt, fresh("adapt-sleep"), Path(str(log).format("adapt-sleep"))),
                     "target_s": TARGETS["adapt-sleep"]})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("demo", "adapt", "adapt-sleep"), default=None,
                        help="time one workflow only")
    parser.add_argument("--code", type=Path, action="append", default=None,
                        help="a package tree to time (repeatable: each in turn); default: the one importable here")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of every workflow and code, in turn")
    parser.add_argument("--threads", type=int, default=2, help="OMP/MKL threads of the timed commands")
    parser.add_argument("--repeat", action="store_true", help="also time the demo's second run")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding eegmat/")
    parser.add_argument("--out", type=Path, default=Path("bench-out/workflows"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-workflows-"))
    rows: list[dict] = []
    load_before = os.getloadavg()
    codes = args.code or [None]
    try:
        sleep_data = simulated_nights(work / "sleep-data", args.threads) if args.only in (None, "adapt-sleep") else None
        for round_ in range(args.rounds):
            for k, code in enumerate(codes):
                tag = "" if code is None else f" [{code}]"
                rows += workflows(args, work / f"r{round_}-{k}", code_env(code, args.threads), tag, sleep_data)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    machine = machine_line(args.threads)
    print(f"machine: {machine}")
    print(f"load average (1, 5, 15 min) before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    print(f"{'workflow':60s} {'wall s':>8s} {'CPU s':>8s} {'target s':>9s}  exit")
    for r in rows:
        print(f"{r['workflow']:60s} {r['wall_s']:8.1f} {r['cpu_s']:8.1f} {r['target_s']:9.0f}  {r['rc']}")
    (args.out / "workflows.json").write_text(json.dumps(
        {"machine": machine, "threads": args.threads, "load_before": load_before, "load_after": load_after,
         "rows": rows, "argv": sys.argv}, indent=2) + "\n")
    print(f"logs and workflows.json in {args.out}")
    return 0 if all(r["rc"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
