"""The AASM sleep-stage names, on the ground floor.

Reading labels (``signals.labels``), the simulator and the ``Hypnogram`` value object share them;
here, importing the hypnogram loads no reader, simulator or registry (issue 34, finding 10).
"""

from __future__ import annotations

#: The five AASM stages, in their conventional order.
AASM_STAGES: tuple[str, ...] = ("W", "N1", "N2", "N3", "REM")

__all__ = ["AASM_STAGES"]
