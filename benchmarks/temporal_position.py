"""Can a backbone fill a masked patch of a ONE-channel recording? The temporal position, measured (issue 25).

With one channel, masked-patch reconstruction has only the channel's own past and future
patches to go on (no other channel to copy from). This trains a fresh ``cbramod-small``
backbone for ``--steps`` steps of 16 one-channel windows (masked patch reconstruction, mask
probability 0.5, AdamW 1e-3) and prints held-out MSE / predicting zeros every 100 steps, for
three ways of telling the backbone where a patch sits in time:

- ``mlp-experts (sinusoid)``: the expert kind as ``pretrain --embedding mlp-experts`` builds it from
  scratch: the fixed patch-index sinusoid;
- ``mlp-experts (acpe-conv)``: the same kind with CBraMod's depthwise convolution over the patch
  grid as the temporal position (what ``pretrain --init-from <acpe base>`` keeps);
- ``acpe``: CBraMod's own embedding (that convolution, no expert bank).

Tasks: ``sine`` (one slow sinusoid per window, 0.3-1.5 Hz, random phase, 10-30 µV: a masked
second is fixed by its neighbours) and ``dreams`` (train DREAMS excerpt 3, C3-A1; held out:
excerpt 1; ``../shared/data/dreams-spindles``, skipped cleanly when absent)::

    OMP_NUM_THREADS=1 .venv/bin/python -u benchmarks/temporal_position.py --steps 300
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch
import yaml

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data"
#: C3 in the head frame (mm), as in the built-in tuh-19 montage.
C3_MM = [-67.1, 23.4, 104.5]
VARIANTS = {"mlp-experts (sinusoid)": ("mlp-experts", "sinusoid"),
            "mlp-experts (acpe-conv)": ("mlp-experts", "acpe-conv"), "acpe": ("acpe", None)}


def one_channel_montage(folder: Path) -> Path:
    """Return a montage file with the one channel C3 (alias C3-A1)."""
    path = folder / "one-c3.yaml"
    path.write_text(yaml.safe_dump({"name": "one-c3", "coordinate_frame": "head", "units": "mm", "reference": "A1",
                                    "channels": [{"name": "C3", "position": C3_MM, "aliases": ["C3-A1"]}]}))
    return path


def sine_windows(n: int, rng: np.random.Generator) -> torch.Tensor:
    """Return ``(n, 1, 30, 200)`` windows of one slow sinusoid each, in units of 100 µV."""
    t = np.arange(6000) / 200.0
    f, phase, amp = rng.uniform(0.3, 1.5, (n, 1)), rng.uniform(0, 2 * np.pi, (n, 1)), rng.uniform(0.1, 0.3, (n, 1))
    return torch.tensor((amp * np.sin(2 * np.pi * f * t + phase)).reshape(n, 1, 30, 200), dtype=torch.float32)


def dreams_windows(data: Path, montage_path: Path, work: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (train, held-out) ``(N, 1, 30, 200)`` windows: DREAMS excerpt 3 and excerpt 1, C3-A1, as pretrain reads them."""
    from passport_kit.montage import resolve_montage
    from passport_kit.pretrain.run import source_preprocess
    from passport_kit.signals import load_dataset
    from passport_kit.signals.preprocess import PreprocessConfig

    folder = work / "dreams"
    folder.mkdir()
    recordings = [{"subject": f"excerpt{k}", "file": str((data / f"excerpt{k}.txt").resolve()), "sfreq": sf,
                   "channels": {"C3": "C3-A1"}} for k, sf in ((1, 100), (3, 50))]
    (folder / "dataset.yaml").write_text(yaml.safe_dump({"task": "classification", "allow_outside_paths": True,
                                                         "recordings": recordings}))
    pre = PreprocessConfig.from_dict({"window_seconds": 30.0, "notch_freq": 50.0, "amplitude_limit_uv": 500.0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ws = load_dataset(folder, resolve_montage(montage_path), source_preprocess(folder, pre))
    x = np.asarray(ws.x, dtype=np.float32)
    good = ~(np.asarray(ws.flags) != 0).any(axis=1)
    subject = np.asarray(ws.subject).astype(str)
    return torch.tensor(x[good & (subject == "excerpt3")]), torch.tensor(x[good & (subject == "excerpt1")])


def held_out_ratio(backbone: torch.nn.Module, meta: object, x: torch.Tensor) -> float:
    """Return masked-patch MSE / MSE of predicting zeros on ``x`` (fixed masks)."""
    from passport_kit.pretrain.objective import masked_mse, random_mask

    backbone.eval()
    with torch.no_grad():
        mask = random_mask(tuple(x.shape[:3]), 0.5, torch.Generator().manual_seed(5))
        ratio = float(masked_mse(backbone.reconstruct(x, meta, mask), x, mask) / x[mask].pow(2).mean())
    backbone.train()
    return ratio


def train(task: str, variant: str, steps: int, meta: object, train_x: torch.Tensor | None, val_x: torch.Tensor,
          seed: int) -> list[tuple[int, float, float]]:
    """Return (step, held-out ratio, seconds) every 100 steps for one variant on one task."""
    from passport_kit.model import build_backbone
    from passport_kit.model.config import model_config
    from passport_kit.pretrain.objective import masked_mse, random_mask

    kind, temporal = VARIANTS[variant]
    torch.manual_seed(seed)
    backbone = build_backbone(model_config("cbramod-small", kind, **({"temporal_position": temporal} if temporal else {})))
    optimizer = torch.optim.AdamW(backbone.parameters(), lr=1e-3, weight_decay=0.05)
    rng, masks = np.random.default_rng(seed), torch.Generator().manual_seed(seed + 1)
    rows, t0 = [], time.perf_counter()
    for step in range(1, steps + 1):
        x = sine_windows(16, rng) if train_x is None else train_x[rng.integers(0, len(train_x), 16)]
        mask = random_mask(tuple(x.shape[:3]), 0.5, masks)
        loss = masked_mse(backbone.reconstruct(x, meta, mask), x, mask)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(backbone.parameters(), 1.0)
        optimizer.step()
        if step % 100 == 0:
            rows.append((step, held_out_ratio(backbone, meta, val_x), time.perf_counter() - t0))
            print(f"{task:6s} {variant:24s} step {step:4d}  held-out MSE / zeros {rows[-1][1]:.3f}  "
                  f"({rows[-1][2]:.0f} s)", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding dreams-spindles/")
    parser.add_argument("--tasks", default="sine,dreams")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    from passport_kit.model import ChannelMeta
    from passport_kit.montage import resolve_montage

    with tempfile.TemporaryDirectory() as tmp:
        montage_path = one_channel_montage(Path(tmp))
        meta = ChannelMeta.from_montage(resolve_montage(montage_path))
        results = []
        for task in args.tasks.split(","):
            if task == "dreams":
                if not (args.data / "dreams-spindles" / "excerpt3.txt").is_file():
                    print(f"temporal_position: no DREAMS excerpts under {args.data}; dreams skipped")
                    continue
                train_x, val_x = dreams_windows(args.data / "dreams-spindles", montage_path, Path(tmp))
            else:
                train_x, val_x = None, sine_windows(64, np.random.default_rng(args.seed + 100))
            for variant in args.variants.split(","):
                rows = train(task, variant, args.steps, meta, train_x, val_x, args.seed)
                results.append((task, variant, rows[-1][1] if rows else float("nan")))
    print("\n| task | temporal position | held-out MSE / zeros after %d steps |\n|---|---|---|" % args.steps)
    for task, variant, ratio in results:
        print(f"| {task} | {variant} | {ratio:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
