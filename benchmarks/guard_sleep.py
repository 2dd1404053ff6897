"""The distribution guard's sleep checks, measured (issue 45): stage sequence and "does it look like sleep".

Unlike ``distribution_guard.py``, these checks judge what an adapter *says*, so an adapter is
trained per device: ``adapt`` (default recipe) on simulated sleep (3 subjects x ``--hours``,
seed 0), then ``predict`` (guard on) on

- held-out simulated nights of the same device (``--held-out`` subjects, seed 7; must pass):
  the false-alarm rate;
- for the Muse adapter, real *awake* Muse recordings (one per subject folder, the longest,
  ``/work/shared/data/muse``; should be flagged): issue 45's case, where 2 of 8 passed the
  spectral and correlation parts.

One row per recording: which part of the guard (amplitude, correlation, spectrum, sequence,
stage fit) flags it. Run (2 cores, a few minutes)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/guard_sleep.py --data ../shared/data --out /tmp/gs
"""

from __future__ import annotations

import argparse
import csv
import json
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _adapter(work: Path, montage: str, hours: float) -> Path:
    """Return an adapter bundle trained on simulated sleep of ``montage`` (3 subjects, seed 0), made once."""
    from passport_kit.onboard.adapt import adapt
    from passport_kit.signals import simulate_dataset

    data, out = work / f"sim-{montage}", work / f"adapter-{montage}"
    if not (data / "dataset.yaml").exists():
        simulate_dataset(montage, data, n_subjects=3, hours=hours, seed=0)
    if not (out / "adapter.json").exists():
        adapt(montage=montage, data=data, out=out, overwrite=True)
    return out


def _rows(adapter: Path, files: list[Path], scenario: str, expect: str, out: Path) -> list[dict[str, Any]]:
    """Return one row per recording of ``files`` predicted by ``adapter``: the guard's parts and its verdict."""
    from passport_kit.inference.predict import OutputOptions, predict

    rows = []
    for f in files:
        result = predict(adapter, [f], out / scenario.replace(" ", "-"), output=OutputOptions(overwrite=True))[0]
        d = result.summary.get("distribution") or {}
        stages = result.summary["class_counts"]
        rows.append({"scenario": scenario, "recording": f.name, "expect": expect, "epochs": result.n_windows,
                     "staged": " ".join(f"{k}{v}" for k, v in stages.items() if v),
                     "spectrum": d.get("distance"), "correlation": d.get("correlation_distance"),
                     "amplitude": d.get("amplitude_ratio"),
                     "unseen": f"{d.get('unseen_transitions')}/{d.get('transitions')}",
                     "stage_fit": d.get("stage_fit"), "outside": d.get("outside"), "flagged_by": _parts(d)})
    return rows


def _parts(d: dict[str, Any]) -> str:
    """Return the parts of the guard that put a recording outside (its ``distribution`` block), space-separated."""
    from passport_kit.signals.distribution import STAGE_FIT_LIMIT, _too_many_unseen

    ratio, limit = d.get("amplitude_ratio"), d.get("amplitude_limit", 4.0)
    parts = {"amplitude": ratio is not None and not 1 / limit <= ratio <= limit,
             "correlation": (d.get("correlation_distance") or 0) > d.get("correlation_limit", 1.8),
             "spectrum": (d.get("distance") or 0) > d.get("distance_limit", 0.5),
             "sequence": d.get("unseen_transitions") is not None and _too_many_unseen(d["unseen_transitions"],
                                                                                      d["transitions"]),
             "stage-fit": (d.get("stage_fit") or 0) > STAGE_FIT_LIMIT}
    return " ".join(k for k, v in parts.items() if v) or "-"


def _awake_muse(muse: Path, n: int) -> list[Path]:
    """Return the longest recording of each of the first ``n`` subject folders of the Muse data."""
    with open(muse / "recordings.tsv", newline="") as f:
        table = list(csv.DictReader(f, delimiter="\t"))
    best: dict[str, tuple[float, Path]] = {}
    for row in table:
        seconds = float(row["seconds"])
        if row["subject"] not in best or seconds > best[row["subject"]][0]:
            best[row["subject"]] = (seconds, muse / row["file"])
    return [p for _, p in list(best.values())[:n]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path("/tmp/guard_sleep"))
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--held-out", type=int, default=4)
    parser.add_argument("--awake", type=int, default=16)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    warnings.simplefilter("ignore")
    from passport_kit.signals import simulate_dataset

    held_out = args.out / "held-out"
    rows: list[dict[str, Any]] = []
    for montage in ("muse", "eesm17-ear"):
        adapter = _adapter(args.out, montage, args.hours)
        test = held_out / montage
        if not (test / "dataset.yaml").exists():
            simulate_dataset(montage, test, n_subjects=args.held_out, hours=args.hours, seed=7)
        rows += _rows(adapter, sorted(test.glob("s*.edf")), f"held-out simulated night ({montage})", "pass",
                      args.out / "pred")
        if montage == "muse" and (args.data / "muse").is_dir():
            rows += _rows(adapter, _awake_muse(args.data / "muse", args.awake), "real awake Muse", "flag",
                          args.out / "pred")
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join("" if r[k] is None else str(r[k]) for k in keys) + " |")
    (args.out / "rows.json").write_text(json.dumps(rows, indent=1))
    for scenario in dict.fromkeys(r["scenario"] for r in rows):
        these = [r for r in rows if r["scenario"] == scenario]
        print(f"{scenario}: {sum(bool(r['outside']) for r in these)} of {len(these)} outside; sequence or stage fit "
              f"alone: {sum(('sequence' in r['flagged_by']) or ('stage-fit' in r['flagged_by']) for r in these)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
