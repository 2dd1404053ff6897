"""The one loop that scores recordings, whatever scores them: an adapter bundle or a pretrained sleep stager alone.

A :class:`Scorer` says how it reads a recording (:meth:`Scorer.read`, run in a worker thread
for the next recording while the current one is scored) and how it scores one and writes its
folder (:meth:`Scorer.score`). :func:`score_recordings` does the rest for both, once: one writer
per output folder (the lock), what a killed run left half-written removed, the recordings a
finished (or killed) run wrote kept (``resume``), a bad recording noted in the run log
(``<out>/recordings.tsv``) while the others go on (issue 19), and :class:`PredictionFailures`
at the end. :func:`passport_kit.inference.predict.predict` scores with an adapter
(:class:`~passport_kit.inference.recording.AdapterScorer`),
:func:`~passport_kit.inference.zero_shot.predict_zero_shot` with a stager
(:class:`~passport_kit.inference.zero_shot.StagerScorer`).

(Not to be confused with the human scorer whose labels predict compares with: ``ScorerFiles``.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from passport_kit.errors import PassportError, file_system_message
from passport_kit.inference import reports
from passport_kit.inference.files import (
    RUN_LOG,
    PredictionFailures,
    check_outputs_free,
    default_output_folder,
    finished_prediction,
    finished_result,
    log_row,
    output_names,
)
from passport_kit.inference.night_report import PredictionResult
from passport_kit.inference.options import OutputOptions
from passport_kit.inference.recording import prefetched
from passport_kit.output_lock import output_lock

Night = TypeVar("Night")


class Scorer(Protocol[Night]):
    """What scores recordings for predict: an adapter bundle loaded, or a sleep stager alone."""

    #: What the predictions are made with, as their summary's ``adapter`` names it (a resumed run keeps only the
    #: folders made with the same).
    source: Path

    def read(self, path: Path) -> Night:
        """Return recording ``path`` read for scoring (called in a worker thread for the next recording)."""
        ...

    def score(self, path: Path, night: Night, *, folder: Path, label_file: Path | None) -> PredictionResult:
        """Return the result of recording ``path`` (read as ``night``) after scoring it and writing ``folder`` whole
        (``label_file``: a scorer's labels of it, or None)."""
        ...


def score_recordings(scorer: Scorer[Any], files: Sequence[Path], out: str | Path | None, *, output: OutputOptions,
                     label_files: dict[Path, Path], prefetch: bool = True,
                     progress: Callable[[str], None] | None = None) -> list[PredictionResult]:
    """Return one result per recording of ``files`` scored by ``scorer``, each written to its folder under ``out``.

    ``out`` None: a new temporary folder. ``output``: whether folders ``out`` holds are replaced
    (``overwrite``) or kept (``resume``); ``label_files``: a scorer's labels per recording;
    ``prefetch``: read the next recording while this one is scored; ``progress(recording)`` is
    called before each recording scored. Over several recordings a failing one does not stop
    the others: :class:`PredictionFailures` is raised at the end, and ``<out>/recordings.tsv``
    lists every recording with its status.
    """
    out_dir = Path(out) if out is not None else default_output_folder()
    out_dir.mkdir(parents=True, exist_ok=True)  # an unwritable --out fails now, not after the first recording
    folder_of = dict(zip(files, output_names(files)))
    # One writer per output folder (issue 28): a second predict into it exits at once, naming this one.
    with output_lock(out_dir, "predict"):
        from passport_kit.atomic_io import remove_stale_folders

        # What a killed run left half-written (issue 35); under the lock, no other run is writing them.
        remove_stale_folders(out_dir, folder_of.values())
        # The recordings a finished (or killed) run of this command already wrote are kept (resume).
        results = [finished_result(out_dir / folder_of[p], p, adapter=scorer.source) for p in files
                   if output.resume and finished_prediction(out_dir / folder_of[p])]
        log = [log_row(r.recording, r) for r in results]
        done = {r.recording for r in results}
        todo = [p for p in files if p not in done]
        check_outputs_free(out_dir, [folder_of[p] for p in todo], overwrite=output.overwrite)
        # While one recording is scored, the next one is read and preprocessed in a thread
        # (file reading, FFT filtering and quality statistics release the GIL).
        for path, night in prefetched(todo, scorer.read, ahead=prefetch):
            if progress is not None:
                progress(str(path))
            try:
                result = scorer.score(path, night(), folder=out_dir / folder_of[path], label_file=label_files.get(path))
            except (PassportError, OSError) as exc:
                # One bad recording in a folder must not cost the others (issue 19): note it, go on.
                reason = str(exc) if isinstance(exc, PassportError) else file_system_message(exc)
                if reason is None or len(files) == 1:
                    raise
                log.append(log_row(path, error=reason))
            else:
                results.append(result)
                log.append(log_row(path, result))
        if len(files) > 1:
            log_file = reports.write_table(out_dir / RUN_LOG, log, delimiter="\t")
            failures = [row for row in log if row["status"] == "failed"]
            if failures:
                raise PredictionFailures(results, failures, log_file)
    return results


__all__ = ["Scorer", "score_recordings"]
