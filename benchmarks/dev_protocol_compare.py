"""Compare the default of two or more ``dev_protocol.py`` output folders over the draws they share.

Each ``dev_protocol.py`` run writes ``<task>.json`` with the score of every method per draw.
Draws are nested (draw k depends on the seed and k only), so a ``--splits 3`` run shares its
three draws with the first three of a ``--splits 5`` run. This prints, per task, each run's
default, its random-backbone control, band power alone and the default's grid chosen by the best
mean (the ``rule best`` ablation: the backbone block whenever it helps on average), and the paired difference of each
run's default to its own random-backbone control and to the first run's default (95 %
t-intervals over the shared draws)::

    .venv/bin/python benchmarks/dev_protocol_compare.py current=/tmp/devp new-L0=runs/devp-L0 new-L1=runs/devp-L1
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from real_data import t_interval  # noqa: E402  (benchmarks/ is not a package)

METHODS = ("default", "random backbone 0", "band power alone (product, weight 0)", "rule best", "textbook (native rate)")


def paired(diff: np.ndarray) -> str:
    """Return the mean of paired differences and its 95 % t-interval (none for fewer than 3 draws)."""
    ci = t_interval(list(diff))
    return f"{diff.mean():+.3f}" + ("" if ci is None else f" [{ci[0]:+.3f}, {ci[1]:+.3f}]")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", help="LABEL=FOLDER; the first is the reference")
    args = parser.parse_args(argv)
    runs = [(label, Path(folder)) for label, _, folder in (r.partition("=") for r in args.runs)]
    tasks = [p.stem for p in sorted(runs[0][1].glob("*.json")) if p.stem != "dev_protocol"]
    print("| task | run | draws | default | random backbone | band power alone | best mean (no one-SE step) | textbook | "
          f"default minus random (95 % t) | default minus {runs[0][0]}'s (95 % t) |\n"
          "|---|---|---|---|---|---|---|---|---|---|")
    for task in tasks:
        scores = {}
        for label, folder in runs:
            path = folder / f"{task}.json"
            if path.is_file():
                scores[label] = json.loads(path.read_text())["scores"]
        if runs[0][0] not in scores:
            continue
        n = min(len(s["default"]) for s in scores.values())
        ref = np.asarray(scores[runs[0][0]]["default"][:n])
        for label, s in scores.items():
            cells = [f"{np.mean(s[m][:n]):.3f}" if m in s else "" for m in METHODS]
            own = np.asarray(s["default"][:n])
            vs_random = paired(own - np.asarray(s["random backbone 0"][:n])) if "random backbone 0" in s else ""
            delta = "" if label == runs[0][0] else paired(own - ref)
            print(f"| {task} | {label} | {n} | " + " | ".join(cells) + f" | {vs_random} | {delta} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
