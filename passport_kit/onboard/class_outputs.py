"""What adapt says of the classes its training windows lacked: by what the shipped model can output (issue 58).

The fit's notes are written before the ladder chooses (``onboard.probe.class_warnings``): "classes
absent from the training windows will never be predicted". A sleep stager shipped as it is (or
recalibrated around its own output) still outputs them, so once the model is chosen the note is
made true: the classes it cannot output, and those a stacked stager reaches
(:meth:`~passport_kit.model.heads.Head.stager_classes`), which it outputs from the stager alone,
unchecked against the user's labels.
"""

from __future__ import annotations

from typing import Any

#: The start of the fit's note about classes without training windows (onboard.probe.class_warnings).
ABSENT_NOTE = "classes absent from the training windows will never be predicted: "


def class_output_notes(notes: list[str], head: Any, classes: list[str]) -> list[str]:
    """Return ``notes`` with the absent-classes note replaced by what the shipped ``head`` can output of them."""
    reached = head.stager_classes()
    out = []
    for note in notes:
        if not note.startswith(ABSENT_NOTE):
            out.append(note)
            continue
        absent = [c for c in note.removeprefix(ABSENT_NOTE).split(", ") if c in classes]
        stager = [c for c in absent if classes.index(c) in reached]
        never = [c for c in absent if c not in stager]
        if never:
            out.append(ABSENT_NOTE + ", ".join(never))
        if stager:
            out.append(f"classes absent from the training windows come from the sleep stager alone, unchecked "
                       f"against your labels: {', '.join(stager)} (the model shipped stages all five)")
    return out


__all__ = ["ABSENT_NOTE", "class_output_notes"]
