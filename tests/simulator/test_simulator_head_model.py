"""The analytic four-shell lead field against MNE and against the closed form for one shell."""

from __future__ import annotations

import mne
import numpy as np
import pytest

from passport_kit.montage.mne_bridge import template_head_positions
from passport_kit.signals.simulator.head_model import DEFAULT_HEAD, SphereHeadModel, lead_field
from passport_kit.signals.simulator.sources import build_layout


def _scalp_electrodes(n: int = 40) -> np.ndarray:
    """Return n colin27 template electrodes (head frame, metres) projected onto the scalp sphere."""
    positions, _ = template_head_positions()
    return DEFAULT_HEAD.project_to_scalp(np.array(list(positions.values())[:: 8][:n]))


def _mne_lead_field(electrodes: np.ndarray, pos: np.ndarray, ori: np.ndarray) -> np.ndarray:
    """Return MNE's fixed-orientation EEG forward for the dipoles (E, S), V/(A·m)."""
    info = mne.create_info([f"E{i}" for i in range(len(electrodes))], 200.0, "eeg")
    for ch, p in zip(info["chs"], electrodes):
        ch["loc"][:3] = p
    sphere = mne.make_sphere_model(r0=DEFAULT_HEAD.r0, head_radius=DEFAULT_HEAD.head_radius,
                                   relative_radii=DEFAULT_HEAD.relative_radii,
                                   sigmas=DEFAULT_HEAD.sigmas, verbose=False)
    dipoles = mne.Dipole(np.zeros(len(pos)), pos, np.ones(len(pos)), ori, np.ones(len(pos)))
    fwd, _ = mne.make_forward_dipole(dipoles, sphere, info, verbose=False)
    return fwd["sol"]["data"]


@pytest.mark.parametrize("which", ["cortical", "eyes"])
def test_lead_field_matches_mne_sphere_model(which: str) -> None:
    layout = build_layout(np.random.default_rng(3))
    keep = [i for i, n in enumerate(layout.names) if n.startswith("EYE") == (which == "eyes")]
    electrodes = _scalp_electrodes()
    ours = lead_field(electrodes, layout.positions[keep], layout.orientations[keep])
    theirs = _mne_lead_field(electrodes, layout.positions[keep], layout.orientations[keep])
    # MNE evaluates the Berg-Scherg fit to the same series; they agree to well under 1%.
    rel = np.linalg.norm(ours - theirs, axis=0) / np.linalg.norm(theirs, axis=0)
    assert rel.max() < 0.01


def test_centred_radial_dipole_in_homogeneous_sphere_matches_closed_form() -> None:
    # V = 3 q cos(theta) / (4 pi sigma R^2) for a dipole at the centre of a homogeneous sphere.
    head = SphereHeadModel(relative_radii=(1.0,), sigmas=(0.33,))
    angles = np.linspace(0.1, 3.0, 7)
    electrodes = np.asarray(head.r0) + head.head_radius * np.stack(
        [np.sin(angles), np.zeros_like(angles), np.cos(angles)], axis=1)
    v = lead_field(electrodes, np.asarray([head.r0]), np.array([[0.0, 0.0, 1.0]]), head=head)[:, 0]
    expected = 3 * np.cos(angles) / (4 * np.pi * 0.33 * head.head_radius**2)
    # The centre has no radial direction, so the source sits 1 µm off it (relative error ~1e-5).
    np.testing.assert_allclose(v, expected, rtol=1e-4, atol=1e-3)


def test_sources_outside_the_brain_shell_are_refused() -> None:
    with pytest.raises(ValueError, match="inside the brain shell"):
        lead_field(np.array([[0.09, 0.0, 0.04]]), np.array([[0.0, 0.0, 0.04 + 0.085]]),
                   np.array([[0.0, 0.0, 1.0]]))
