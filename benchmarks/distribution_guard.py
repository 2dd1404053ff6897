"""The training-distribution guard's thresholds, measured (issues 34 and 35; docs/reliability.md).

For each scenario, a profile is built from the "training" recordings exactly as ``adapt``
stores it (:func:`~passport_kit.signals.distribution.distribution_profile`: the preprocessed
windows, the raw recordings' quality), and each "new" recording is scored as ``predict``
scores it (:func:`~passport_kit.signals.distribution.score_recording`). No model is trained:
the guard does not depend on one.

- ``eegmat`` (same device, must pass): leave one subject out over eegmat subjects 00-11
  (``benchmarks/montages/eegmat-temporal.yaml``, 10-s windows): a profile from 11 subjects,
  both recordings of the 12th scored.
- ``muse`` (same device, must pass): real Muse recordings, leave one subject folder out over
  ``--muse-subjects`` subject folders (one recording each scored).
- ``dreams-vs-eegmat`` (other device and state, should be flagged): C3 of the 12 eegmat
  subjects (``dreams-c3`` montage mapped to ``EEG C3``) against DREAMS excerpt 1 (C3-A1, 100 Hz).
- ``muse-vs-simulated`` (issue 34, should be flagged): simulated Muse sleep (``simulate
  --montage muse --subjects 3 --hours 0.5``) against real Muse recordings.
- ``simulated-ear`` (issue 35): ``simulate --montage eesm17-ear --subjects 3 --hours 0.5``
  against its held-out night (seed 7; must pass), the same night ×3, ×10, with half the channels
  replaced by noise, with one flat channel.

Run (2 cores, about a minute)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/distribution_guard.py --data ../shared/data --out /tmp/dg
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data"


def windows_of(path: Path, montage: Any, *, window_seconds: float, renames: dict[str, str] | None = None,
               units: str | None = None, transform: Any = None) -> Any:
    """Return the recording's :class:`RecordingWindows` as predict reads it (default contract, quality scored)."""
    from passport_kit.signals import PreprocessConfig, read_recording
    from passport_kit.signals.recording import fit_preprocessing, read_windows

    raw = read_recording(path, units=units)
    if transform is not None:
        raw = transform(raw)
    contract = PreprocessConfig(window_seconds=window_seconds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = fit_preprocessing(contract, rate=lambda: (float(raw.info["sfreq"]), str(path)))
        return read_windows(raw, montage, config, renames=renames, quality=True, name=str(path))


def profile_of(nights: list[Any], montage: Any, subjects: list[str] | None = None) -> dict[str, Any]:
    """Return the guard's profile of ``nights`` (as adapt builds it); ``subjects``: one per night (default: each its own)."""
    from passport_kit.signals.distribution import distribution_profile

    x = np.concatenate([n.x for n in nights])
    subjects = subjects or [str(i) for i in range(len(nights))]
    groups = np.concatenate([np.full(len(n.x), s) for n, s in zip(nights, subjects)])
    top = min(n.config.h_freq for n in nights)
    return distribution_profile(x, montage.ch_names, top_hz=top, qualities=[n.quality for n in nights],
                                groups=groups)


def verdict_row(scenario: str, name: str, profile: dict[str, Any], night: Any, expect: str) -> dict[str, Any]:
    """Return one table row: the recording's distance, amplitude ratio and whether it is outside."""
    from passport_kit.signals.distribution import score_recording

    v = score_recording(profile, night.x, night.quality, top_hz=night.config.h_freq)
    return {"scenario": scenario, "recording": name, "expect": expect,
            "distance": None if v is None else round(v.distance, 3),
            "amplitude_ratio": None if v is None or v.amplitude_ratio is None else round(v.amplitude_ratio, 3),
            "correlation": None if v is None or v.correlation_distance is None else round(v.correlation_distance, 3),
            "outside": None if v is None else v.outside,
            "far_channels": "" if v is None else " ".join(v.far_channels)}


def eegmat_rows(eegmat: Path) -> list[dict[str, Any]]:
    from passport_kit.montage import Montage

    montage = Montage.from_yaml(HERE / "montages" / "eegmat-temporal.yaml")
    files = sorted(eegmat.glob("Subject*_[12].edf"))
    nights = {f: windows_of(f, montage, window_seconds=10) for f in files}
    subjects = sorted({f.stem.split("_")[0] for f in files})
    rows = []
    for s in subjects:
        train = {f: n for f, n in nights.items() if not f.stem.startswith(s + "_")}
        profile = profile_of(list(train.values()), montage, [f.stem.split("_")[0] for f in train])
        rows += [verdict_row("eegmat held-out subject", f.name, profile, n, "pass")
                 for f, n in nights.items() if f.stem.startswith(s + "_")]
    return rows


def dreams_rows(eegmat: Path, dreams: Path, work: Path) -> list[dict[str, Any]]:
    import mne

    from passport_kit.montage import Montage

    montage = Montage.from_yaml(HERE / "montages" / "dreams-c3.yaml")
    train = [windows_of(f, montage, window_seconds=30, renames={"C3-A1": "EEG C3"})
             for f in sorted(eegmat.glob("Subject*_[12].edf"))]
    profile = profile_of(train, montage)
    text = (dreams / "excerpt1.txt").read_text().split()
    fif = work / "excerpt1_raw.fif"
    if not fif.exists():
        raw = mne.io.RawArray(np.asarray(text[1:], dtype=np.float64)[None] * 1e-6,
                              mne.create_info([text[0].strip("[]")], 100.0, "eeg"), verbose="error")
        raw.save(fif, verbose="error")
    night = windows_of(fif, montage, window_seconds=30)
    return [verdict_row("DREAMS vs eegmat (C3)", "excerpt1 (100 Hz)", profile, night, "flag")]


def muse_rows(muse: Path, work: Path, n_subjects: int) -> list[dict[str, Any]]:
    from passport_kit.montage import Montage

    montage = Montage.from_yaml(muse / "muse.yaml")
    with open(muse / "recordings.tsv", newline="") as f:
        table = list(csv.DictReader(f, delimiter="\t"))
    first: dict[str, Path] = {}
    for row in table:  # one (the first) recording of each subject folder, in the table's order
        first.setdefault(row["subject"], muse / row["file"])
    chosen = list(first.items())[:: max(1, len(first) // n_subjects)][:n_subjects]
    real = {s: windows_of(p, montage, window_seconds=30) for s, p in chosen}
    rows = []
    for s in real:
        profile = profile_of([n for t, n in real.items() if t != s], montage)
        rows.append(verdict_row("real Muse held-out subject", s, profile, real[s], "pass"))
    sim = simulated(work / "sim-muse", "muse", 3, 0)
    sim_test = simulated(work / "sim-muse-test", "muse", 2, 7)
    sim_profile = profile_of([windows_of(f, montage, window_seconds=30) for f in sorted(sim.glob("s*.edf"))], montage)
    rows += [verdict_row("simulated Muse held-out night", f.name, sim_profile,
                         windows_of(f, montage, window_seconds=30), "pass") for f in sorted(sim_test.glob("s*.edf"))]
    rows += [verdict_row("real Muse vs simulated Muse", s, sim_profile, n, "flag") for s, n in real.items()]
    return rows


def simulated(folder: Path, montage: str, subjects: int, seed: int) -> Path:
    """Return a simulated dataset folder, written by ``passport-kit simulate`` unless already there."""
    if not (folder / "dataset.yaml").exists():
        subprocess.run([str(Path(sys.executable).with_name("passport-kit")), "simulate", "--montage", montage, "--subjects",
                        str(subjects), "--hours", "0.5", "--seed", str(seed), "--out", str(folder), "-q"], check=True)
    return folder


def ear_rows(work: Path) -> list[dict[str, Any]]:
    from passport_kit.montage.registry import get_montage

    montage = get_montage("eesm17-ear")
    train = simulated(work / "sim-ear", "eesm17-ear", 3, 0)
    test = simulated(work / "sim-ear-test", "eesm17-ear", 1, 7) / "s01.edf"
    profile = profile_of([windows_of(f, montage, window_seconds=30) for f in sorted(train.glob("s*.edf"))], montage)

    def scaled(k: float):
        def apply(raw):
            raw.load_data()
            return raw.apply_function(lambda d: d * k)
        return apply

    def half_noise(raw):
        raw.load_data()
        rng = np.random.default_rng(0)
        data = raw.get_data()
        data[: len(data) // 2] = 30e-6 * rng.standard_normal(data[: len(data) // 2].shape)
        raw._data[:] = data
        return raw

    def one_flat(raw):
        raw.load_data()
        raw._data[0] = 0.0
        return raw

    cases = [("held-out night", None, "pass"), ("x3 amplitude", scaled(3.0), "flag"),
             ("x10 amplitude", scaled(10.0), "flag"), ("half the channels noise", half_noise, "flag"),
             ("one flat channel of 12", one_flat, "pass")]
    return [verdict_row("simulated ear-EEG (eesm17-ear)", name, profile,
                        windows_of(test, montage, window_seconds=30, transform=t), expect) for name, t, expect in cases]


def markdown(rows: list[dict[str, Any]]) -> str:
    keys = ["scenario", "recording", "expect", "distance", "correlation", "amplitude_ratio", "outside", "far_channels"]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join("" if r[k] is None else str(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=Path("/tmp/distribution_guard"))
    parser.add_argument("--muse-subjects", type=int, default=12)
    parser.add_argument("--only", default="eegmat,dreams,muse,ear")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PASSPORT_KIT_HOME", str(args.out / "home"))
    only = set(args.only.split(","))
    rows: list[dict[str, Any]] = []
    if "eegmat" in only and (args.data / "eegmat").is_dir():
        rows += eegmat_rows(args.data / "eegmat")
    if "dreams" in only and (args.data / "dreams-spindles").is_dir():
        rows += dreams_rows(args.data / "eegmat", args.data / "dreams-spindles", args.out)
    if "muse" in only and (args.data / "muse").is_dir():
        rows += muse_rows(args.data / "muse", args.out, args.muse_subjects)
    if "ear" in only:
        rows += ear_rows(args.out)
    table = markdown(rows)
    print(table)
    (args.out / "distribution_guard.md").write_text(table + "\n")
    passes = [r for r in rows if r["expect"] == "pass" and r["outside"] is not None]
    flags = [r for r in rows if r["expect"] == "flag" and r["outside"] is not None]
    print(f"\nfalse alarms (same device, held out): {sum(r['outside'] for r in passes)} of {len(passes)}; "
          f"flagged (other device / fault): {sum(r['outside'] for r in flags)} of {len(flags)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
