"""The files of a predict run: the recordings it is given, the folder each one's reports go to, and the run log.

Recordings are files, folders searched for them, or recordings in memory
(:func:`split_recordings`); each gets a folder under ``out`` named after it
(:func:`output_names`), refused when ``out`` holds one already unless overwritten
(:func:`check_outputs_free`) or kept when resumed (:func:`finished_result`), and written as a
whole (:func:`write_folder_whole`). Over several recordings, ``<out>/recordings.tsv``
(:data:`RUN_LOG`) lists each with its status, and :class:`PredictionFailures` says which failed.
"""

from __future__ import annotations
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from passport_kit.errors import ConfigError, DataError, warn
from passport_kit.inference.night_report import REPORT_FILES, PredictionResult, recording_stem

#: Written by predict over several recordings: one row per recording, its status and output or error.
RUN_LOG = "recordings.tsv"


def find_recordings(inputs: Sequence[str | Path]) -> list[Path]:
    """Return the recording files named by ``inputs`` (files, or folders searched recursively), each once."""
    from passport_kit.signals.readers import FORMATS, is_recording_file

    found: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            named = [p for p in path.rglob("*") if is_recording_file(p) and not p.is_dir()]
            hits = sorted(p for p in named if p.is_file())
            odd = sorted(p.name for p in named if not p.is_file())
            if odd:  # issue 46: a FIFO named like a recording was skipped without a word
                warn(
                    f"skipped {len(odd)} entr{'y' if len(odd) == 1 else 'ies'} in folder '{path}' named like a "
                    f"recording but not a regular file (a pipe, a device or a broken link): {', '.join(odd[:3])}"
                    f"{' ...' if len(odd) > 3 else ''}")
            if not hits:
                kinds = ", ".join(dict.fromkeys(name for suffix, name in FORMATS.items() if suffix != ".txt"))
                raise DataError(f"no recordings ({kinds}) found in folder '{path}'")
            found.extend(hits)
        elif path.is_file():
            found.append(path)
        else:
            state = ("is not a regular file (a device or a pipe)" if path.exists() else
                     "is a symlink that leads nowhere (a loop, or its target is gone)" if path.is_symlink() else
                     "does not exist")
            raise DataError(f"recording '{path}' {state}; give a recording file or a folder of them")
    if not found:
        raise DataError("no recordings given; pass one or more recording files or folders")
    # A file named alone and again through its folder is one recording, predicted once.
    unique: dict[Path, Path] = {}
    for p in found:
        unique.setdefault(p.resolve(), p)
    return list(unique.values())


def output_names(files: Sequence[Path]) -> list[str]:
    """Return each recording's output folder name: its stem, or ``<parent>_<stem>`` where stems collide.

    ``night1/s01.edf`` and ``night2/s01.edf`` must not overwrite each other's reports.
    """
    stems = [recording_stem(p) for p in files]
    names = [s if stems.count(s) == 1 else f"{p.parent.name}_{s}" for p, s in zip(files, stems)]
    return [n if names.count(n) == 1 else f"{n}-{names[:i].count(n) + 1}" for i, n in enumerate(names)]



def split_recordings(recordings: Any) -> tuple[list[Path], dict[Path, Any]]:
    """Return ``(files, {name: recording in memory})`` of predict's ``recordings``; ``files`` ends with the names.

    One recording in memory may be given alone (a Raw, or an ``(array, sfreq, ch_names)`` tuple).
    """
    import mne

    if recordings is None or (isinstance(recordings, (list, tuple)) and not len(recordings)):
        raise ConfigError("no recordings given; pass a recording file or folder, an mne.io.Raw or an (array, sfreq, "
                          "ch_names) tuple, or a list of them")
    single = isinstance(recordings, (str, Path, mne.io.BaseRaw)) or (
        isinstance(recordings, tuple) and len(recordings) == 3 and isinstance(recordings[0], np.ndarray))
    items = [recordings] if single else list(recordings)
    paths = [item for item in items if isinstance(item, (str, Path))]
    memory: dict[Path, Any] = {}
    for k, item in enumerate(i for i in items if not isinstance(i, (str, Path))):
        named = isinstance(item, mne.io.BaseRaw) and item.filenames and item.filenames[0]
        name = Path(Path(item.filenames[0]).name if named else f"recording-{k + 1}")
        while name in memory:
            name = name.with_name(f"{name.stem}-{k + 1}{name.suffix}")
        memory[name] = item
    files = find_recordings(paths) if paths or not memory else []
    return files + list(memory), memory


