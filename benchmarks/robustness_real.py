"""Robustness to poor-contact channels on real EEG (issue 8): eegmat with injected faults, LOSO AUROC.

The simulated benchmark (``benchmarks/robustness.py``) asks its question on simulated sleep;
this one asks it on real recordings. It reuses the eegmat setup of ``transfer_real.py`` (rest
vs serial subtraction, 10-s windows, montage ``benchmarks/montages/eegmat-temporal.yaml`` =
T3 T4 T5 T6 + bipolar A2-A1, low-pass 30 Hz, the shipped ``passport-small-acpe`` and
``passport-small-mlp`` checkpoints, adapter policy) and adds poor contacts:

1. **Faulted copy.** Every eegmat EDF (``SubjectNN_1`` rest, ``_2`` arithmetic) is read with
   the library's reader and written again as EDF (µV, the same channel names) under
   ``<out>/data``, with :func:`passport_kit.signals.simulator.artifacts.corrupt_channel` (the
   simulator's poor-contact model: ``noise``, ``drift``, ``flat``) applied to the channels
   named by ``--faults`` (``SUBJECT:CHANNEL:KIND``, montage channel names; both recordings of a
   subject get the fault; seeded per recording and channel). Default: four "bad" subjects, none
   of them a mixed-prefilter subject (08, 10, 11). The originals are only read.
2. **Detection.** :func:`passport_kit.signals.quality.recording_quality` scores every 10-s
   window of every montage channel (raw file, as ``--mask-bad-channels`` does); reported: the
   share of injected channel-windows scoring below ``--mask-threshold`` (detection rate) and
   the share of the other channel-windows that do (false positives), on the faulted copy and on
   the original recordings.
3. **LOSO** with :func:`passport_kit.onboard.evaluate.evaluate` per variant: on the faulted
   copy ``acpe`` and ``mlp`` (the paper's recipe) and ``acpe+masked``, ``mlp+masked``
   (``channel_dropout`` = ``--drop-prob``, ``mask_bad_channels`` = ``--mask-threshold``: low
   quality channel-windows replaced by the mask token in training and at test time); on the
   original recordings ``clean:mlp``, ``clean:mlp+masked``, ``clean:acpe`` (does masked
   training cost anything on clean data?). ``mlp+distrust`` and ``clean:mlp+distrust``:
   ``distrust_bad_channels`` = ``--mask-threshold`` (low-quality channel-windows keep their
   signal; their expert mixture reads the nearest good channel's activity). ``+uncorr``:
   ``mask_uncorrelated_channels`` = ``--uncorrelated`` (channel-windows whose 1–40 Hz neighbour
   correlation is below it are masked, in training and at test time). Controls:
   ``mlp+dropout`` and ``clean:mlp+dropout`` (channel dropout alone, no quality mask), since the
   quality mask can carry label information of its own (``mask_cue``, below).
4. **Mask cue.** Per subject and channel, the AUROC of "this channel is masked in the window"
   as a detector of arithmetic windows (from the detection counts: (1 + TPR - FPR) / 2). Far
   from 0.5, the mask itself tells the classes apart, and a masked model can score by it.

Metric: AUROC per held-out subject (mean over fine-tuning seeds), then its mean over the bad
subjects, over the faulted copy's clean subjects, and over all subjects; the same without the
mixed-prefilter subjects. SDs in ``summary`` are between seeds (each seed's mean over the
group first).

Usage::

    .venv/bin/python benchmarks/robustness_real.py --quick --threads 1 --out bench-out/robustness-real
    # without the bipolar A2-A1 (its quality score flags about half of its clean windows):
    .venv/bin/python benchmarks/robustness_real.py --quick --threads 1 --channels T3,T4,T5,T6 \
        --out bench-out/robustness-real-t3t6

Output (``--out``): ``data/`` (faulted EDFs, ``dataset.yaml``, ``faults.json``),
``detection.csv/json`` (per recording and channel), ``detection_summary.csv/json`` and
``detection_by_channel.csv/json``, ``mask_cue.csv/json``,
``rows.csv/json`` (evaluate's rows, tagged), ``per_subject.csv/json``, ``summary.csv/json`` and
``summary.md`` (every table), ``robustness_real_diff.png`` (per-subject AUROC difference to
ACPE on the faulted copy, bad subjects boxed), ``robustness_real_clean_diff.png`` (the same on
the originals), ``run.json``. A rerun with the same ``--out`` reuses the faulted copy and every
finished evaluation. Without ``../shared/data/eegmat`` the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Threaded OpenBLAS workers spin-wait on the shared machine (see robustness.py); torch keeps --threads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import transfer_common as tc
from transfer_real import (
    DEFAULT_DATA,
    LOW_PASS_HZ,
    MIXED_PREFILTER,
    MONTAGE,
    ROOT,
    write_dataset_yaml,
)

from passport_kit.atomic_io import atomic_write_text, write_json

CHECKPOINTS = {"acpe": "passport-small-acpe", "mlp": "passport-small-mlp"}
#: Default poor contacts: four subjects, none with mixed prefilters; channel names of the montage.
DEFAULT_FAULTS = "Subject01:T3:noise,Subject04:T6:noise,Subject07:T4:noise,Subject07:T5:drift,Subject09:T5:noise"
#: Variants: name → (data: 'faulted' | 'clean', checkpoint key, channel dropout in training,
#: low-quality channels masked in training and at test time, the same distrusted).
VARIANTS: dict[str, tuple[str, str, bool, bool, bool, bool]] = {
    "acpe": ("faulted", "acpe", False, False, False, False),
    "mlp": ("faulted", "mlp", False, False, False, False),
    "acpe+masked": ("faulted", "acpe", True, True, False, False),
    "mlp+masked": ("faulted", "mlp", True, True, False, False),
    "clean:mlp": ("clean", "mlp", False, False, False, False),
    "clean:mlp+masked": ("clean", "mlp", True, True, False, False),
    "clean:acpe": ("clean", "acpe", False, False, False, False),
    "mlp+dropout": ("faulted", "mlp", True, False, False, False),
    "clean:mlp+dropout": ("clean", "mlp", True, False, False, False),
    "mlp+distrust": ("faulted", "mlp", False, False, True, False),
    "clean:mlp+distrust": ("clean", "mlp", False, False, True, False),
    "acpe+uncorr": ("faulted", "acpe", False, False, False, True),
    "mlp+distrust+uncorr": ("faulted", "mlp", False, False, True, True),
    "clean:mlp+distrust+uncorr": ("clean", "mlp", False, False, True, True),
}
SCALES = {
    "quick": {"ft_steps": 30, "ft_batch": 16, "seeds": 3},
    "default": {"ft_steps": 150, "ft_batch": 32, "seeds": 5},
}
QUALITY_WINDOW_S = 10.0  # transfer_real's windows: the quality grid lines up with them
MAINS_HZ = 50.0


# ----------------------------------------------------------------------------- faults


@dataclass(frozen=True)
class Fault:
    """One injected poor contact: a montage channel of a subject, and its kind."""

    subject: str
    channel: str
    kind: str


def parse_faults(spec: str, channels: list[str]) -> tuple[Fault, ...]:
    """Return the faults of ``SUBJECT:CHANNEL:KIND,...``; ValueError naming the bad item.

    ``channels`` are the montage's channel names (a fault elsewhere would be invisible to the
    models); kinds are the simulator's (``noise``, ``drift``, ``flat``).
    """
    from passport_kit.signals.simulator.artifacts import BAD_KINDS

    faults = []
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        parts = item.split(":")
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"--faults item {item!r}: write SUBJECT:CHANNEL:KIND, e.g. Subject01:T3:noise")
        subject, channel, kind = parts
        if channel not in channels:
            raise ValueError(f"--faults item {item!r}: channel {channel!r} is not in the montage ({', '.join(channels)})")
        if kind not in BAD_KINDS:
            raise ValueError(f"--faults item {item!r}: kind {kind!r} is not one of {', '.join(BAD_KINDS)}")
        faults.append(Fault(subject, channel, kind))
    if len({(f.subject, f.channel) for f in faults}) != len(faults):
        raise ValueError(f"--faults {spec!r} names a subject's channel twice; give one kind per channel")
    return tuple(faults)


def fault_rng(seed: int, recording: str, channel: str) -> np.random.Generator:
    """Return the generator of one recording's channel: the same fault on every rerun, different per file."""
    return np.random.default_rng([seed, zlib.crc32(f"{recording}:{channel}".encode())])


