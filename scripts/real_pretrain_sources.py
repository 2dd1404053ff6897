"""Write the dataset descriptions of the real-data pretraining recipe into a work folder.

    .venv/bin/python scripts/real_pretrain_sources.py WORK [--data ../shared/data]

The recordings stay where they are (``../shared/data``, never copied); this writes, under
``WORK/sources/``, one ``dataset.yaml`` per real source that names them by absolute path
(``allow_outside_paths: true``: they lie outside its folder on purpose):

- ``muse/``: the Muse 2016 headband corpus, one entry per EDF+ segment of ``recordings.tsv``
  with its ``subject`` column (``<experiment>-<subject>``), on the built-in ``muse`` montage
  (the same standard_1005 positions as ``muse/muse.yaml``).
- ``eegmat/``: PhysioNet eegmat 00-11, subject ``SubjectNN`` (rest and arithmetic recordings of
  a person share it), ``h_freq: 45``: two prefilters (LP 45 and LP 250 Hz) occur in these EDF
  headers, so everything above 45 Hz is cut to keep the filter out of what the model learns.
- ``dreams/``: DREAMS excerpts 1 (100 Hz) and 3 (50 Hz) as text files, channel C3-A1, on
  a one-channel montage ``dreams-c3`` (C3 from ``tuh-19``), written beside it. Its band top is
  lowered below excerpt 3's 25 Hz Nyquist frequency by the data layer.
- ``dreams-psg/``: the EEG of ``excerpt3.edf`` (Fp1-A1, C3-A1, O1-A1, 50 Hz; ``units: uV``: its
  header says 'UV', which MNE reads as volts) on a three-channel montage ``dreams-psg``: the
  same night as excerpt 3 above, as multi-channel sleep EEG (excerpt 1 has C3-A1 only and stays
  held out in ``dreams/``).
- with ``--sleep-views``, also ``dreams-o1/`` and ``dreams-fp1/``: O1-A1 and Fp1-A1 of
  ``excerpt3.edf`` each alone, on one-channel montages ``dreams-o1`` and ``dreams-fp1``. One-channel
  sleep EEG is what the held-out DREAMS check (excerpt 1, C3-A1 alone) asks the model to fill in
  from the channel's own past and future; without these views only one pool in about 24 of the
  batches is a one-channel sleep batch (docs/pretraining.md).

It prints, one per line, the ``--data DIR:MONTAGE`` and ``--val-subjects`` arguments of
``passport-kit pretrain`` (``scripts/pretrain_real.sh`` reads them). Held-out subjects
(whole people, never trained on): eegmat 10 and 11; Muse: ten ``visual/cueing`` participants
(ids 105 ... 1410 appear in that experiment only, so they are different people from the
recurring low ids ``subject1``-``subject10`` of the other experiments); DREAMS: excerpt 1.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import yaml

#: Subjects never trained on, per source (whole people; see the module docstring).
MUSE_VAL = [f"cueing-subject{n}" for n in (105, 110, 1105, 1110, 1205, 1308, 1405, 1410, 205, 305)]
EEGMAT_VAL = ["Subject10", "Subject11"]
DREAMS_VAL = ["dreams-excerpt1"]

#: Positions in the head frame (mm), as in the built-in tuh-19 montage.
_C3_MM = [-67.1, 23.4, 104.5]
_PSG_MM = {"Fp1": [-30.9, 114.6, 27.9], "C3": _C3_MM, "O1": [-31.6, -80.6, 54.8]}


def muse_spec(root: Path) -> dict:
    """Return the Muse corpus as a dataset.yaml mapping (unlabeled, subjects from recordings.tsv)."""
    with open(root / "recordings.tsv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    recordings = [{"subject": r["subject"], "file": str((root / r["file"]).resolve())} for r in rows]
    return {"task": "classification", "allow_outside_paths": True, "recordings": recordings}


def eegmat_spec(root: Path) -> dict:
    """Return eegmat 00-11 as a dataset.yaml mapping: one subject per person, low-passed at 45 Hz."""
    files = sorted(root.glob("Subject[0-9][0-9]_[12].edf"))
    recordings = [{"subject": f.name.split("_")[0], "file": str(f.resolve())} for f in files]
    return {"task": "classification", "h_freq": 45, "allow_outside_paths": True, "recordings": recordings}


def dreams_spec(root: Path) -> dict:
    """Return DREAMS excerpts 1 and 3 on their common channel C3-A1 as a dataset.yaml mapping."""
    recordings = [
        {"subject": "dreams-excerpt1", "file": str((root / "excerpt1.txt").resolve()), "sfreq": 100,
         "channels": {"C3": "C3-A1"}},
        # The text file, not excerpt3.edf: this data layer reads that EDF's C3-A1 about 1e6 times too large.
        {"subject": "dreams-excerpt3", "file": str((root / "excerpt3.txt").resolve()), "sfreq": 50,
         "channels": {"C3": "C3-A1"}},
    ]
    return {"task": "classification", "allow_outside_paths": True, "recordings": recordings}


def dreams_psg_spec(root: Path) -> dict:
    """Return the EEG channels of DREAMS ``excerpt3.edf`` (Fp1, C3, O1 against A1) as a dataset.yaml mapping."""
    recordings = [{"subject": "dreams-excerpt3", "file": str((root / "excerpt3.edf").resolve()), "units": "uV",
                   "channels": {name: f"{name.upper()}-A1" for name in _PSG_MM}}]
    return {"task": "classification", "allow_outside_paths": True, "recordings": recordings}


def dreams_psg_montage() -> dict:
    """Return the three-channel montage of ``excerpt3.edf`` (Fp1, C3, O1, referenced to A1)."""
    return {"name": "dreams-psg", "description": "DREAMS excerpt 3 EDF: Fp1-A1, C3-A1, O1-A1 (positions from tuh-19)",
            "coordinate_frame": "head", "units": "mm", "reference": "A1",
            "channels": [{"name": name, "position": pos, "aliases": [f"{name.upper()}-A1"]}
                         for name, pos in _PSG_MM.items()]}


def dreams_view_spec(root: Path, channel: str) -> dict:
    """Return one EEG channel of DREAMS ``excerpt3.edf`` alone (``channel`` against A1) as a dataset.yaml mapping."""
    recordings = [{"subject": "dreams-excerpt3", "file": str((root / "excerpt3.edf").resolve()), "units": "uV",
                   "channels": {channel: f"{channel.upper()}-A1"}}]
    return {"task": "classification", "allow_outside_paths": True, "recordings": recordings}


def dreams_view_montage(channel: str) -> dict:
    """Return the one-channel montage ``dreams-<channel>`` (referenced to A1, position from tuh-19)."""
    return {"name": f"dreams-{channel.lower()}", "coordinate_frame": "head", "units": "mm", "reference": "A1",
            "description": f"DREAMS excerpt 3 EDF: {channel.upper()}-A1 alone (position from tuh-19)",
            "channels": [{"name": channel, "position": _PSG_MM[channel], "aliases": [f"{channel.upper()}-A1"]}]}


def dreams_montage() -> dict:
    """Return the one-channel montage of the DREAMS excerpts (C3, referenced to A1)."""
    return {"name": "dreams-c3", "description": "DREAMS sleep excerpts: C3-A1 only (position from tuh-19)",
            "coordinate_frame": "head", "units": "mm", "reference": "A1",
            "channels": [{"name": "C3", "position": _C3_MM, "aliases": ["C3-A1"]}]}


def write_sources(work: Path, data: Path, sleep_views: bool = False) -> list[str]:
    """Write the dataset.yaml files under ``work/sources``; return the pretrain arguments, one per line.

    ``sleep_views``: also the one-channel views of ``excerpt3.edf`` (O1, Fp1; see the module docstring).
    """
    out = work / "sources"
    args: list[str] = []
    val: list[str] = []
    views = [(f"dreams-{ch.lower()}", lambda root, ch=ch: dreams_view_spec(root, ch),
              lambda ch=ch: dreams_view_montage(ch), []) for ch in (("O1", "Fp1") if sleep_views else ())]
    for name, maker, montage, held in (
        ("muse", muse_spec, "muse", MUSE_VAL),
        ("eegmat", eegmat_spec, "tuh-19", EEGMAT_VAL),
        ("dreams", dreams_spec, dreams_montage, DREAMS_VAL),
        ("dreams-psg", dreams_psg_spec, dreams_psg_montage, []),
        *views,
    ):
        src = data / ("dreams-spindles" if name.startswith("dreams") else name)
        if not src.is_dir():
            continue  # a source that is absent is left out (the script says which it found)
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "dataset.yaml").write_text(yaml.safe_dump(maker(src), sort_keys=False), encoding="utf-8")
        if callable(montage):  # a montage file: --data DIR:MONTAGE takes names only, so --montage PATH
            spec = montage()
            montage_path = out / f"{spec['name']}.yaml"
            montage_path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
            args += [f"--data={folder}", f"--montage={montage_path}"]
        else:
            args.append(f"--data={folder}:{montage}")
        val += held
    if val:
        args.append(f"--val-subjects={','.join(val)}")
    return args


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path, help="work folder (outside git); dataset.yaml files go to WORK/sources")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="the shared data folder")
    parser.add_argument("--sleep-views", action="store_true",
                        help="also O1-A1 and Fp1-A1 of excerpt3.edf, each as a one-channel dataset")
    ns = parser.parse_args()
    for line in write_sources(ns.work.resolve(), ns.data, sleep_views=ns.sleep_views):
        print(line)


if __name__ == "__main__":
    main()
