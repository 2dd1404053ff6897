"""A pretraining process for the tests that need real processes (torchrun DDP, SIGKILL).

Usage: ``python pretrain_worker.py FOLDER STEPS CHECKPOINT_EVERY [--resume] [--init-from BASE] [--workers N]``. Each rank
records which windows it trained on and its final weights under FOLDER; the pretraining
itself writes the run (FOLDER/run) from rank 0 only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pretrain_helpers import tiny_config, two_montage_data
from safetensors.torch import save_file

from passport_kit.pretrain.run import StepEvent, pretrain


def main(folder: Path, steps: int, checkpoint_every: int, resume: bool, init_from: str | None = None,
         workers: int = 0) -> None:
    seen: list[dict] = []

    def record(event: StepEvent) -> None:
        seen.append({"step": event.step, "montage": event.montage, "windows": event.window_ids})
        print(f"rank {event.rank} step {event.step}", flush=True)

    def dump(model, rank: int) -> None:  # noqa: ANN001
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / f"rank{rank}.safetensors"))
        (folder / f"rank{rank}.json").write_text(json.dumps({"rank": rank, "steps": seen}))

    upcycling = {"init_from": init_from} if init_from else {}
    cfg = tiny_config(folder / "run", steps=steps, checkpoint_every=checkpoint_every, val_fraction=0.0, resume=resume,
                      workers=workers, **upcycling)
    pretrain(cfg, datasets=two_montage_data(), on_step=record, on_end=dump)


if __name__ == "__main__":
    options = sys.argv[4:]
    source = options[options.index("--init-from") + 1] if "--init-from" in options else None
    n_workers = int(options[options.index("--workers") + 1]) if "--workers" in options else 0
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), "--resume" in options, source, n_workers)
