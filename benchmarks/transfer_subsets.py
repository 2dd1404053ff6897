"""The paper's controlled layout-transfer experiment (Fig. 4) at laptop scale, on simulated sleep EEG.

Small models are pretrained on three 6-electrode subsets (``tuh-standard``, ``tuh-frontal``,
``tuh-temporal``) of the *same* simulated scalp nights, once per channel-embedding kind and
pretraining seed; each is then fine-tuned on ``tuh-standard`` (the downstream layout; other
simulated subjects) with a sweep over the number of fine-tuning subjects and a fixed step
budget, and scored on held-out subjects (a fixed subject-disjoint split). Standard→standard is
the matched setting; frontal→standard and temporal→standard are the layout-transfer settings in
which the paper reports Device Passport ahead of ACPE::

    .venv/bin/python benchmarks/transfer_subsets.py --quick --threads 1 --out runs/transfer-subsets-q2   # ~40 min
    .venv/bin/python benchmarks/transfer_subsets.py --out runs/transfer-subsets          # estimated ~3 h, 1 thread
    .venv/bin/python benchmarks/transfer_subsets.py --seeds 5x5 --steps 20000 --arch cbramod-base --device cuda ...

Differences to the paper (see docs/transfer.md): the downstream task is 5-class sleep staging
of simulated nights (kappa), not TUAB abnormality detection (AUROC); the models are tiny and
pretrained for hundreds of steps, not hundreds of thousands; the seeds are few.

Output (``--out``): ``curves.csv/json`` (metric vs subjects per layout and kind, mean ± SD over
seeds), ``overall.csv/json`` (per layout and kind, averaged over the sweep), ``rows.csv``
(every per-subject score), ``transfer_subsets.png`` (one panel per pretraining layout),
``transfer_subsets_acpe.png`` (ACPE across pretraining layouts, the paper's panel a),
``pretraining.csv/json`` (per model: held-out masked MSE against predicting zeros),
``run.json`` (command, machine, wall time). Rerunning with the same ``--out`` skips finished
pretraining and fine-tuning runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import transfer_common as tc

LAYOUTS = ("tuh-standard", "tuh-temporal", "tuh-frontal")
KINDS = ("ape", "channel-id", "xyz", "acpe", "mlp-experts", "xattn-experts")
DOWNSTREAM = "tuh-standard"

#: Sizes per scale. Pretraining: ``pre_steps`` × ``pre_batch`` windows at peak lr ``pre_lr`` per
#: model (18 models per pretraining seed). The quick budget (600 × 8, lr 2e-3) comes from a pilot
#: on the quick data: after 600 steps held-out MSE / predicting zeros was 0.52 (mlp-experts,
#: temporal) and 0.73 (xattn-experts, frontal), at ~16 s per 100 steps at 1 thread, so pretraining
#: is ~30 of the quick run's ~40 min. The 40 steps used before left the models at or near the zero
#: predictor (ratios 0.85–1.02), so that run tested near-initial embeddings. Every model's ratio is in
#: its MODEL_CARD.md and in ``pretraining.csv``.
SCALES = {
    "quick": {"pre_subjects": 4, "pre_hours": 1.0, "ft_subjects": 8, "ft_hours": 1.0, "sweep": (1, 2, 4),
              "pre_steps": 600, "pre_batch": 8, "pre_lr": 2e-3, "ft_steps": 30, "ft_batch": 16, "seeds": (1, 1)},
    "default": {"pre_subjects": 8, "pre_hours": 2.0, "ft_subjects": 12, "ft_hours": 1.0, "sweep": (1, 2, 4, 8),
                "pre_steps": 1000, "pre_batch": 8, "pre_lr": 2e-3, "ft_steps": 60, "ft_batch": 32, "seeds": (2, 2)},
}


def main(argv: list[str] | None = None) -> int:
    parser = tc.simulated_parser(__doc__.splitlines()[0], default_out="runs/transfer-subsets", kinds=KINDS)
    parser.add_argument("--train", default="adapter", choices=("adapter", "head", "full"))
    args = parser.parse_args(argv)
    plan = tc.simulated_plan(args, SCALES)
    scale, kinds, n_pre, n_ft = plan.scale, plan.kinds, plan.pretrain_seeds, plan.finetune_seeds
    out = Path(args.out)
    record = tc.RunRecord(out, args.threads, plan.settings(train=args.train, balance=args.balance))

    from passport_kit.signals import PreprocessConfig, load_dataset

    # One simulated scalp data set for pretraining, another (other brains) for fine-tuning; both
    # on the full 19 sites and read through the 6-electrode subsets, so every subset sees the
    # same nights through its own electrodes.
    pre = tc.ensure_simulated("tuh-19", out / "data" / "pretrain", n_subjects=scale["pre_subjects"],
                              hours=scale["pre_hours"], seed=10)
    ft = tc.ensure_simulated("tuh-19", out / "data" / "finetune", n_subjects=scale["ft_subjects"],
                             hours=scale["ft_hours"], seed=20)
    record.stage("simulate")
    config = PreprocessConfig.from_dict({"window_seconds": 30, "notch_freq": 50.0, "amplitude_limit_uv": None})
    windows = {layout: (pre, load_dataset(pre, layout, config)) for layout in LAYOUTS}
    runs = [tc.PretrainRun(layout, kind, seed) for seed in range(n_pre) for layout in LAYOUTS for kind in kinds]
    checkpoints = tc.pretrain_grid(runs, windows, out, budget=plan.budget, threads=args.threads)
    record.stage("pretrain")
    pretraining = tc.pretraining_table(checkpoints, {run.name: run for run in runs})
    tc.write_outputs(out, "pretraining", pretraining)
    rows = tc.evaluate_grid(
        checkpoints, {run.name: run for run in runs}, out, montage=DOWNSTREAM, data=ft, protocol="split",
        subjects_sweep=scale["sweep"],
        seeds=n_ft, max_steps=plan.ft_steps, batch_size=scale["ft_batch"], train=args.train, balance=args.balance,
        metric="kappa", device=args.device, threads=args.threads, notch_freq=50.0,
    )
    record.stage("fine-tune + score")

    metric = "kappa"
    unit = ("pretrain_seed", "seed")
    curves = tc.summarise(rows, by=("layout", "kind", "n_train_subjects"), unit=unit, metric=metric)
    overall = tc.summarise(rows, by=("layout", "kind"), unit=unit, metric=metric)
    tc.write_outputs(out, "curves", curves)
    tc.write_outputs(out, "overall", overall)
    tc.write_outputs(out, "rows", rows)
    tag = plan.tag
    tc.plot_sweep_panels(curves, out / "transfer_subsets.png", metric=metric, panels=LAYOUTS, lines=kinds,
                         title=f"Fine-tuned on {DOWNSTREAM} (simulated sleep), {tag}")
    if "acpe" in kinds:
        tc.plot_sweep_panels(curves, out / "transfer_subsets_acpe.png", metric=metric, panels=("acpe",),
                             lines=LAYOUTS, panel_key="kind", line_key="layout",
                             panel_title="{}: pretraining layout", title=f"ACPE, {tag}")
    record.stage("tables + figures")
    record.finish()
    print(tc.markdown_table(pretraining))
    print(tc.markdown_table(overall))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