def inject_faults(source: Path, folder: Path, faults: tuple[Fault, ...], montage: Any, *, seed: int) -> Path:
    """Return ``folder``, holding every ``SubjectNN_[12].edf`` of ``source`` with ``faults`` injected.

    Each file is read with the library's reader, the faulted montage channels are located with
    the library's channel mapping (so the fault lands where the montage reads), corrupted in µV
    with :func:`corrupt_channel`, and written as EDF with all channels under their original
    names. ``dataset.yaml`` (written last, with ``faults.json``) marks a complete folder; a
    complete folder made with the same faults and seed is reused as is.
    """
    from passport_kit.signals import read_recording
    from passport_kit.signals.channels import channel_sources
    from passport_kit.signals.simulator.artifacts import corrupt_channel
    from passport_kit.signals.simulator.writer import write_edf

    folder = Path(folder)
    recipe = {"source": str(Path(source).resolve()), "seed": seed, "faults": [f.__dict__ for f in faults]}
    done = folder / "faults.json"
    if (folder / "dataset.yaml").is_file() and done.is_file():
        if json.loads(done.read_text(encoding="utf-8")) == recipe:
            return folder
        raise SystemExit(f"{folder} holds eegmat with other faults ({done}); use another --out")
    files = sorted(Path(source).glob("Subject*_[12].edf"))
    if not files:
        raise SystemExit(f"no eegmat recordings (SubjectNN_1.edf / _2.edf) in {source}; pass --data")
    folder.mkdir(parents=True, exist_ok=True)
    by_subject: dict[str, list[Fault]] = {}
    for f in faults:
        by_subject.setdefault(f.subject, []).append(f)
    unknown = sorted(set(by_subject) - {p.stem.split("_")[0] for p in files})
    if unknown:
        raise SystemExit(f"--faults names subjects {unknown} that {source} does not have")
    for path in files:
        raw = read_recording(path)
        data_uv = raw.get_data() * 1e6  # volts → µV, the unit of corrupt_channel and write_edf
        sfreq = float(raw.info["sfreq"])
        mine = by_subject.get(path.stem.split("_")[0], [])
        if mine:
            sources = dict(zip(montage.ch_names, channel_sources(raw.ch_names, montage, source=str(path))))
            for fault in mine:
                active, reference = sources[fault.channel]
                if reference is not None:  # a derived bipolar channel has no single electrode to fault
                    raise SystemExit(f"{path.name}: {fault.channel} is derived from two channels; fault one of them")
                row = raw.ch_names.index(active)
                data_uv[row] = corrupt_channel(data_uv[row], fault.kind, sfreq, fault_rng(seed, path.stem, fault.channel))
        write_edf(folder / path.name, data_uv, list(raw.ch_names), sfreq, subject=path.stem.split("_")[0],
                  kinds=list(raw.get_channel_types()))
    write_json(done, recipe)
    return write_dataset_yaml(folder, folder)


