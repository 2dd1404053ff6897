"""The night report of a live run: the files ``predict`` writes for a recording, from the epochs staged live, marked
as staged live.

The report is :func:`passport_kit.inference.night_report.write_prediction`'s, written whole
into ``<out>/<stream>/`` (temp folder + rename) when the run ends. Its windows are the epochs
staged (a gap's epochs are absent: the hypnogram does not bridge them); its probabilities are
the causal ones; the samples themselves are not kept (memory stays bounded over a night), so
the channel-quality table of the whole recording is not written: each epoch's checks are in
its ``flagged`` column. The summary's ``staged_live`` says how it was staged: the stream, the
look-ahead, the history, the gaps and the delays.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from passport_kit.live.causal import CausalSettings


def write_live_report(folder: Path, stream: str, result: Any, scorer: Any, *, settings: CausalSettings,
                      channels: list[str]) -> Any:
    """Return the PredictionResult of the live run ``result`` (a LiveResult) after writing its night report in
    ``folder``, marked as staged live."""
    from passport_kit.inference.files import write_folder_whole
    from passport_kit.inference.night_report import TrainingChecks, write_prediction
    from passport_kit.inference.reports import write_json
    from passport_kit.signals.recording import RecordingWindows

    epochs = result.epochs
    proba = np.stack([e.proba for e in epochs]).astype(np.float32)
    night = RecordingWindows(x=np.zeros((len(epochs), 0, 0, 0), dtype=np.float32),
                             flags=np.stack([np.asarray(e.flags, dtype=np.uint8) for e in epochs]),
                             onset_s=np.array([e.onset_s for e in epochs], dtype=np.float64), quality=None,
                             config=scorer.config, start=None)
    flagged = np.array([e.flagged for e in epochs], dtype=bool)
    delays = np.asarray(result.delays_s, dtype=np.float64)
    live = {"stream": stream, "channels": channels, "look_ahead_epochs": settings.look_ahead,
            "history_epochs": settings.history or scorer.history,
            "night_smoothing": "forward filter" if scorer.smoothing is not None else "none",
            "gaps": [{"onset_s": o, "duration_s": d} for o, d in result.gaps],
            "delay_s": None if not delays.size else {"median": float(np.median(delays)),
                                                     "p95": float(np.percentile(delays, 95)),
                                                     "max": float(delays.max())},
            "ended": datetime.now(timezone.utc).isoformat(timespec="seconds")}

    def write(tmp: Path) -> Any:
        report = write_prediction(tmp, Path(stream), proba, night, adapter=scorer.facts,
                                  checks=TrainingChecks(flagged=flagged))
        summary = {**report.summary, "staged_live": live}
        write_json(report.files["summary"], summary)
        return report.model_copy(update={"summary": summary})

    return write_folder_whole(folder, write)
