"""The head: a four-shell spherical volume conductor and its analytic EEG lead field.

The model is MNE's default sphere (:func:`mne.make_sphere_model` with ``r0=(0, 0, 0.04)`` m,
``head_radius=0.09`` m): brain, CSF, skull and scalp shells at radii 0.90, 0.92, 0.97 and 1.0
of the head radius with conductivities 0.33, 1.0, 0.004 and 0.33 S/m. All positions are in the
MNE head frame, metres.

The potential that a current dipole inside the brain shell produces on the outer surface is
the classic series solution for concentric spheres (Zhang 1995, Phys. Med. Biol. 40:335; the
same series that MNE's Berg-Scherg approximation is fitted to). For a dipole moment ``q`` at
``r_q`` (``b = |r_q|``, relative to the sphere centre) and an electrode at direction ``e`` on
the outer surface (radius ``R``, conductivity ``sigma_N``)::

    V = 1 / (4 pi sigma_N R^2) * sum_n (2n+1)/n * f_n * (b/R)^(n-1)
            * [ n q_r P_n(cos g) + q_t P_n^1(cos g) ]

``g`` is the angle between ``r_q`` and ``e``, ``q_r`` the radial component of ``q``, ``q_t``
its tangential component toward the electrode, ``P_n^1 = sin(g) dP_n/dcos(g)``, and ``f_n``
collects the shells (``f_n = 1`` for a homogeneous sphere)::

    f_n = n / (n m22 + (n+1) m21),  M = prod_k 1/(2n+1) [[n + (n+1) s_k, (n+1)(s_k-1)(R/r_k)^(2n+1)],
                                                          [n (s_k-1)(r_k/R)^(2n+1), (n+1) + n s_k]]

with ``s_k = sigma_k / sigma_(k+1)`` and the product taken from the innermost interface out.
``tests/simulator/test_simulator_head_model.py`` checks it against :func:`mne.make_forward_dipole`.

Electrodes are projected radially onto the outer sphere before the potential is evaluated
(the series holds on the surface only). Real heads are not spheres: an in-ear contact is a few
millimetres inside the skin line, and the projection moves it outwards along its direction
from the sphere centre. What the projection keeps is what matters for ear-EEG: the *direction*
of each contact, so contacts a few millimetres apart still see slightly different potentials.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from pydantic import BaseModel, ConfigDict

#: Terms of the Legendre series; with the sources at most 0.85 of the outer radius the last
#: terms are below 1e-9 of the first, and the low skull conductivity damps them further.
N_TERMS = 200


class SphereHeadModel(BaseModel):
    """Return-value object describing the concentric-sphere head (metres, S/m, MNE head frame)."""

    model_config = ConfigDict(frozen=True)

    r0: tuple[float, float, float] = (0.0, 0.0, 0.04)
    head_radius: float = 0.09
    relative_radii: tuple[float, ...] = (0.90, 0.92, 0.97, 1.0)
    sigmas: tuple[float, ...] = (0.33, 1.0, 0.004, 0.33)

    @property
    def radii(self) -> np.ndarray:
        """Return the shell radii in metres, innermost (brain) first, shape ``(L,)``."""
        return np.asarray(self.relative_radii, dtype=np.float64) * self.head_radius

    @property
    def brain_radius(self) -> float:
        """Return the radius of the innermost shell (sources must lie inside it), metres."""
        return float(self.radii[0])

    def project_to_scalp(self, positions: np.ndarray) -> np.ndarray:
        """Return ``positions`` (E, 3) moved radially onto the outer sphere, shape (E, 3), metres."""
        centre = np.asarray(self.r0)
        rel = np.asarray(positions, dtype=np.float64) - centre
        norm = np.linalg.norm(rel, axis=1, keepdims=True)
        return centre + rel / norm * self.head_radius


DEFAULT_HEAD = SphereHeadModel()


@lru_cache(maxsize=8)
def _shell_factors(head: SphereHeadModel, n_terms: int) -> np.ndarray:
    """Return ``f_n`` for n = 1..n_terms, shape (n_terms,); 1.0 everywhere for one shell."""
    n = np.arange(1, n_terms + 1, dtype=np.float64)
    radii, sigmas, outer = head.radii, np.asarray(head.sigmas), head.head_radius
    prod = np.broadcast_to(np.eye(2), (n_terms, 2, 2)).copy()
    for k in range(len(radii) - 1):
        s = sigmas[k] / sigmas[k + 1]
        step = np.empty((n_terms, 2, 2))
        step[:, 0, 0] = n + (n + 1) * s
        step[:, 0, 1] = (n + 1) * (s - 1) * (outer / radii[k]) ** (2 * n + 1)
        step[:, 1, 0] = n * (s - 1) * (radii[k] / outer) ** (2 * n + 1)
        step[:, 1, 1] = (n + 1) + n * s
        prod = prod @ (step / (2 * n + 1)[:, None, None])
    factors = n / (n * prod[:, 1, 1] + (n + 1) * prod[:, 1, 0])
    factors.setflags(write=False)
    return factors


def lead_field(
    electrodes: np.ndarray,
    dipole_positions: np.ndarray,
    dipole_orientations: np.ndarray,
    *,
    head: SphereHeadModel = DEFAULT_HEAD,
    n_terms: int = N_TERMS,
) -> np.ndarray:
    """Return the potential per unit dipole moment, shape (E, S), volts per ampere-metre.

    ``electrodes`` (E, 3) are head-frame positions in metres (projected onto the scalp
    sphere here); ``dipole_positions`` (S, 3) in metres must lie inside the brain shell;
    ``dipole_orientations`` (S, 3) are unit vectors. Potentials are relative to infinity
    (the sphere's own zero); the caller re-references.
    """
    electrodes = np.atleast_2d(np.asarray(electrodes, dtype=np.float64))
    pos = np.atleast_2d(np.asarray(dipole_positions, dtype=np.float64))
    ori = np.atleast_2d(np.asarray(dipole_orientations, dtype=np.float64))
    centre = np.asarray(head.r0)
    rel = pos - centre
    b = np.linalg.norm(rel, axis=1)
    if np.any(b >= head.brain_radius):
        # A bug in a source layout, not a user error: the series needs the source in shell 1.
        raise ValueError(f"dipoles must lie inside the brain shell (radius {head.brain_radius} m)")
    # A dipole exactly at the centre has no radial direction; nudge it (1 µm) along z.
    rel = np.where(b[:, None] < 1e-6, np.array([0.0, 0.0, 1e-6]), rel)
    b = np.linalg.norm(rel, axis=1)
    radial = rel / b[:, None]

    e = head.project_to_scalp(electrodes) - centre
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    cos_g = np.clip(e @ radial.T, -1.0, 1.0)                     # (E, S)
    sin_g = np.sqrt(1.0 - cos_g**2)
    # Tangential unit vector at the dipole, in the plane of r_q and e, pointing at e.
    tangent = e[:, None, :] - cos_g[..., None] * radial[None, :, :]
    tangent /= np.maximum(np.linalg.norm(tangent, axis=-1), 1e-12)[..., None]
    q_r = np.sum(ori * radial, axis=1)[None, :]                  # (1, S)
    q_t = np.einsum("esk,sk->es", tangent, ori)                  # (E, S)

    factors = _shell_factors(head, n_terms)
    ratio = b / head.head_radius
    total = np.zeros_like(cos_g)
    # Legendre recurrences: P_{n+1} = ((2n+1) x P_n - n P_{n-1}) / (n+1) and
    # P'_{n+1} = P'_{n-1} + (2n+1) P_n; the loop runs over terms, never over samples.
    p_prev, p_n = np.ones_like(cos_g), cos_g.copy()
    dp_prev, dp_n = np.zeros_like(cos_g), np.ones_like(cos_g)
    power = np.ones_like(ratio)
    for n in range(1, n_terms + 1):
        weight = (2 * n + 1) / n * factors[n - 1] * power
        total += weight[None, :] * (n * q_r * p_n + q_t * sin_g * dp_n)
        p_prev, p_n = p_n, ((2 * n + 1) * cos_g * p_n - n * p_prev) / (n + 1)
        dp_prev, dp_n = dp_n, dp_prev + (2 * n + 1) * p_prev
        power = power * ratio
    return total / (4.0 * np.pi * head.sigmas[-1] * head.head_radius**2)
