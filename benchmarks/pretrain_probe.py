"""Short masked-reconstruction probes: which initialisation lets a channel embedding learn?

Trains a fresh ``cbramod-tiny`` backbone for a few hundred steps on windows held in memory
(the first ``--patches`` seconds of each 30-s window of a simulated dataset) and prints the
held-out masked MSE divided by the MSE of predicting zeros, every 100 steps. The ``--head`` and
``--mixture`` options put back the initialisations used before session 2 so that the
comparison in docs/pretraining.md can be rerun:

    .venv/bin/passport-kit simulate --montage tuh-19 --subjects 16 --hours 2 --seed 0 --out /tmp/sim
    .venv/bin/python benchmarks/pretrain_probe.py /tmp/sim --kind mlp-experts --head cbramod --mixture default

The loss, masking and optimiser are pretraining's own (masked_mse, random_mask, AdamW with
weight decay 5e-2, cosine schedule, gradient clipping 1); only the data pipeline is a fixed
in-memory sample, so that one probe takes ~2 min on one core.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch
from torch import nn

from passport_kit.model import ChannelMeta, build_backbone
from passport_kit.model.channel_embedding import _ExpertEmbedding
from passport_kit.model.config import EMBEDDING_KINDS, model_config
from passport_kit.montage import resolve_montage
from passport_kit.signals import load_dataset
from passport_kit.signals.preprocess import PreprocessConfig
from passport_kit.pretrain import corpus as pdata
from passport_kit.pretrain.objective import masked_mse, random_mask


def load_windows(folder: str, montage: str, n_train: int, n_val: int, patches: int) -> tuple[torch.Tensor, torch.Tensor, ChannelMeta]:
    """Return train ``(N, C, P, 200)``, held-out-subject windows and the channel metadata."""
    pre = PreprocessConfig.from_dict({"window_seconds": 30, "notch_freq": None, "amplitude_limit_uv": None})
    m = resolve_montage(montage)
    corpus = pdata.build_corpus([(folder, load_dataset(folder, m, pre))], val_fraction=0.15, seed=42)
    rng = np.random.default_rng(0)
    out = []
    for pool, n in ((corpus.train[0], n_train), (corpus.val[0], n_val)):
        rows = np.sort(rng.permutation(len(pool))[:n])
        out.append(torch.from_numpy(pool.gather(rows)).float()[:, :, :patches])
    return out[0], out[1], ChannelMeta.from_montage(m)


def old_initialisation(backbone: nn.Module, head: str, mixture: str) -> None:
    """Put back the pre-session-2 initialisation of the head and/or the expert mixture."""
    if head == "cbramod":
        lin = backbone.proj_out[0]
        nn.init.kaiming_normal_(lin.weight, mode="fan_out", nonlinearity="relu")
        bound = 1 / math.sqrt(lin.in_features)  # PyTorch's default bias init, as before
        nn.init.uniform_(lin.bias, -bound, bound)
    emb = backbone.channel_embedding
    if mixture == "default" and isinstance(emb, _ExpertEmbedding):
        nn.init.trunc_normal_(emb.experts, std=0.02)
        for sub in emb.mixture:
            if isinstance(sub, nn.Linear):
                sub.reset_parameters()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data", help="simulated dataset folder (passport-kit simulate --montage tuh-19)")
    p.add_argument("--montage", default="tuh-19")
    p.add_argument("--kind", choices=EMBEDDING_KINDS, default="mlp-experts")
    p.add_argument("--head", choices=["zero", "cbramod"], default="zero", help="reconstruction head init")
    p.add_argument("--mixture", choices=["geometric", "default"], default="geometric", help="expert mixture init")
    p.add_argument("--steps", type=int, default=800)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--patches", type=int, default=10)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=42)
    a = p.parse_args()
    torch.set_num_threads(1)
    xt, xv, meta = load_windows(a.data, a.montage, 3000, 128, a.patches)
    torch.manual_seed(a.seed)
    vocab = list(meta.names) if a.kind == "channel-id" else []
    model = build_backbone(model_config("cbramod-tiny", a.kind, channel_vocab=vocab))
    old_initialisation(model, a.head, a.mixture)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.05)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / a.steps)))
    gen = torch.Generator().manual_seed(0)

    def held_out_ratio() -> float:
        model.eval()
        g = torch.Generator().manual_seed(1)
        err = zero = 0.0
        with torch.no_grad():
            for i in range(0, len(xv), 32):
                x = xv[i : i + 32]
                mask = random_mask(tuple(x.shape[:3]), 0.5, g)
                recon = model.reconstruct(x, meta, mask)
                err += float((recon[mask] - x[mask]).pow(2).sum())
                zero += float(x[mask].pow(2).sum())
        model.train()
        return err / zero

    t0 = time.time()
    for step in range(1, a.steps + 1):
        x = xt[torch.randint(len(xt), (a.batch,), generator=gen)]
        mask = random_mask(tuple(x.shape[:3]), 0.5, gen)
        loss = masked_mse(model.reconstruct(x, meta, mask), x, mask)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 100 == 0 or step == a.steps:
            print(f"{a.kind} head={a.head} mixture={a.mixture} step {step}: held-out MSE / zeros"
                  f" {held_out_ratio():.3f} ({time.time() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
