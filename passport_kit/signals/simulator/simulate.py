"""``simulate_dataset``: a folder of simulated sleep EEG for any montage (DESIGN.md §7).

Example::

    >>> from passport_kit.signals.simulator import simulate_dataset
    >>> folder = simulate_dataset("eesm17-ear", "sim/", n_subjects=2, hours=1.0, seed=0)  # doctest: +SKIP
    >>> sorted(p.name for p in folder.iterdir())  # doctest: +SKIP
    ['dataset.yaml', 's01.edf', 's01_hypnogram.csv', 's02.edf', 's02_hypnogram.csv', 'simulation.json']

Poor contacts are given as ``SUBJECT:CHANNEL:KIND`` items, comma-separated in one string or
as a list: ``"s03:ELA:noise,s05:ERB:flat"``. ``SUBJECT`` may be ``*`` (every subject) or left
out (``"ELA:drift"``); ``KIND`` is ``noise``, ``drift`` or ``flat``.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from passport_kit.errors import ConfigError, DataError, MontageError, validation_problem
from passport_kit.output_lock import output_lock
from passport_kit.signals.simulator.artifacts import BAD_KINDS
from passport_kit.signals.simulator.head_model import DEFAULT_HEAD
from passport_kit.signals.simulator.hypnogram import EPOCH_SECONDS, STAGES

if TYPE_CHECKING:  # pragma: no cover
    from passport_kit.montage import Montage

#: Default sampling rate (Hz): CBraMod's own, so preprocessing does not resample.
DEFAULT_SFREQ = 200
_EDF_LABEL_LENGTH = 16


class BadChannel(BaseModel):
    """One poor contact: ``subject`` (``'*'`` = all), montage ``channel`` name, ``kind``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: str = "*"
    channel: str
    kind: Literal["noise", "drift", "flat"]


