"""The paper's realistic transfer experiment (Fig. 5) at laptop scale: scalp pretraining, ear-EEG LOSO.

Small models with the ``acpe``, ``mlp-experts`` and ``xattn-experts`` embeddings are pretrained
on simulated full-scalp nights (``tuh-19``), then adapted (experts frozen, adapter + head
trained, instance normalisation as the paper does for EESM17) to simulated ``eesm17-ear``
nights of 9 subjects, leave-one-subject-out. Two subjects (s05, s06) get poor-contact channels,
as two EESM17 subjects had. The question: does Device Passport beat ACPE on most held-out
subjects, and is it worse on the poor-contact ones::

    .venv/bin/python benchmarks/transfer_ear.py --quick --out runs/transfer-ear-quick
    .venv/bin/python benchmarks/transfer_ear.py --out runs/transfer-ear                 # ~1 h on 2 cores
    .venv/bin/python benchmarks/transfer_ear.py --quick --shipped --out runs/transfer-ear-shipped

``--shipped`` skips pretraining and adapts the shipped checkpoints instead (``passport-small-acpe``,
``-mlp``, ``-xattn``: pretrained on ``tuh-19`` with one recipe, far longer than the quick scale
can afford; docs/pretraining.md). ``--checkpoints`` adapts any base checkpoints, named or as
folders, each under a label of its own (e.g. an upcycled base beside its source; the first one
is the reference of the difference plot)::

    .venv/bin/python benchmarks/transfer_ear.py --quick --ft-steps 60 --out runs/transfer-ear-up \
        --checkpoints acpe=passport-small-acpe,upcycled=pretrain-work/acpe-up,mlp=passport-small-mlp

``--recipe`` picks how each base is adapted: ``finetune`` (default here: the paper's recipe,
gradient training of adapter and head for ``--ft-steps``) or ``probe`` (the project's default
for ``adapt``: a linear read-out of frozen features; ``--ft-steps`` does not apply).

Output (``--out``): ``per_subject.csv/json`` (kappa per held-out subject and kind, mean ± SD over
pretraining × fine-tuning seeds: the paper's Fig. 5b), ``difference_to_acpe.csv/json`` and
``transfer_ear.png`` (per-subject kappa difference to ACPE with seed SD, poor-contact subjects
boxed: Fig. 5a), ``transfer_ear_kappa.png`` (absolute kappa), ``rows.csv`` (every score),
``run.json``. Rerunning with the same ``--out`` skips finished runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import transfer_common as tc

KINDS = ("acpe", "mlp-experts", "xattn-experts")
PRETRAIN_LAYOUT = "tuh-19"
DOWNSTREAM = "eesm17-ear"
#: Poor contacts of two of the nine subjects (EESM17's subjects 1 and 5 are the paper's 5 and 6).
POOR_CONTACT = "s05:ELA:noise,s05:ELB:noise,s06:ERA:drift,s06:ERE:noise"
POOR_SUBJECTS = ("s05", "s06")
#: The shipped checkpoint of each kind (``--shipped``).
SHIPPED = {"acpe": "passport-small-acpe", "mlp-experts": "passport-small-mlp", "xattn-experts": "passport-small-xattn"}

SCALES = {
    "quick": {"pre_subjects": 4, "pre_hours": 1.0, "ft_hours": 1.0, "pre_steps": 40, "ft_steps": 30, "ft_batch": 16,
                  "seeds": (1, 1)},
    "default": {"pre_subjects": 8, "pre_hours": 2.0, "ft_hours": 2.0, "pre_steps": 300, "ft_steps": 60, "ft_batch": 32,
                    "seeds": (2, 2)},
}


def parse_checkpoints(text: str) -> dict[str, str]:
    """Return {label: checkpoint name or folder} from ``'a=passport-small-acpe,runs/up'``.

    A value without ``LABEL=`` is labelled by its name (a folder: its last part).

    >>> parse_checkpoints("acpe=passport-small-acpe,runs/acpe-up")
    {'acpe': 'passport-small-acpe', 'acpe-up': 'runs/acpe-up'}
    """
    out: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        label, sep, value = item.partition("=")
        if not sep:
            label, value = Path(item.rstrip("/\\")).name, item
        if not label or not value:
            raise argparse.ArgumentTypeError(f"--checkpoints item {item!r}: give NAME_OR_DIR or LABEL=NAME_OR_DIR")
        if label in out:
            raise argparse.ArgumentTypeError(f"--checkpoints: label {label!r} given twice; label them LABEL=...")
        out[label] = value
    if not out:
        raise argparse.ArgumentTypeError("--checkpoints: give at least one NAME_OR_DIR")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = tc.simulated_parser(__doc__.splitlines()[0], default_out="runs/transfer-ear", kinds=KINDS)
    parser.add_argument("--shipped", action="store_true",
                        help="adapt the shipped checkpoints instead of pretraining small ones")
    parser.add_argument("--checkpoints", type=parse_checkpoints, default=None,
                        help="adapt these base checkpoints instead of pretraining: comma-separated NAME_OR_DIR or "
                             "LABEL=NAME_OR_DIR (the label names its column; default: the name or folder name); "
                             "replaces --kinds and --shipped")
    parser.add_argument("--recipe", default="finetune", choices=("finetune", "probe"),
                        help="how each base is adapted: 'finetune' (the paper's recipe, --ft-steps steps; default "
                             "here) or 'probe' (adapt's default: a linear read-out of frozen features)")
    args = parser.parse_args(argv)
    if args.checkpoints and args.shipped:
        parser.error("--checkpoints and --shipped both choose the bases; give one")
    plan = tc.simulated_plan(args, SCALES)
    scale, kinds, n_pre, n_ft = plan.scale, plan.kinds, plan.pretrain_seeds, plan.finetune_seeds
    if args.checkpoints:
        kinds = tuple(args.checkpoints)
    out = Path(args.out)
    record = tc.RunRecord(out, args.threads, plan.settings(
        balance=args.balance, poor_contact=POOR_CONTACT, shipped=args.shipped, recipe=args.recipe,
        **({"checkpoints": args.checkpoints, "kinds": kinds} if args.checkpoints else {})))

    from passport_kit.signals import PreprocessConfig, load_dataset

    ear = tc.ensure_simulated(DOWNSTREAM, out / "data" / "ear", n_subjects=9, hours=scale["ft_hours"], seed=30,
                              bad_channels=POOR_CONTACT)
    if args.checkpoints:
        record.stage("simulate")
        # A run's "kind" is its label here: the tables and plots have one column per label.
        runs = [tc.PretrainRun(PRETRAIN_LAYOUT, label, 0) for label in kinds]
        checkpoints = {run.name: args.checkpoints[run.kind] for run in runs}
    elif args.shipped:
        record.stage("simulate")
        runs = [tc.PretrainRun(PRETRAIN_LAYOUT, kind, 0) for kind in kinds]
        checkpoints: dict[str, Path | str] = {run.name: SHIPPED[run.kind] for run in runs}
    else:
        pre = tc.ensure_simulated(PRETRAIN_LAYOUT, out / "data" / "pretrain", n_subjects=scale["pre_subjects"],
                                  hours=scale["pre_hours"], seed=10)
        record.stage("simulate")
        config = PreprocessConfig.from_dict({"window_seconds": 30, "notch_freq": 50.0, "amplitude_limit_uv": None})
        windows = {PRETRAIN_LAYOUT: (pre, load_dataset(pre, PRETRAIN_LAYOUT, config))}
        runs = [tc.PretrainRun(PRETRAIN_LAYOUT, kind, seed) for seed in range(n_pre) for kind in kinds]
        checkpoints = tc.pretrain_grid(runs, windows, out, budget=plan.budget, threads=args.threads)
        record.stage("pretrain")
    # The probe recipe has no step budget; the fine-tuning one trains ft_steps batches.
    steps = {"max_steps": plan.ft_steps} if args.recipe == "finetune" else {}
    rows = tc.evaluate_grid(
        checkpoints, {run.name: run for run in runs}, out, montage=DOWNSTREAM, data=ear, protocol="loso",
        seeds=n_ft, recipe=args.recipe, **steps, batch_size=scale["ft_batch"], train="adapter", balance=args.balance,
        instance_norm=True, metric="kappa",
        device=args.device, threads=args.threads, notch_freq=50.0,
    )
    record.stage("adapt + score (LOSO)")

    metric = "kappa"
    table = tc.per_subject_table(rows, methods=kinds, metric=metric)
    tc.write_outputs(out, "per_subject", table)
    tc.write_outputs(out, "rows", rows)
    tag = plan.tag
    tc.plot_subject_scores(table, out / "transfer_ear_kappa.png", metric=metric, methods=kinds,
                           title=f"{DOWNSTREAM} LOSO (simulated), {tag}")
    reference = kinds[0] if args.checkpoints else "acpe"
    if reference in kinds and len(kinds) > 1:
        others = [k for k in kinds if k != reference]
        diffs = tc.differences_to(rows, reference=reference, methods=others, metric=metric)
        tc.write_outputs(out, f"difference_to_{reference}", diffs)
        title = (f"difference to {reference}" if args.checkpoints else "Device Passport vs ACPE") + f", {DOWNSTREAM}, {tag}"
        tc.plot_difference_bars(diffs, out / "transfer_ear.png", metric=metric, reference=reference, methods=others,
                                outline=POOR_SUBJECTS, title=title)
    record.stage("tables + figures")
    n_train = sorted({r["n_train_subjects"] for r in rows})
    record.finish({"n_train_subjects": n_train})
    print(tc.markdown_table(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
