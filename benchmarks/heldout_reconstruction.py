"""Held-out masked reconstruction of a base checkpoint per source, against predicting zeros, with intervals.

The model card of a pretraining run reports one ratio per source (MSE of the model / MSE of
predicting zeros on the masked patches of held-out subjects). This recomputes it for any base
checkpoint on the same windows (``pretrain``'s reading: ``source_preprocess``, flagged windows
dropped), with a 95 % bootstrap interval over windows (the ratio of sums, resampled by window),
so that "beats zeros" can be read with its uncertainty. Masks: Bernoulli(0.5) per patch from
``--seed``, the same for every checkpoint compared::

    OMP_NUM_THREADS=1 .venv/bin/python -u benchmarks/heldout_reconstruction.py \\
        --checkpoint checkpoints/passport-real-mlp --checkpoint passport-small-mlp \\
        --source pretrain-real-work/sources/dreams=pretrain-real-work/sources/dreams-c3.yaml \\
        --held dreams-excerpt1
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import torch


def window_errors(checkpoint: str, x: np.ndarray, montage: object, seed: int, batch: int = 16) -> np.ndarray:
    """Return ``(N, 2)``: per window, the squared error summed over masked samples of the model, and of zeros."""
    from passport_kit.checkpoint import load_base_checkpoint
    from passport_kit.model import ChannelMeta
    from passport_kit.pretrain.objective import random_mask

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        backbone, _ = load_base_checkpoint(checkpoint)
    backbone.eval()
    if hasattr(backbone, "add_channels"):
        backbone.add_channels(list(montage.ch_names))
    meta = ChannelMeta.from_montage(montage)
    gen = torch.Generator().manual_seed(seed)
    out = np.zeros((len(x), 2))
    with torch.no_grad():
        for i in range(0, len(x), batch):
            xb = torch.from_numpy(x[i:i + batch])
            mask = random_mask(tuple(xb.shape[:3]), 0.5, gen)
            recon = backbone.reconstruct(xb, meta, mask).float()
            m = mask.unsqueeze(-1).float()
            out[i:i + batch, 0] = (((recon - xb) ** 2) * m).sum(dim=(1, 2, 3)).numpy()
            out[i:i + batch, 1] = ((xb ** 2) * m).sum(dim=(1, 2, 3)).numpy()
    return out


def ratio_interval(errors: np.ndarray, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Return the ratio of summed errors (model / zeros) and its 95 % bootstrap interval over windows."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(errors), (n_boot, len(errors)))
    boot = errors[idx, 0].sum(axis=1) / errors[idx, 1].sum(axis=1)
    return float(errors[:, 0].sum() / errors[:, 1].sum()), float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", action="append", required=True, help="base checkpoint (name or folder); repeat")
    parser.add_argument("--source", action="append", required=True, help="DATASET_DIR=MONTAGE (name or file); repeat")
    parser.add_argument("--held", required=True, help="held-out subjects, comma-separated (others are skipped)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--amplitude-limit-uv", type=float, default=500.0)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    from passport_kit.montage import resolve_montage
    from passport_kit.pretrain.run import source_preprocess
    from passport_kit.signals import load_dataset
    from passport_kit.signals.preprocess import PreprocessConfig

    held = set(args.held.split(","))
    pre = PreprocessConfig.from_dict({"window_seconds": 30.0, "notch_freq": 50.0,
                                      "amplitude_limit_uv": args.amplitude_limit_uv})
    print("| source | held-out windows | checkpoint | MSE / zeros | 95 % bootstrap (windows) |\n|---|---|---|---|---|")
    for item in args.source:
        folder, _, montage_name = item.partition("=")
        if not Path(folder, "dataset.yaml").is_file():
            print(f"heldout_reconstruction: no dataset.yaml in {folder}; skipped", file=sys.stderr)
            continue
        montage = resolve_montage(montage_name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ws = load_dataset(Path(folder), montage, source_preprocess(Path(folder), pre))
        good = ~(np.asarray(ws.flags) != 0).any(axis=1) & np.isin(np.asarray(ws.subject).astype(str), sorted(held))
        x = np.asarray(ws.x, dtype=np.float32)[good]
        for checkpoint in args.checkpoint:
            ratio, lo, hi = ratio_interval(window_errors(checkpoint, x, montage, args.seed))
            print(f"| {Path(folder).name} | {len(x)} | {Path(checkpoint).name} | {ratio:.3f} | [{lo:.3f}, {hi:.3f}] |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
