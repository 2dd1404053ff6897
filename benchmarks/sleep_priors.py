"""Zero-shot sleep priors on real nights: each installed prior's kappa with no labels (issue 33).

For every prior that can run here (YASA is built in; GSSC when you installed it), the DREAMS
excerpts (C3-A1; excerpt 1 at 100 Hz, excerpt 3 at 50 Hz) are read exactly as ``adapt`` reads
them (``prepare_run`` with the shipped checkpoint's preprocessing: 200 Hz, the band top lowered
below the slowest night's Nyquist frequency, 30-s windows) and staged by
``passport_kit.onboard.ladder_inputs.dataset_prior`` (the channel nearest a central site, read from the
file at the stager's rate since issue 55, as adapt gives it); the arg-max of
the prior's probabilities is scored against the scorer's AASM epochs (R&K per 5 s, majority per
30 s). Per night and pooled Cohen's kappa, and a bootstrap interval over epochs (which ignores
that epochs of a night are correlated: two nights are not an estimate of a population)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/sleep_priors.py --out /tmp/sleep-priors

Skips cleanly (exit 0, one line) without ``../shared/data``.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from real_data import CHECKPOINT, DEFAULT_DATA, DREAMS_MONTAGE, dreams_folder  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=Path("runs/sleep-priors"))
    parser.add_argument("--boot", type=int, default=2000)
    args = parser.parse_args(argv)
    if not (args.data / "dreams-spindles").is_dir():
        print(f"sleep_priors: no DREAMS recordings under {args.data}; skipped")
        return 0
    from sklearn.metrics import cohen_kappa_score

    from passport_kit.checkpoint import find_checkpoint
    from passport_kit.montage import Montage
    from passport_kit.onboard.recipe import RecipeOptions
    from passport_kit.onboard.ladder_inputs import dataset_prior
    from passport_kit.onboard.run import prepare_run
    from passport_kit.sleep import available_priors, classes_to_stages
    from passport_kit.onboard.ladder import zero_shot_proba

    args.out.mkdir(parents=True, exist_ok=True)
    folder = dreams_folder(args.data / "dreams-spindles", args.out / "data-dreams")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = prepare_run(RecipeOptions(), find_checkpoint(CHECKPOINT), Montage.from_yaml(DREAMS_MONTAGE), folder)
    w = run.windows
    keep = np.flatnonzero(np.asarray(w.y) >= 0)
    stages = classes_to_stages(list(w.classes))
    rng = np.random.default_rng(0)
    rows = []
    for name, reason in available_priors().items():
        if reason is not None:
            rows.append({"prior": name, "note": reason})
            continue
        logp, spec, _ = dataset_prior(w, name)
        pred = zero_shot_proba(logp, stages).argmax(1)
        row = {"prior": name, "channel": spec["eeg"]}
        for rec in np.unique(w.recording[keep]):
            sel = keep[w.recording[keep] == rec]
            row[Path(str(rec)).stem] = round(float(cohen_kappa_score(w.y[sel], pred[sel])), 3)
        row["pooled"] = round(float(cohen_kappa_score(w.y[keep], pred[keep])), 3)
        boot = [cohen_kappa_score(w.y[b], pred[b]) for b in (rng.choice(keep, len(keep)) for _ in range(args.boot))]
        row["95% epoch bootstrap"] = f"[{np.percentile(boot, 2.5):.3f}, {np.percentile(boot, 97.5):.3f}]"
        rows.append(row)
        print(row)
    (args.out / "sleep_priors.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
