"""Where the brain's sources sit: cortical dipole sites, eye dipoles, and generator patterns.

A *site* is a current dipole at a fixed direction and depth from the sphere centre, oriented
radially outward (the net current of a gyral crown), named after the scalp site above it.
A *generator* is one source time course (an alpha rhythm, a spindle train, the horizontal eye
position) and its spatial *pattern*: a weight per site. The simulated moment of site ``s`` is
``sum_g pattern[s, g] * generator_g(t)``, so the scalp sees ``lead_field @ patterns @ generators``.

Per subject the sites move by a few millimetres and tilt by a few degrees
(:func:`build_layout`), so two subjects differ in their topographies as real people do.

The eyes are corneo-retinal dipoles pointing forward; an eye movement rotates them, which
adds a horizontal (``x``) or vertical (``z``) moment. The series solution of
:mod:`~passport_kit.signals.simulator.head_model` needs every source inside the brain shell,
so the eye dipoles sit at the front-inferior edge of that shell, behind the real eyes: the
frontal gradient of eye movements is therefore smoother than a real EOG's (docs/simulator.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from passport_kit.signals.simulator.head_model import DEFAULT_HEAD, SphereHeadModel

# name: (direction from the sphere centre (unnormalised), eccentricity as a fraction of the
# brain-shell radius). Directions point at the 10-20 site above the source; the sphere centre
# is 4 cm above the head-frame origin, so ear level is about 25 degrees below the equator.
_CORTICAL_SITES: dict[str, tuple[tuple[float, float, float], float]] = {
    "FPZ": ((0.0, 0.95, 0.25), 0.86),
    "FZ": ((0.0, 0.72, 0.70), 0.86),
    "F3": ((-0.55, 0.62, 0.56), 0.86),
    "F4": ((0.55, 0.62, 0.56), 0.86),
    "F7": ((-0.78, 0.60, 0.05), 0.86),
    "F8": ((0.78, 0.60, 0.05), 0.86),
    "CZ": ((0.0, 0.0, 1.0), 0.86),
    "C3": ((-0.72, 0.0, 0.69), 0.86),
    "C4": ((0.72, 0.0, 0.69), 0.86),
    "T7": ((-0.97, 0.08, -0.15), 0.86),
    "T8": ((0.97, 0.08, -0.15), 0.86),
    "TA_L": ((-0.80, 0.45, -0.40), 0.84),   # anterior temporal pole, just in front of the ear
    "TA_R": ((0.80, 0.45, -0.40), 0.84),
    "TP_L": ((-0.85, -0.45, -0.28), 0.86),  # temporo-parietal, just behind the ear
    "TP_R": ((0.85, -0.45, -0.28), 0.86),
    "PZ": ((0.0, -0.70, 0.70), 0.86),
    "P3": ((-0.52, -0.62, 0.58), 0.86),
    "P4": ((0.52, -0.62, 0.58), 0.86),
    "O1": ((-0.30, -0.94, 0.12), 0.86),
    "O2": ((0.30, -0.94, 0.12), 0.86),
    "OZ": ((0.0, -0.97, 0.22), 0.86),
}

# Eye dipoles: (direction, eccentricity, orientation). Both eyes rotate together (conjugate
# gaze), so one horizontal and one vertical generator drive both eyes.
_EYE_SITES: dict[str, tuple[tuple[float, float, float], float, tuple[float, float, float]]] = {
    "EYE_L_H": ((-0.35, 0.88, -0.33), 0.95, (1.0, 0.0, 0.0)),
    "EYE_R_H": ((0.35, 0.88, -0.33), 0.95, (1.0, 0.0, 0.0)),
    "EYE_L_V": ((-0.35, 0.88, -0.33), 0.95, (0.0, 0.0, 1.0)),
    "EYE_R_V": ((0.35, 0.88, -0.33), 0.95, (0.0, 0.0, 1.0)),
}

SITE_NAMES: tuple[str, ...] = (*_CORTICAL_SITES, *_EYE_SITES)

#: Spatial pattern of every generator: site -> weight (unit-free; amplitudes live in
#: :mod:`~passport_kit.signals.simulator.dynamics`). Background generators are one per site.
PATTERNS: dict[str, dict[str, float]] = {
    # slow oscillation / delta: a global, frontally dominant wave plus hemispheric parts
    "delta_global": {"FPZ": 0.9, "FZ": 1.0, "F3": 0.9, "F4": 0.9, "F7": 0.6, "F8": 0.6, "CZ": 0.8,
                     "C3": 0.7, "C4": 0.7, "PZ": 0.5, "P3": 0.45, "P4": 0.45, "T7": 0.45,
                     "T8": 0.45, "TA_L": 0.4, "TA_R": 0.4, "TP_L": 0.35, "TP_R": 0.35,
                     "O1": 0.3, "O2": 0.3, "OZ": 0.3},
    "delta_left": {"F3": 0.6, "F7": 0.5, "C3": 0.5, "T7": 0.5, "TA_L": 0.5, "TP_L": 0.4, "P3": 0.3},
    "delta_right": {"F4": 0.6, "F8": 0.5, "C4": 0.5, "T8": 0.5, "TA_R": 0.5, "TP_R": 0.4, "P4": 0.3},
    # theta: fronto-central midline and both temporal lobes
    "theta_mid": {"FZ": 1.0, "CZ": 1.0, "F3": 0.4, "F4": 0.4, "PZ": 0.4},
    "theta_left": {"C3": 0.6, "T7": 0.8, "TA_L": 0.8, "TP_L": 0.6, "F7": 0.4},
    "theta_right": {"C4": 0.6, "T8": 0.8, "TA_R": 0.8, "TP_R": 0.6, "F8": 0.4},
    # alpha: posterior, with a shared and a hemispheric part; some temporal alpha
    "alpha_common": {"O1": 1.0, "O2": 1.0, "OZ": 1.0, "PZ": 0.6, "P3": 0.5, "P4": 0.5,
                     "TP_L": 0.35, "TP_R": 0.35},
    "alpha_left": {"O1": 0.6, "P3": 0.4, "TP_L": 0.4, "T7": 0.2},
    "alpha_right": {"O2": 0.6, "P4": 0.4, "TP_R": 0.4, "T8": 0.2},
    # beta: fronto-central
    "beta_left": {"F3": 1.0, "C3": 0.8, "F7": 0.6, "TA_L": 0.3},
    "beta_right": {"F4": 1.0, "C4": 0.8, "F8": 0.6, "TA_R": 0.3},
    "beta_mid": {"FZ": 1.0, "CZ": 0.8, "FPZ": 0.5},
    # sleep graphoelements (event trains)
    "spindle_fast": {"CZ": 1.0, "C3": 0.8, "C4": 0.8, "PZ": 0.9, "P3": 0.6, "P4": 0.6,
                     "TP_L": 0.3, "TP_R": 0.3, "T7": 0.25, "T8": 0.25},
    "spindle_slow": {"FZ": 1.0, "F3": 0.7, "F4": 0.7, "FPZ": 0.5, "CZ": 0.4},
    "kcomplex": {"FZ": 1.0, "F3": 0.8, "F4": 0.8, "FPZ": 0.6, "CZ": 0.9, "C3": 0.6, "C4": 0.6,
                 "PZ": 0.4, "T7": 0.3, "T8": 0.3, "TA_L": 0.25, "TA_R": 0.25},
    "vertex": {"CZ": 1.0, "FZ": 0.5, "C3": 0.5, "C4": 0.5, "PZ": 0.3},
    "sawtooth": {"CZ": 1.0, "FZ": 0.8, "C3": 0.5, "C4": 0.5, "PZ": 0.3},
    # eyes
    "eye_h": {"EYE_L_H": 1.0, "EYE_R_H": 1.0},
    "eye_v": {"EYE_L_V": 1.0, "EYE_R_V": 1.0},
}
# Background activity: one independent generator per site, on twelve sites spread over the
# head (more would cost time for little change at the scalp, which volume conduction smooths).
BACKGROUND_SITES: tuple[str, ...] = ("FZ", "F3", "F4", "C3", "C4", "PZ", "T7", "T8",
                                     "TA_L", "TA_R", "O1", "O2")
for _site in BACKGROUND_SITES:
    PATTERNS[f"bg_{_site}"] = {_site: 1.0}

GENERATOR_NAMES: tuple[str, ...] = tuple(PATTERNS)


@dataclass(frozen=True)
class SourceLayout:
    """Return-value object: one subject's dipoles, positions and orientations in metres/unit."""

    names: tuple[str, ...]
    positions: np.ndarray        # (S, 3) metres, head frame
    orientations: np.ndarray     # (S, 3) unit vectors

    def pattern_matrix(self, generators: tuple[str, ...] = GENERATOR_NAMES) -> np.ndarray:
        """Return the site weights of each generator, shape (S, G)."""
        index = {name: i for i, name in enumerate(self.names)}
        out = np.zeros((len(self.names), len(generators)))
        for g, name in enumerate(generators):
            for site, weight in PATTERNS[name].items():
                out[index[site], g] = weight
        return out


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def build_layout(
    rng: np.random.Generator | None,
    *,
    position_jitter_m: float = 0.004,
    orientation_jitter: float = 0.15,
    head: SphereHeadModel = DEFAULT_HEAD,
) -> SourceLayout:
    """Return a subject's dipole layout; ``rng=None`` gives the canonical (unjittered) head.

    Positions move by ``position_jitter_m`` (metres, per axis, Gaussian), orientations tilt by
    about ``orientation_jitter`` radians; sources stay inside the brain shell.
    """
    centre = np.asarray(head.r0)
    names, pos, ori = [], [], []
    for name, (direction, ecc) in _CORTICAL_SITES.items():
        d = _unit(np.asarray(direction, dtype=np.float64))
        names.append(name)
        pos.append(centre + d * ecc * head.brain_radius)
        ori.append(d)
    for name, (direction, ecc, orientation) in _EYE_SITES.items():
        d = _unit(np.asarray(direction, dtype=np.float64))
        names.append(name)
        pos.append(centre + d * ecc * head.brain_radius)
        ori.append(np.asarray(orientation, dtype=np.float64))
    positions, orientations = np.array(pos), np.array(ori)
    if rng is not None:
        positions = positions + rng.normal(0.0, position_jitter_m, positions.shape)
        orientations = _unit(orientations + rng.normal(0.0, orientation_jitter, orientations.shape))
        # Keep every source inside the brain shell (the series needs it) with 2 mm to spare.
        rel = positions - centre
        radius = np.linalg.norm(rel, axis=1, keepdims=True)
        limit = head.brain_radius - 0.002
        positions = centre + rel * np.minimum(1.0, limit / radius)
    return SourceLayout(tuple(names), positions, orientations)