# ----------------------------------------------------------------------------- detection


def detection_rows(data: Path, montage: Any, faults: tuple[Fault, ...], *, threshold: float,
                   label: str) -> list[dict[str, Any]]:
    """Return one row per recording and montage channel: windows, windows scoring below ``threshold``, injected or not.

    Scores are :func:`recording_quality`'s per-window scores of the raw file on the 10-s grid
    of the benchmark's windows: what ``mask_bad_channels`` masks.
    """
    from passport_kit.signals.quality import recording_quality

    injected = {(f.subject, f.channel): f.kind for f in faults}
    rows = []
    for path in sorted(Path(data).glob("Subject*_[12].edf")):
        subject = path.stem.split("_")[0]
        q = recording_quality(path, montage, window_seconds=QUALITY_WINDOW_S, notch_freq=MAINS_HZ)
        for c, channel in enumerate(montage.ch_names):
            scores = q.window_score[:, c]
            rows.append({"data": label, "recording": path.stem, "subject": subject, "channel": channel,
                         "fault": injected.get((subject, channel), "") if label == "faulted" else "",
                         "windows": int(scores.size), "below_threshold": int((scores < threshold).sum()),
                         "median_score": float(np.median(scores)), "reasons": ";".join(q.reasons[c])})
    return rows


