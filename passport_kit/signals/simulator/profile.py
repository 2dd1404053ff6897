"""Who is asleep: the per-subject parameters that make simulated people differ."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict


class SubjectProfile(BaseModel):
    """Return-value object of :func:`draw_profile`: one subject's physiology and skin.

    Frequencies in Hz, rates in events per minute, gains are unit-free multipliers
    (1.0 = the population median), ``electrode_noise_uv`` is the RMS of each contact's own
    noise in µV. Written into ``simulation.json`` as the ground truth of a dataset.
    """

    model_config = ConfigDict(frozen=True)

    alpha_freq: float          # individual alpha frequency
    spindle_freq: float        # fast (centro-parietal) spindle frequency; slow ones ~1.5 Hz lower
    spindle_density: float     # spindles per minute of N2
    kcomplex_rate: float       # K-complexes per minute of N2
    brain_gain: float          # all cortical sources (skull and scalp thickness, age)
    alpha_gain: float          # some people hardly show alpha
    delta_gain: float          # slow-wave amplitude (age)
    emg_gain: float            # muscle tone
    eye_gain: float            # corneo-retinal potential
    eyes_closed: float         # fraction of wake epochs with eyes closed
    mains_gain: float          # pick-up of 50 Hz from the bedroom's wiring
    electrode_noise_uv: float  # contact noise, µV RMS
    skin_gain_spread: float    # SD of the per-contact gain (skin impedance mismatch)


def draw_profile(rng: np.random.Generator) -> SubjectProfile:
    """Return a random but plausible subject; population ranges in the field comments below."""
    def lognormal(sd: float) -> float:
        return float(np.exp(rng.normal(0.0, sd)))

    return SubjectProfile(
        alpha_freq=float(rng.uniform(8.5, 11.5)),        # adult IAF 8-12 Hz
        spindle_freq=float(rng.uniform(12.5, 14.5)),     # fast spindles 12-15 Hz
        spindle_density=float(rng.uniform(2.5, 7.0)),    # 2-7 per minute of N2
        kcomplex_rate=float(rng.uniform(0.6, 2.0)),      # about 1-2 per minute of N2
        brain_gain=lognormal(0.25),
        alpha_gain=lognormal(0.3),
        delta_gain=lognormal(0.15),
        emg_gain=lognormal(0.3),
        eye_gain=lognormal(0.2),
        eyes_closed=float(rng.uniform(0.4, 0.8)),
        mains_gain=lognormal(0.6),
        electrode_noise_uv=float(rng.uniform(0.5, 1.2)),
        skin_gain_spread=float(rng.uniform(0.03, 0.08)),
    )
