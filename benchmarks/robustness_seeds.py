"""Pool several seeds of ``robustness.py`` into paired differences with confidence intervals (issue 8).

Every ``robustness.py --seed S --out DIR`` run writes ``DIR/robustness.csv`` (kappa per held-out
subject and variant). This script reads many such folders, takes for each seed the mean kappa over
the bad-contact subjects and over the clean subjects per variant, and reports, for pairs of
variants, the mean paired difference over seeds, its 95 % t-interval and how many seeds were
ahead. A seed is the unit: the simulated data, the validation split and the fine-tuning draws all
change with it; folders of the same seed (``run.json``), e.g. other variants run separately,
pool into one.

Usage::

    python benchmarks/robustness_seeds.py bench-out/gpu-sim/s* --pairs mlp+distrust:acpe,mlp:acpe
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import stats

DEFAULT_PAIRS = "mlp+distrust:acpe,mlp:acpe,mlp+distrust:mlp,mlp+drop:acpe,mlp+mask:mlp,mlp+distrust@test:mlp"


def group_means(folder: Path) -> dict[tuple[str, str], float]:
    """Return {(variant, group): mean kappa} of one run folder's ``robustness.csv``."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    with open(folder / "robustness.csv", newline="") as f:
        for row in csv.DictReader(f):
            values[(row["variant"], row["group"])].append(float(row["kappa"]))
    return {key: float(np.mean(v)) for key, v in values.items()}


def paired(per_seed: list[dict[tuple[str, str], float]], a: str, b: str, group: str) -> dict[str, float] | None:
    """Return mean, 95 % t-interval and share of seeds ahead of ``a − b`` in ``group``; None without pairs."""
    diffs = np.array([m[(a, group)] - m[(b, group)] for m in per_seed if (a, group) in m and (b, group) in m])
    if len(diffs) < 2:
        return None
    half = float(stats.t.ppf(0.975, len(diffs) - 1) * diffs.std(ddof=1) / np.sqrt(len(diffs)))
    mean = float(diffs.mean())
    return {"n": len(diffs), "mean": mean, "low": mean - half, "high": mean + half,
            "ahead": int((diffs > 0).sum()), "sd": float(diffs.std(ddof=1))}


def main(argv: list[str] | None = None) -> int:
    """Print the per-variant table and the paired differences as markdown."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="+", type=Path, help="robustness.py output folders, one per seed")
    p.add_argument("--pairs", default=DEFAULT_PAIRS, help="comma-separated A:B pairs (A − B)")
    args = p.parse_args(argv)
    # Folders of the same seed (other variants run separately) pool into one seed.
    by_seed: dict[int, dict[tuple[str, str], float]] = defaultdict(dict)
    for folder in args.folders:
        if (folder / "robustness.csv").is_file():
            seed = json.loads((folder / "run.json").read_text(encoding="utf-8"))["settings"]["seed"]
            by_seed[seed].update(group_means(folder))
    per_seed = list(by_seed.values())
    if not per_seed:
        print("no robustness.csv in the given folders", file=sys.stderr)
        return 2
    variants = list(dict.fromkeys(v for m in per_seed for v, _ in m))
    print(f"{len(per_seed)} seeds\n\n| variant | seeds | bad subjects, mean ± SD | clean subjects, mean ± SD |\n|---|---|---|---|")
    for v in variants:
        cells = []
        for g in ("bad", "clean"):
            x = np.array([m[(v, g)] for m in per_seed if (v, g) in m])
            cells.append(f"{x.mean():.3f} ± {x.std(ddof=1):.3f}" if len(x) > 1 else "—")
        n = sum((v, "bad") in m for m in per_seed)
        print(f"| {v} | {n} | {cells[0]} | {cells[1]} |")
    print("\n| A − B | group | seeds | mean | 95 % CI | seeds A ahead | SD |\n|---|---|---|---|---|---|---|")
    for pair in args.pairs.split(","):
        a, b = pair.split(":")
        for g in ("bad", "clean"):
            r = paired(per_seed, a, b, g)
            if r is not None:
                print(f"| {a} − {b} | {g} | {r['n']} | {r['mean']:+.3f} | [{r['low']:+.3f}, {r['high']:+.3f}] "
                      f"| {r['ahead']} | {r['sd']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