def default_output_folder() -> Path:
    """Return a new temporary folder for predictions when the caller named none (issue 35: not ./predictions)."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix="passport-kit-predictions-"))


def finished_prediction(folder: Path) -> bool:
    """Return whether ``folder`` holds a recording's finished predictions (written whole: a summary means done)."""
    return folder.is_dir() and any(folder.glob("*_summary.json"))


def finished_result(folder: Path, recording: Path, *, adapter: str | Path | None = None) -> PredictionResult:
    """Return the :class:`PredictionResult` of predictions already in ``folder`` (``resume``), from its summary.

    ``adapter``: the bundle of this run; predictions made with another one are refused
    (ConfigError), not reported as this run's (issue 46).
    """
    from passport_kit.inference.night_summary import NightSummary

    summary = NightSummary.read(next(folder.glob("*_summary.json")))
    made_with = summary.adapter
    if adapter is not None and Path(made_with).resolve() != Path(adapter).resolve():
        raise ConfigError(f"--resume: '{folder}' holds predictions made with adapter '{made_with}', not '{adapter}'; "
                          "resume with that adapter, choose another --out, or pass --overwrite (without --resume) to "
                          "predict anew")
    kinds = {end: kind for kind, end in REPORT_FILES.items()}
    files = {kind: p for p in folder.iterdir() for end, kind in kinds.items() if p.name.endswith(end)}
    files.update({"hypnogram_plot": p for p in folder.glob("*_hypnogram.*") if p.suffix != ".json"})
    return PredictionResult(recording=recording, files=files, classes=list(summary.classes),
                            n_windows=summary.n_windows, summary=summary)


def check_outputs_free(out_dir: Path, folders: list[str], *, overwrite: bool) -> None:
    """Raise ConfigError when ``out_dir`` already holds one of the recording ``folders`` and ``overwrite`` is off."""
    taken = [name for name in folders if (out_dir / name).exists()]
    if taken and not overwrite:
        more = f" and {len(taken) - 1} more" if len(taken) > 1 else ""
        raise ConfigError(f"--out '{out_dir}' already holds predictions for '{taken[0]}'{more}; choose another --out, "
                          "or pass --overwrite (overwrite=True) to replace them")


def write_folder_whole(folder: Path, write: Callable[[Path], PredictionResult]) -> PredictionResult:
    """Return ``write(tmp)``'s result after the temporary folder it filled replaced ``folder`` as a whole."""
    from passport_kit.atomic_io import write_folder_atomically

    written: list[PredictionResult] = []
    write_folder_atomically(folder, lambda tmp: written.append(write(tmp)))
    result = written[0]
    return result.model_copy(update={"files": {k: folder / p.name for k, p in result.files.items()}})



class PredictionFailures(DataError):
    """Some recordings of a predict run failed; the others were predicted and written.

    ``results`` are the :class:`PredictionResult` of the recordings that worked, ``failures``
    one ``{recording, error}`` row per recording that did not, ``log`` the TSV listing every
    recording (``<out>/recordings.tsv``).
    """

    def __init__(self, results: list[PredictionResult], failures: list[dict[str, Any]], log: Path) -> None:
        first = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        super().__init__(f"{len(failures)} of {len(results) + len(failures)} recordings could not be predicted: "
                         f"{first['error']}{more}; the other {len(results)} were written, and {log} lists every "
                         "recording with its error")
        self.results, self.failures, self.log = results, failures, log


def log_row(path: Path, result: PredictionResult | None = None, *, error: str | None = None) -> dict[str, Any]:
    """Return the run log's row of one recording: predicted (``result``) or failed (``error``)."""
    if result is None:
        return {"recording": str(path), "status": "failed", "windows": None, "output": None, "error": error}
    return {"recording": str(path), "status": "ok", "windows": result.n_windows,
            "output": str(result.files["summary"].parent), "error": None}


