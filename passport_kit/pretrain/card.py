"""The record of a pretraining run: ``training_info`` (config.json) and MODEL_CARD.md.

A model card says exactly what produced the weights (data, montages, preprocessing,
configuration, steps, wall time, final loss), how well it reconstructs held-out subjects
next to predicting zeros, and what it is not.
"""

from __future__ import annotations

import datetime as _dt
import shlex
from typing import Any

from passport_kit.version import __version__


def reproduce_command(cfg: Any) -> str:
    """Return the ``passport-kit pretrain`` command line that repeats a run."""
    parts = ["passport-kit", "pretrain"]
    montage_files = []
    for source in cfg.sources:
        if any(sep in source.montage for sep in "/\\"):  # a montage file: --data DIR:PATH does not parse
            parts += ["--data", str(source.path)]
            montage_files.append(source.montage)
        else:
            parts += ["--data", f"{source.path}:{source.montage}"]
    for montage in montage_files:  # one per plain --data, in order (parse_sources)
        parts += ["--montage", montage]
    parts += ["--embedding", cfg.embedding]
    if cfg.init_from is None:
        parts += ["--config", cfg.arch]
    else:  # the architecture is the source's
        parts += ["--init-from", str(cfg.init_from), "--train", cfg.trained_part]
        if cfg.temporal_position is not None:
            parts += ["--temporal-position", cfg.temporal_position]
    parts += ["--steps", str(cfg.steps), *(["--stop-at", str(cfg.stop_at)] if cfg.stop_at is not None else []),
              "--batch-size", str(cfg.batch_size), "--lr", f"{cfg.lr:g}", "--seed", str(cfg.seed),
              "--val-fraction", f"{cfg.val_fraction:g}", "--val-max-windows", str(cfg.val_max_windows),
              *(["--val-subjects", ",".join(cfg.val_subjects)] if cfg.val_subjects else []),
              "--notch", "none" if cfg.notch_freq is None else f"{cfg.notch_freq:g}",
              "--amplitude-limit-uv", "none" if cfg.amplitude_limit_uv is None else f"{cfg.amplitude_limit_uv:g}",
              "--out", str(cfg.out)]
    if cfg.workers is not None:  # speed only: the weights do not depend on it
        parts += ["--workers", str(cfg.workers)]
    return shlex.join(parts)


