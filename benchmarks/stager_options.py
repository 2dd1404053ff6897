"""The channels a sleep stager reads (issue 43 item 4): each option's zero-shot kappa, per night and pooled.

For each data set, read exactly as ``adapt`` reads it (``prepare_run`` with the shipped checkpoint's
preprocessing), every option ``adapt`` scores for its base
(:func:`passport_kit.onboard.ladder_inputs.stager_options` with ``--prior auto``: the channel nearest a
central site, that channel against the farthest electrode, the widest left-right pair, a frontal pair as
EOG where the montage has no EOG channel; each installed stager and their average) is scored zero-shot
against the labels: Cohen's kappa per night, its mean and range over nights, and pooled. The first option
is the positions' guess (``predict --zero-shot``'s channel); ``adapt`` picks the best on the training
nights. Data sets: simulated ``eesm17-ear`` (ear-EEG) and ``muse`` (headband: AF7 AF8 TP9 TP10) nights (4 x
1 h, seed 5), and the DREAMS excerpts (C3-A1) where ``../shared/data`` is present::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/stager_options.py --out /tmp/stager-options

The simulator's EEG is not real sleep EEG: YASA's scores on it say which derivation carries the
simulated stage rhythms, not how a real ear or headband stages.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from real_data import CHECKPOINT, DEFAULT_DATA, DREAMS_MONTAGE, dreams_folder  # noqa: E402


def simulated(montage: str, folder: Path) -> Path:
    """Return a simulated sleep data set of ``montage`` (4 subjects x 1 h, seed 5), made once."""
    if not (folder / "dataset.yaml").exists():
        subprocess.run([sys.executable, "-m", "passport_kit.cli.app", "simulate", "--montage", montage, "--subjects",
                        "4", "--hours", "1", "--seed", "5", "--out", str(folder), "-q"], check=True)
    return folder


def options_table(name: str, montage: Any, folder: Path) -> list[dict[str, Any]]:
    """Return one row per stager option of the data set in ``folder``: kappa per night, mean, range, pooled."""
    from passport_kit.checkpoint import find_checkpoint
    from passport_kit.onboard.ladder import kappa, zero_shot_proba
    from passport_kit.onboard.ladder_inputs import stager_options
    from passport_kit.onboard.recipe import RecipeOptions
    from passport_kit.onboard.run import prepare_run
    from passport_kit.sleep import StagerChoice, classes_to_stages

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = prepare_run(RecipeOptions(), find_checkpoint(CHECKPOINT), montage, folder)
    w = run.windows
    keep = np.flatnonzero(np.asarray(run.keep) & (np.asarray(w.y) >= 0))
    stages = classes_to_stages(list(w.classes))
    options, why = stager_options(w, "auto")
    if not options:
        return [{"data": name, "note": why}]
    rows = []
    for i, (spec, logp) in enumerate(options):
        pred = zero_shot_proba(logp, stages).argmax(1)
        nights = [kappa(np.asarray(w.y)[sel], pred[sel], len(stages))
                  for sel in (keep[np.asarray(w.recording)[keep] == r] for r in np.unique(np.asarray(w.recording)[keep]))]
        rows.append({"data": name, "option": i, "stager": spec["name"],
                     "channels": StagerChoice.from_dict(spec).channels(),
                     "kappa mean over nights": round(float(np.mean(nights)), 3),
                     "range": f"{min(nights):.3f} to {max(nights):.3f}", "nights": len(nights),
                     "pooled": round(kappa(np.asarray(w.y)[keep], pred[keep], len(stages)), 3)})
        print(rows[-1], flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=Path("runs/stager-options"))
    args = parser.parse_args(argv)
    from passport_kit.montage import Montage
    from passport_kit.montage.registry import get_montage

    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for montage in ("eesm17-ear", "muse"):
        rows += options_table(f"simulated {montage}", get_montage(montage),
                              simulated(montage, args.out / f"sim-{montage}"))
    if (args.data / "dreams-spindles").is_dir():
        rows += options_table("DREAMS", Montage.from_yaml(DREAMS_MONTAGE),
                              dreams_folder(args.data / "dreams-spindles", args.out / "data-dreams"))
    else:
        print(f"stager_options: no DREAMS recordings under {args.data}; the real nights skipped")
    (args.out / "stager_options.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
