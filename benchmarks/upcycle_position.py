"""Upcycling an `acpe` base: keep its convolution for time, or replace it by the sinusoid?

Grows an `mlp-experts` bank on the frozen backbone of an `acpe` base checkpoint
(``pretrain --init-from BASE --train experts``) in four variants - temporal position kept
(``acpe-conv``) or replaced (``sinusoid``), experts started at zero (what upcycling does) or
re-drawn with the expert kinds' usual std 1 (what pretraining from scratch does) - and prints the held-out masked-reconstruction MSE over the MSE of predicting zeros, at the
start (the source model itself) and every ``--val-every`` steps. Data: a labeled folder read
once into memory; subjects held out as pretraining does. The result is in docs/model.md:

    .venv/bin/passport-kit simulate --montage tuh-19 --subjects 6 --hours 0.5 --seed 7 --out /tmp/up/sim
    .venv/bin/python benchmarks/upcycle_position.py /tmp/up/sim --base passport-small-acpe --steps 300
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import torch

from passport_kit import runtime
from passport_kit.checkpoint import load_base_checkpoint
from passport_kit.model import ChannelMeta
from passport_kit.montage import resolve_montage
from passport_kit.signals import load_dataset
from passport_kit.signals.preprocess import PreprocessConfig
from passport_kit.pretrain import corpus as pdata
from passport_kit.pretrain import upcycle
from passport_kit.pretrain.objective import heldout_mse
from passport_kit.pretrain.run import DataSource, PretrainConfig, pretrain


def ratio(result: dict) -> float:
    """Return held-out model MSE / zero-predictor MSE."""
    return result["val_loss"] / result["val_zero_loss"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data")
    parser.add_argument("--montage", default="tuh-19")
    parser.add_argument("--base", default="passport-small-acpe")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--val-every", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", default="/tmp/upcycle-position")
    args = parser.parse_args()

    runtime.set_threads(1)
    pre = PreprocessConfig.from_dict({"window_seconds": 30, "amplitude_limit_uv": None})
    windows = load_dataset(args.data, resolve_montage(args.montage), pre)
    datasets = [(args.data, windows)]
    base = dict(sources=[DataSource(path=Path(args.data), montage=args.montage)], embedding="mlp-experts",
                init_from=args.base, train="experts", steps=args.steps, batch_size=args.batch_size, lr=args.lr,
                seed=args.seed, val_fraction=0.34, val_max_windows=64, val_every=args.val_every,
                checkpoint_every=args.steps, amplitude_limit_uv=None, device="cpu", precision="fp32", threads=1,
                progress=False)

    # The source model on the same held-out windows and masks.
    cfg = PretrainConfig(out=Path(args.out) / "source", **base)
    corpus = pdata.build_corpus(datasets, val_fraction=cfg.val_fraction, seed=cfg.seed)
    source, _ = load_base_checkpoint(args.base)
    metas = [ChannelMeta.from_montage(p.montage) for p in corpus.val]
    scored = len(pdata.validation_rows(corpus.val[0], cfg.val_max_windows))
    print(f"source {args.base}: held-out ratio {ratio(heldout_mse(source, corpus, metas, cfg, torch.device('cpu'), 'fp32')):.3f}"
          f" ({scored} of {len(corpus.val[0])} held-out windows scored, {len(corpus.train[0])} training windows)")

    build = upcycle.build_upcycled
    for position in ("acpe-conv", "sinusoid"):
        for start in ("zero", "std1"):
            def build_variant(info, tensors, config, _start=start):  # noqa: ANN001, ANN202
                backbone = build(info, tensors, config)  # experts at zero
                if _start == "std1":
                    experts = backbone.channel_embedding.experts
                    std = backbone.channel_embedding.expert_init_std
                    torch.nn.init.trunc_normal_(experts, std=std, a=-3 * std, b=3 * std)
                return backbone

            upcycle.build_upcycled = build_variant
            out = Path(args.out) / f"{position}-{start}"
            t0 = time.perf_counter()
            pretrain(PretrainConfig(out=out, temporal_position=position, **base), datasets=datasets)
            with open(out / "train" / "metrics.csv") as fh:
                rows = [r for r in csv.DictReader(fh) if r["val_loss"]]
            curve = "  ".join(f"{r['step']}: {float(r['val_loss']) / float(r['val_zero_loss']):.3f}" for r in rows)
            print(f"{position:9s} experts {start}: {curve}  ({time.perf_counter() - t0:.0f} s)", flush=True)
    upcycle.build_upcycled = build
    print(runtime.describe(torch.device("cpu"), "fp32"))


if __name__ == "__main__":
    main()