def training_info(
    cfg: Any,
    corpus: Any,
    preprocess: Any,
    validation: dict[str, float],
    final_loss: float,
    wall_s: float,
    *,
    objective: dict[str, Any],
    world_size: int,
    workers: int = 0,
    runtime_line: str,
) -> dict[str, Any]:
    """Return the JSON-able description of a finished run (stored in config.json).

    ``objective``: what the objective records of itself (:meth:`~passport_kit.pretrain.objective.Objective.record`).
    """
    val = dict(validation)
    if val.get("val_zero_loss"):
        val["ratio_to_zero"] = val["val_loss"] / val["val_zero_loss"]
    return {
        **objective,
        "optimizer": {"name": "AdamW", "lr": cfg.lr, "weight_decay": cfg.weight_decay,
                      "schedule": "cosine per step", "eta_min": cfg.eta_min, "grad_clip": cfg.grad_clip},
        "steps": cfg.last_step,
        **({"schedule_steps": cfg.steps} if cfg.stop_at is not None else {}),
        "batch_size_per_process": cfg.batch_size,
        "world_size": world_size,
        "data_workers_per_process": workers,
        "seed": cfg.seed,
        "data": [
            {"path": s.path, "montage": s.montage, "subjects": s.n_subjects, "recordings": s.n_recordings,
             "windows": s.n_windows, "dropped_flagged": s.n_dropped, "train_windows": s.train_windows,
             "val_windows": s.val_windows, "val_subjects": s.val_subjects,
             "train_hours": round(s.train_hours, 3)}
            for s in corpus.sources
        ],
        "montages": sorted({s.montage for s in corpus.sources}),
        "preprocess": preprocess.model_dump(mode="json"),
        "wall_time_s": round(wall_s, 1),
        "final_train_loss": final_loss,
        "validation": val,
        "runtime": runtime_line,
        "command": reproduce_command(cfg),
        "package_version": __version__,
        "finished_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def model_card(cfg: Any, model_cfg: Any, info: dict[str, Any], objective: Any, init_from: Any = None) -> str:
    """Return MODEL_CARD.md for a pretraining run (``init_from``: the upcycling record, if any).

    ``objective`` (:class:`~passport_kit.pretrain.objective.Objective`) writes its own parts: its ``title``, its
    bullet (:meth:`~passport_kit.pretrain.objective.Objective.card_lines`) and the held-out validation section
    (:meth:`~passport_kit.pretrain.objective.Objective.card_validation`).
    """
    lines = [
        f"A passport-kit base checkpoint: the CBraMod criss-cross backbone (`{model_cfg.arch}`, "
        f"{model_cfg.n_layers} layers, d={model_cfg.d_model}) with the `{model_cfg.embedding}` channel embedding"
        + (f" ({model_cfg.n_experts} experts and their mixture network)" if model_cfg.embedding.endswith("experts") else "")
        + f", pretrained by {objective.title}.",
        "",
    ]
    if init_from is not None:
        what = ("the expert bank and mixture network only; every other tensor, "
                f"{len(init_from.frozen_tensors)} in all, is the source's bit for bit"
                if init_from.trained == "experts" else "every tensor, starting from the source's")
        time = ("its ACPE convolution, kept" if model_cfg.temporal_position == "acpe-conv"
                else "the fixed patch-index sinusoid")
        lines += [
            f"**Upcycled** from the base checkpoint `{init_from.name}` ({init_from.embedding}, weights SHA-256 "
            f"`{init_from.sha256}`): its patch embedding, encoder and reconstruction head were loaded strictly; "
            f"trained here: {what}. Temporal position: {time}. What the source saw in its own pretraining is in "
            "its own model card; the data below is what this run trained on.",
            "",
        ]
    lines += [
        "## What produced it",
        "",
        "| dataset | montage | subjects | recordings | train windows | held-out windows (subjects) | dropped (flagged) |",
        "|---|---|---|---|---|---|---|",
    ]
    for d in info["data"]:
        lines.append(
            f"| `{d['path']}` | {d['montage']} | {d['subjects']} | {d['recordings']} | {d['train_windows']} "
            f"({d['train_hours']:.2f} h) | {d['val_windows']} ({len(d['val_subjects'])}) | {d['dropped_flagged']} |"
        )
    pp = info["preprocess"]
    opt = info["optimizer"]
    lines += [
        "",
        f"- Preprocessing: resample to {pp['sfreq']:g} Hz, band-pass {pp['l_freq']:g}–{pp['h_freq']:g} Hz, "
        f"notch {pp['notch_freq'] or 'none'} Hz, µV/{pp['scale_uv']:g}, {pp['window_seconds']:g}-s windows; windows "
        "with NaN, flat or clipped channels"
        + (f", or over {pp['amplitude_limit_uv']:g} µV," if pp.get("amplitude_limit_uv") else ",")
        + " dropped.",
        *objective.card_lines(info),
        f"- Optimisation: {opt['name']} lr {opt['lr']:g}, weight decay {opt['weight_decay']:g}, {opt['schedule']} "
        f"to {opt['eta_min']:g}, gradient clipping {opt['grad_clip']:g}; {info['steps']} steps"
        + (f" (stopped early: the cosine schedule spans {info['schedule_steps']})" if "schedule_steps" in info else "")
        + " of "
        f"{info['batch_size_per_process']} windows × {info['world_size']} process(es); seed {info['seed']}.",
        f"- Wall time of the training loop: {info['wall_time_s'] / 60:.1f} min (reading the data excluded) on "
        f"{info['runtime']}"
        + (f", {info['data_workers_per_process']} data worker(s) per process." if "data_workers_per_process" in info
           else "."),
        f"- Final training loss (last step): {info['final_train_loss']:.4f}.",
        "",
        "## Validation: held-out subjects",
        "",
    ]
    lines += objective.card_validation(info["validation"])
    not_tuh = (
        "- This run trained on the data above only; unless the source checkpoint was itself pretrained on a "
        "large corpus (its card says), expect much weaker features than a TUH-scale model."
        if init_from is not None else
        "- It was **not** pretrained on the TUH EEG corpus, unlike the Device Passport paper and CBraMod: "
        "it saw the data above only, for a short CPU run. Expect much weaker features than a TUH-scale "
        "model; use it to try the pipeline, to compare embedding kinds under equal conditions, or as a start "
        "for your own pretraining.")
    lines += [
        "",
        "## What it is not",
        "",
        not_tuh,
        "- Simulated recordings come from passport-kit's physics-based simulator, not from people.",
        "- Not a medical device; not validated for any clinical use.",
        "",
        "## Reproduce",
        "",
        "```",
        info["command"],
        "```",
        "",
        f"passport-kit {info['package_version']}, finished {info['finished_utc']}.",
        "",
    ]
    return "\n".join(lines)
