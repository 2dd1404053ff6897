"""Device validation reports, written the way sleep-tracker validation studies are (issues 44 and 56).

Menghini et al., *A standardized framework for testing the performance of sleep-tracking technology* (SLEEP 2021,
with the open R functions "sleep-trackers-performance"): on the same nights, the device's staging against a
reference scorer's, epoch by epoch (:mod:`~passport_kit.validation.epochs`: error matrices, per-stage sensitivity,
specificity, PPV, NPV, accuracy, Cohen's kappa, PABAK) and as sleep measures (:mod:`~passport_kit.validation.discrepancy`:
TST, SE, SOL, WASO, REM latency and minutes per stage; YASA's ``SleepStatsAgreement``: bias and parametric,
regression and log limits of agreement with their CIs, proportional-bias and spread tests;
:mod:`~passport_kit.validation.reliability`: ICC and minimal detectable change), per subgroup where nights carry a
dataset column. :func:`~passport_kit.validation.nights.method_report` computes them for one method over nights;
:func:`~passport_kit.validation.writer.write_validation` writes JSON, CSV, PNG (Bland–Altman plots, a hypnogram per
night) and one offline HTML page that opens with the methods side by side.

This room sits under onboarding (``evaluate`` writes the report for each method it compares) and prediction
(``predict --labels`` adds a night's numbers to its summary) and imports neither: the sleep measures are the
``Hypnogram`` value object's, from the sleep room below (``sleep/hypnogram.py``, issue 60).

Example::

    >>> import numpy as np
    >>> from passport_kit.validation import Night, method_report
    >>> ref = np.array([0] * 20 + [2] * 300 + [4] * 40)  # 3 h: 10 min wake, N2, REM
    >>> dev = ref.copy(); dev[100:120] = 0                 # the device calls 10 min of N2 wake
    >>> r = method_report("device", [Night(name="n1", reference=ref, device=dev)], ["W", "N1", "N2", "N3", "REM"])
    >>> r["nights"][0]["discrepancy"]["TST"]["difference"]
    -10.0
"""

from passport_kit.validation.nights import (MEASURES, MIN_HOURS, Night, epoch_grid, method_report, night_numbers,
                                           scored_night)
from passport_kit.validation.writer import write_validation

__all__ = ["MEASURES", "MIN_HOURS", "Night", "epoch_grid", "method_report", "night_numbers", "scored_night",
           "write_validation"]
