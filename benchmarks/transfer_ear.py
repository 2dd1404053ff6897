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
can afford; docs/pretraining.md).

Output (``--out``): ``per_subject.csv/json`` (kappa per held-out subject and kind, mean ± SD over
pretraining × fine-tuning seeds: the paper's Fig. 5b), ``difference_to_acpe.csv/json`` and
``transfer_ear.png`` (per-subject kappa difference to ACPE with seed SD, poor-contact subjects
boxed: Fig. 5a), ``transfer_ear_kappa.png`` (absolute kappa), ``rows.csv`` (every score),
``run.json``. Rerunning with the same ``--out`` skips finished runs.
"""

from __future__ import annotations

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


def main(argv: list[str] | None = None) -> int:
    parser = tc.simulated_parser(__doc__.splitlines()[0], default_out="runs/transfer-ear", kinds=KINDS)
    parser.add_argument("--shipped", action="store_true",
                        help="adapt the shipped checkpoints instead of pretraining small ones")
    args = parser.parse_args(argv)
    plan = tc.simulated_plan(args, SCALES)
    scale, kinds, n_pre, n_ft = plan.scale, plan.kinds, plan.pretrain_seeds, plan.finetune_seeds
    out = Path(args.out)
    record = tc.RunRecord(out, args.threads, plan.settings(balance=args.balance, poor_contact=POOR_CONTACT,
                                                            shipped=args.shipped))

    from passport_kit.signals import PreprocessConfig, load_dataset

    ear = tc.ensure_simulated(DOWNSTREAM, out / "data" / "ear", n_subjects=9, hours=scale["ft_hours"], seed=30,
                              bad_channels=POOR_CONTACT)
    if args.shipped:
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
    rows = tc.evaluate_grid(
        checkpoints, {run.name: run for run in runs}, out, montage=DOWNSTREAM, data=ear, protocol="loso",
        seeds=n_ft, max_steps=plan.ft_steps, batch_size=scale["ft_batch"], train="adapter", balance=args.balance,
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
    if "acpe" in kinds and len(kinds) > 1:
        others = [k for k in kinds if k != "acpe"]
        diffs = tc.differences_to(rows, reference="acpe", methods=others, metric=metric)
        tc.write_outputs(out, "difference_to_acpe", diffs)
        tc.plot_difference_bars(diffs, out / "transfer_ear.png", metric=metric, reference="acpe", methods=others,
                                outline=POOR_SUBJECTS, title=f"Device Passport vs ACPE, {DOWNSTREAM}, {tag}")
    record.stage("tables + figures")
    n_train = sorted({r["n_train_subjects"] for r in rows})
    record.finish({"n_train_subjects": n_train})
    print(tc.markdown_table(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