class SimulationConfig(BaseModel):
    """The options of one simulation run (validated; what ``simulation.json`` records)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_subjects: int = Field(ge=1, le=999)
    hours: float = Field(gt=0, le=24)
    seed: int = Field(0, ge=0)
    sfreq: int = Field(DEFAULT_SFREQ, ge=100, le=2048)
    bad_channels: tuple[BadChannel, ...] = ()

    @property
    def n_epochs(self) -> int:
        """Return the number of 30-s epochs per recording (at least one)."""
        return max(1, round(self.hours * 3600 / EPOCH_SECONDS))

    def subject_ids(self) -> list[str]:
        """Return ``s01``, ``s02``, ... (zero-padded to the width of the largest number)."""
        width = max(2, len(str(self.n_subjects)))
        return [f"s{i + 1:0{width}d}" for i in range(self.n_subjects)]


def parse_bad_channels(spec: str | list[str] | tuple[str, ...] | None) -> tuple[BadChannel, ...]:
    """Return the poor contacts of a ``SUBJECT:CHANNEL:KIND[,...]`` spec (or a list of items)."""
    if spec is None:
        return ()
    items = [spec] if isinstance(spec, str) else list(spec)
    out: list[BadChannel] = []
    for item in items:
        if isinstance(item, BadChannel):
            out.append(item)
            continue
        for part in (p.strip() for p in str(item).split(",")):
            if not part:
                continue
            fields = part.split(":")
            if len(fields) == 2:
                fields = ["*", *fields]
            if len(fields) != 3 or not all(f.strip() for f in fields):
                raise ConfigError(f"bad-channel item '{part}' is not SUBJECT:CHANNEL:KIND; "
                                  "write e.g. 's03:ELA:noise' or 'ELA:flat' (all subjects)")
            subject, channel, kind = (f.strip() for f in fields)
            if kind.lower() not in BAD_KINDS:
                raise ConfigError(f"bad-channel item '{part}' has kind '{kind}'; "
                                  f"use one of: {', '.join(BAD_KINDS)}")
            out.append(BadChannel(subject=subject, channel=channel, kind=kind.lower()))  # type: ignore[arg-type]
    return tuple(out)


def simulation_config(
    *, n_subjects: int, hours: float, seed: int = 0, sfreq: float = DEFAULT_SFREQ,
    bad_channels: str | list[str] | tuple[BadChannel, ...] | None = None,
    montage: Montage | None = None,
) -> SimulationConfig:
    """Return the validated options of a run; with ``montage``, bad-channel names are checked too.

    Raises :class:`~passport_kit.errors.ConfigError` (one line) for anything invalid, so a
    caller (the CLI) can check options before it starts any work.
    """
    bad = parse_bad_channels(bad_channels)  # type: ignore[arg-type]
    if float(sfreq) != int(sfreq):
        raise ConfigError(f"sampling rate {sfreq} Hz is not a whole number; EDF records of one "
                          "second need whole samples - use e.g. 200 or 256")
    try:
        config = SimulationConfig(n_subjects=n_subjects, hours=hours, seed=seed, sfreq=int(sfreq),
                                  bad_channels=bad)
    except ValidationError as exc:
        where, message = validation_problem(exc)
        raise ConfigError(f"simulation option '{where}': {message} (got {exc.errors()[0].get('input')!r})") from None
    if montage is not None:
        _bad_by_subject(config, montage)
    return config


def _bad_by_subject(config: SimulationConfig, montage: Montage) -> dict[str, dict[str, str]]:
    """Return {subject: {montage channel name: kind}}, checking subjects and channel names."""
    subjects = config.subject_ids()
    out: dict[str, dict[str, str]] = {s: {} for s in subjects}
    for bad in config.bad_channels:
        try:
            name = montage.channel(bad.channel).name
        except MontageError as exc:
            raise ConfigError(f"bad channel '{bad.channel}': {exc}") from None
        if bad.subject == "*":
            targets = subjects
        elif bad.subject in out:
            targets = [bad.subject]
        else:
            raise ConfigError(f"bad channel for subject '{bad.subject}', but the simulated subjects "
                              f"are {subjects[0]}..{subjects[-1]}; use one of those or '*'")
        for s in targets:
            out[s][name] = bad.kind
    return out


def _edf_names(ch_names: list[str]) -> list[str]:
    """Return EDF-safe signal labels (at most 16 characters, unique) for the channel names."""
    out: list[str] = []
    for i, name in enumerate(ch_names):
        label = name if len(name) <= _EDF_LABEL_LENGTH else f"{name[:_EDF_LABEL_LENGTH - 4]}~{i:03d}"
        out.append(label)
    return out


def simulate_dataset(
    montage: Montage | str | Path,
    out: str | Path,
    *,
    n_subjects: int,
    hours: float = 8.0,
    seed: int = 0,
    bad_channels: str | list[str] | tuple[BadChannel, ...] | None = None,
    sfreq: float = DEFAULT_SFREQ,
    overwrite: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
) -> Path:
    """Return the folder ``out`` after writing a simulated sleep-staging dataset into it.

    One EDF per subject (channels = ``montage`` channels, µV), one label table per recording
    and ``dataset.yaml`` (DESIGN.md §6), plus ``simulation.json`` with the ground truth
    (subject profiles, reference used, stage counts). ``montage`` is a registry name, a
    montage YAML path or a :class:`~passport_kit.montage.Montage`. ``hours`` is rounded to
    whole 30-s epochs; ``sfreq`` in Hz. A folder that already holds a ``dataset.yaml`` is
    refused unless ``overwrite``. ``progress(done, total, subject)`` is called after each
    subject is written.
    """
    from passport_kit.montage import resolve_montage
    from passport_kit.signals.simulator.writer import DATASET_FILE

    montage = resolve_montage(montage)
    config = simulation_config(n_subjects=n_subjects, hours=hours, seed=seed, sfreq=sfreq,
                               bad_channels=bad_channels)
    bad = _bad_by_subject(config, montage)
    folder = Path(out).expanduser()
    if folder.exists() and not folder.is_dir():
        raise DataError(f"output '{folder}' is a file; give a folder for the simulated dataset")
    # One writer per output folder (issue 28); dataset.yaml, written last, marks the folder complete.
    with output_lock(folder, "simulate"):
        if (folder / DATASET_FILE).exists() and not overwrite:
            raise DataError(f"'{folder}' already holds a {DATASET_FILE}; choose an empty folder "
                            "or pass overwrite=True (--overwrite)")
        # An overwritten folder is incomplete until its new dataset.yaml: readers see none meanwhile.
        (folder / DATASET_FILE).unlink(missing_ok=True)
        folder.mkdir(parents=True, exist_ok=True)
        try:
            _write_simulation(folder, montage, config, bad, progress)
        except OSError as exc:
            # Writers that fill a disk may fail without an errno (numpy: "N requested and M written"),
            # which the CLI cannot tell from a bug: say it when the disk is indeed (nearly) full.
            if exc.errno is None and shutil.disk_usage(folder).free < _FULL_BELOW_BYTES:
                raise DataError(f"'{folder}': the disk is full ({exc}); free some space or choose another disk; "
                                f"the folder has no {DATASET_FILE}, so it reads as incomplete") from None
            raise
    return folder


#: Free space under which a failed write is taken for a full disk.
_FULL_BELOW_BYTES = 64 * 1024 * 1024


def _write_simulation(folder: Path, montage: Montage, config: SimulationConfig, bad: dict[str, dict[str, str]],
                      progress: Callable[[int, int, str], None] | None) -> None:
    """Write the recordings, labels, simulation.json and, last, dataset.yaml of :func:`simulate_dataset` into ``folder``."""
    from passport_kit.version import __version__
    from passport_kit.atomic_io import write_json
    from passport_kit.signals.simulator.recording import simulate_recording
    from passport_kit.signals.simulator.writer import write_dataset_yaml, write_edf, write_labels


    edf_names = _edf_names(montage.ch_names)
    renames = {m: e for m, e in zip(montage.ch_names, edf_names) if m != e}
    recordings: list[dict] = []
    truth: dict[str, dict] = {}
    reference = ""
    for index, subject in enumerate(config.subject_ids()):
        rec = simulate_recording(montage, seed=config.seed, subject=index, n_epochs=config.n_epochs,
                                 sfreq=config.sfreq, bad_channels=bad[subject])
        reference = rec.reference
        write_edf(folder / f"{subject}.edf", rec.data, edf_names, config.sfreq, subject=subject,
                  kinds=montage.kinds)
        write_labels(folder / f"{subject}_hypnogram.csv", rec.stages)
        entry = {"subject": subject, "file": f"{subject}.edf", "labels": f"{subject}_hypnogram.csv"}
        if renames:
            entry["channels"] = renames
        recordings.append(entry)
        counts = {STAGES[s]: int((rec.stages == s).sum()) for s in range(len(STAGES))}
        truth[subject] = {"profile": rec.profile.model_dump(), "stage_epochs": counts,
                          "bad_channels": rec.bad}
        del rec
        if progress is not None:
            progress(index + 1, config.n_subjects, subject)

    write_json(folder / "simulation.json", {
        "generator": f"passport-kit {__version__} simulator",
        "montage": montage.name,
        "montage_hash": montage.content_hash,
        "config": config.model_dump(),
        "head_model": DEFAULT_HEAD.model_dump(),
        "reference": reference,
        "subjects": truth,
    })
    header = (f"Simulated sleep EEG (passport-kit simulate): montage {montage.name}, "
              f"{config.n_subjects} subject(s) x {config.n_epochs} epochs, seed {config.seed}, "
              f"{config.sfreq} Hz.\nGround truth and settings: simulation.json; model: docs/simulator.md.")
    write_dataset_yaml(folder, recordings, header=header)