def detection_summary(rows: list[dict[str, Any]], *, by_channel: bool = False) -> list[dict[str, Any]]:
    """Return per data set and group (injected / not injected) the channel-windows below threshold and their share.

    ``by_channel`` splits each group by montage channel (where do the false positives come from?).
    """
    out = []
    channels = list(dict.fromkeys(r["channel"] for r in rows)) if by_channel else [None]
    for label in dict.fromkeys(r["data"] for r in rows):
        for group, pick in (("injected", True), ("not injected", False)):
            for channel in channels:
                mine = [r for r in rows if r["data"] == label and bool(r["fault"]) == pick
                        and (channel is None or r["channel"] == channel)]
                if not mine:
                    continue
                windows = sum(r["windows"] for r in mine)
                below = sum(r["below_threshold"] for r in mine)
                out.append({"data": label, "channels": group, **({"channel": channel} if by_channel else {}),
                            "channel_windows": windows, "below_threshold": below,
                            "share_below": below / windows if windows else None})
    return out


def mask_cue(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return per data set, subject and channel the AUROC of the channel's mask as a detector of arithmetic windows.

    From :func:`detection_rows` counts: TPR = share of the arithmetic recording's windows below
    threshold, FPR = the same share in the rest recording, AUROC of a binary score
    = (1 + TPR - FPR) / 2. 0.5: the mask says nothing about the class.
    """
    counts = {(r["data"], r["subject"], r["channel"], r["recording"].rsplit("_", 1)[1]): r for r in rows}
    out = []
    for (data, subject, channel, part), arithmetic in counts.items():
        rest = counts.get((data, subject, channel, "1"))
        if part != "2" or rest is None or not arithmetic["windows"] or not rest["windows"]:
            continue
        tpr = arithmetic["below_threshold"] / arithmetic["windows"]
        fpr = rest["below_threshold"] / rest["windows"]
        out.append({"data": data, "subject": subject, "channel": channel, "masked_arithmetic": tpr,
                    "masked_rest": fpr, "mask_auroc": (1.0 + tpr - fpr) / 2.0})
    return out


# ----------------------------------------------------------------------------- scores


def group_summary(rows: list[dict[str, Any]], variants: list[str], bad: set[str]) -> list[dict[str, Any]]:
    """Return per variant the mean AUROC (± SD over seeds) over bad, clean and all subjects, with and without mixed prefilters.

    On the original recordings "bad" names the same subjects without their faults.
    """
    groups = {
        "bad": lambda s: s in bad,
        "clean": lambda s: s not in bad,
        "all": lambda s: True,
        "clean_same_filter": lambda s: s not in bad and s not in MIXED_PREFILTER,
        "all_same_filter": lambda s: s not in MIXED_PREFILTER,
    }
    out = []
    for variant in variants:
        entry: dict[str, Any] = {"variant": variant, "data": VARIANTS[variant][0]}
        for name, keep in groups.items():
            mine = [r for r in rows if r["kind"] == variant and keep(r["test_subject"])]
            stats = tc.summarise(mine, by=["kind"], unit=["seed"], metric="auroc")
            entry[f"auroc_{name}"] = stats[0]["auroc"] if stats else None
            entry[f"sd_{name}"] = stats[0]["sd"] if stats else None
        entry["seeds"] = len({r["seed"] for r in rows if r["kind"] == variant})
        out.append(entry)
    return out


def _drop_stale(target: Path, options: dict[str, Any]) -> None:
    """Remove a finished evaluation's summary when its montage, data or masking differ (evaluate_grid then reruns it)."""
    summary = target / "summary.json"
    if not summary.is_file():
        return
    config = json.loads(summary.read_text(encoding="utf-8"))["config"]
    plain = json.loads(json.dumps({k: options[k] for k in ("montage", "data", "channel_dropout", "mask_bad_channels",
                                                   "distrust_bad_channels", "mask_uncorrelated_channels",
                                                   "h_freq")},
                                  default=str))
    if any(config.get(k) != v for k, v in plain.items()):
        summary.unlink()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Return the command line (budgets depend on ``--quick``)."""
    parser = tc.common_parser(__doc__.splitlines()[0], default_out="bench-out/robustness-real")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the eegmat folder (only read)")
    parser.add_argument("--faults", default=DEFAULT_FAULTS, help="poor contacts SUBJECT:CHANNEL:KIND,... "
                        "(KIND: noise, drift, flat; CHANNEL: a montage channel)")
    parser.add_argument("--fault-seed", type=int, default=0, help="seed of the injected faults")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated subset of {list(VARIANTS)}")
    parser.add_argument("--drop-prob", type=float, default=0.5, help="channel_dropout of the +masked and +dropout variants")
    parser.add_argument("--mask-threshold", type=float, default=0.5,
                        help="quality score under which a channel-window is masked (+masked) and counts as detected")
    parser.add_argument("--channels", default=None,
                        help="comma-separated subset of the montage's channels (default: all of T3 T4 T5 T6 A2-A1)")
    parser.add_argument("--ft-steps", type=int, default=None, help="fine-tuning step budget (overrides the scale)")
    parser.add_argument("--balance", default="weights", choices=("none", "weights", "sampler"))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--uncorrelated", type=float, default=0.2,
                        help="neighbour correlation under which the +uncorr variants mask a channel")
    args = parser.parse_args(argv)
    args.variant_list = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = sorted(set(args.variant_list) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variants {unknown}; choose from {list(VARIANTS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print and write the tables."""
    args = parse_args(argv)
    if not any(Path(args.data).glob("Subject*_[12].edf")):
        print(f"eegmat not found at {args.data} (../shared/data/eegmat); nothing to do")
        return 0

    from passport_kit.checkpoint import load_base_checkpoint
    from passport_kit.errors import PassportError
    from passport_kit.montage import resolve_montage

    out = Path(args.out)
    montage, montage_file = resolve_montage(MONTAGE), MONTAGE
    try:
        if args.channels:
            # A smaller layout, e.g. without the bipolar A2-A1 whose quality score is often low on clean data.
            montage = montage.subset([c.strip() for c in args.channels.split(",")], name="eegmat-temporal-subset")
            out.mkdir(parents=True, exist_ok=True)
            montage_file = montage.to_yaml(out / "montage.yaml")
        faults = parse_faults(args.faults, montage.ch_names)
    except (ValueError, PassportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    bad = {f.subject for f in faults}
    scale = dict(SCALES["quick" if args.quick else "default"])
    n_ft = args.seeds[1] if args.seeds else scale["seeds"]
    ft_steps = args.ft_steps or scale["ft_steps"]
    infos = {key: load_base_checkpoint(name)[1] for key, name in CHECKPOINTS.items()}
    record = tc.RunRecord(out, args.threads, {
        "scale": "quick" if args.quick else "default", "finetune_seeds": n_ft, "ft_steps": ft_steps,
        "ft_batch": scale["ft_batch"], "balance": args.balance, "faults": args.faults, "fault_seed": args.fault_seed,
        "drop_prob": args.drop_prob, "mask_threshold": args.mask_threshold, "variants": args.variant_list,
        "window_seconds": QUALITY_WINDOW_S, "low_pass_hz": LOW_PASS_HZ, "montage": str(MONTAGE.relative_to(ROOT)),
        "channels": montage.ch_names, "checkpoints": {CHECKPOINTS[k]: {"kind": i.model.embedding, "sha256": i.weights_sha256}
                        for k, i in infos.items()},
    })

    faulted = inject_faults(args.data, out / "data", faults, montage, seed=args.fault_seed)
    clean = write_dataset_yaml(args.data, out / "clean")
    record.stage("faulted copy")

    detection = (detection_rows(faulted, montage, faults, threshold=args.mask_threshold, label="faulted")
                 + detection_rows(args.data, montage, (), threshold=args.mask_threshold, label="clean"))
    detected = detection_summary(detection)
    tc.write_outputs(out, "detection", detection)
    detected_by_channel = detection_summary(detection, by_channel=True)
    tc.write_outputs(out, "detection_summary", detected)
    tc.write_outputs(out, "detection_by_channel", detected_by_channel)
    cue = mask_cue(detection)
    tc.write_outputs(out, "mask_cue", cue)
    print(tc.markdown_table(detected))
    record.stage("quality scores")

    options = {"protocol": "loso", "seeds": n_ft, "max_steps": ft_steps, "batch_size": scale["ft_batch"],
               "train": "adapter", "balance": args.balance, "metric": "auroc", "notch_freq": MAINS_HZ,
               "h_freq": LOW_PASS_HZ, "device": args.device, "threads": args.threads}
    rows: list[dict[str, Any]] = []
    for variant in args.variant_list:
        which, key, dropout, masked, distrusted, uncorrelated = VARIANTS[variant]
        name = f"{which}_{variant.split(':')[-1]}"
        run_options = options | {"montage": str(montage_file), "data": faulted if which == "faulted" else clean,
                                 "channel_dropout": args.drop_prob if dropout else 0.0,
                                 "mask_bad_channels": args.mask_threshold if masked else None,
                                 "distrust_bad_channels": args.mask_threshold if distrusted else None,
                                 "mask_uncorrelated_channels": args.uncorrelated if uncorrelated else None}
        _drop_stale(out / "finetune" / name, run_options)
        run = tc.PretrainRun(which, variant, 0)
        rows += tc.evaluate_grid({name: CHECKPOINTS[key]}, {name: run}, out, **run_options)
        tc.write_outputs(out, "rows", rows)
        record.stage(f"LOSO {variant}")

    variants = list(dict.fromkeys(r["kind"] for r in rows))
    table = tc.per_subject_table(rows, methods=variants, metric="auroc")
    for row in table:
        row["bad"] = "yes" if row["subject"] in bad else ""
    tc.write_outputs(out, "per_subject", table)
    summary = group_summary(rows, variants, bad)
    tc.write_outputs(out, "summary", summary)
    tag = f"{'quick' if args.quick else 'default'} scale, {n_ft} seed(s), {ft_steps} steps"
    for which, figure in (("faulted", "robustness_real_diff.png"), ("clean", "robustness_real_clean_diff.png")):
        mine = [r for r in rows if r["layout"] == which]
        reference = "acpe" if which == "faulted" else "clean:acpe"
        others = [v for v in variants if VARIANTS[v][0] == which and v != reference]
        if not others or reference not in variants:
            continue
        diffs = tc.differences_to(mine, reference=reference, methods=others, metric="auroc")
        tc.write_outputs(out, f"difference_to_acpe_{which}", diffs)
        tc.plot_difference_bars(diffs, out / figure, metric="auroc", reference=reference, methods=others,
                                outline=sorted(bad) if which == "faulted" else (),
                                outline_label="injected poor contacts",
                                title=f"eegmat {'with injected faults' if which == 'faulted' else 'originals'}, {tag}")
    text = "\n\n".join(["## Detection (quality score < threshold)", tc.markdown_table(detected),
                        "## Detection per channel", tc.markdown_table(detected_by_channel),
                        "## Mask cue: AUROC of a channel's quality mask as an arithmetic detector",
                        tc.markdown_table([c for c in cue if c["mask_auroc"] != 0.5]),
                        "## AUROC by subject group (SD over seeds)", tc.markdown_table(summary),
                        "## AUROC per held-out subject (SD over seeds)", tc.markdown_table(table)])
    atomic_write_text(out / "summary.md", text + "\n")
    record.stage("tables + figures")
    record.finish({"bad_subjects": sorted(bad), "subjects": sorted({r["test_subject"] for r in rows})})
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
