"""Pictures of a montage: a 2-D topographic head and a 3-D view of the sensors.

Drawn with matplotlib's object API (no pyplot, no GUI backend), so it works headless and does
not touch global plotting state. Bipolar channels are drawn as a line from the reference to
the active electrode, never as one midpoint.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from passport_kit.errors import MontageError
from passport_kit.atomic_io import atomic_write_bytes
from passport_kit.montage.files import user_writable
from passport_kit.montage.schema import Montage

#: Head radius of the drawing (metres): MNE's default sphere radius for topographic plots.
HEAD_RADIUS_M = 0.095
_FORMATS = (".png", ".pdf", ".svg", ".jpg", ".jpeg")


def topomap_coords(positions: np.ndarray, radius: float = HEAD_RADIUS_M) -> np.ndarray:
    """Return 2-D topographic coordinates ``(C, 2)`` in metres of head-frame positions ``(C, 3)``.

    Azimuthal equidistant projection around +z, as MNE's topomaps: the distance from the centre
    is proportional to the angle from the vertex, and the equator (z = 0, where the ears and
    nasion lie) falls on the head circle of ``radius``.
    """
    pos = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    norm = np.linalg.norm(pos, axis=1)
    polar = np.arccos(np.clip(pos[:, 2] / np.where(norm > 0, norm, 1.0), -1.0, 1.0))
    azimuth = np.arctan2(pos[:, 1], pos[:, 0])
    rho = polar / (np.pi / 2) * radius
    return np.column_stack([rho * np.cos(azimuth), rho * np.sin(azimuth)])


def plot_montage(montage: Montage, out: str | Path | None = None, *, show_names: bool = True):  # noqa: ANN201
    """Return a matplotlib Figure with a 2-D head view and a 3-D view; save it to ``out`` if given."""
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle, Polygon

    fig = Figure(figsize=(12, 6), dpi=100)
    FigureCanvasAgg(fig)
    fig.suptitle(f"{montage.name}: {montage.n_channels} channels, reference {montage.reference}"
                 f" (hash {montage.content_hash[:12]})", fontsize=11)

    pos = montage.positions
    refs = montage.reference_positions
    bipolar = ~np.isnan(refs).any(axis=1)
    colors = {"eeg": "tab:blue", "eog": "tab:green", "emg": "tab:red", "ecg": "tab:purple",
              "misc": "tab:gray"}
    kinds = montage.kinds

    # --- 2-D topographic view (mm)
    ax = fig.add_subplot(1, 2, 1)
    r = HEAD_RADIUS_M * 1000
    ax.add_patch(Circle((0, 0), r, fill=False, lw=1.5))
    ax.add_patch(Polygon([(-0.12 * r, 0.99 * r), (0, 1.12 * r), (0.12 * r, 0.99 * r)], closed=False,
                         fill=False, lw=1.5))
    for side in (-1, 1):
        ear = np.array([[0.0, 0.10], [0.05, 0.12], [0.09, 0.08], [0.09, -0.08], [0.05, -0.15],
                        [0.0, -0.12]]) * r
        ax.add_patch(Polygon(np.column_stack([side * (r + ear[:, 0]), ear[:, 1]]), closed=False,
                             fill=False, lw=1.5))
    xy = topomap_coords(pos) * 1000
    if bipolar.any():
        ref_xy = topomap_coords(refs[bipolar]) * 1000
        for (x0, y0), (x1, y1) in zip(ref_xy, xy[bipolar]):
            ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                        arrowprops={"arrowstyle": "->", "color": "tab:orange", "lw": 1.0})
        ax.scatter(ref_xy[:, 0], ref_xy[:, 1], s=25, facecolors="none", edgecolors="tab:orange",
                   label="reference electrode")
    for kind in dict.fromkeys(kinds):
        sel = np.array([k == kind for k in kinds])
        ax.scatter(xy[sel, 0], xy[sel, 1], s=40, c=colors[kind], edgecolors="k", lw=0.5, zorder=3,
                   label=kind)
    if show_names:
        for (x, y), name in zip(xy, montage.ch_names):
            ax.annotate(name, (x, y), xytext=(3, 3), textcoords="offset points", fontsize=7)
    ax.set_aspect("equal")
    lim = max(1.25 * r, float(np.abs(xy).max()) + 10 if len(xy) else 0)
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_axis_off()
    ax.set_title("top view (nose up, left ear left)", fontsize=9)
    ax.legend(loc="lower left", fontsize=7, frameon=False)

    # --- 3-D view (mm), with a translucent head sphere and the fiducial directions
    ax3 = fig.add_subplot(1, 2, 2, projection="3d")
    u, v = np.mgrid[0 : 2 * np.pi : 40j, -0.15 * np.pi : 0.5 * np.pi : 20j]
    ax3.plot_wireframe(r * np.cos(u) * np.cos(v), r * np.sin(u) * np.cos(v), r * np.sin(v),
                       color="0.85", lw=0.4)
    p = pos * 1000
    for kind in dict.fromkeys(kinds):
        sel = np.array([k == kind for k in kinds])
        ax3.scatter(p[sel, 0], p[sel, 1], p[sel, 2], s=30, c=colors[kind], edgecolors="k",
                    depthshade=False)
    if bipolar.any():
        rp = refs[bipolar] * 1000
        for a, b in zip(rp, p[bipolar]):
            ax3.plot([a[0], b[0]], [a[1], b[1]], [a[2], b[2]], color="tab:orange", lw=1.0)
        ax3.scatter(rp[:, 0], rp[:, 1], rp[:, 2], s=30, facecolors="none", edgecolors="tab:orange",
                    depthshade=False)
    if show_names:
        for (x, y, z), name in zip(p, montage.ch_names):
            ax3.text(x, y, z, f" {name}", fontsize=6)
    ax3.set_xlabel("x (mm, to RPA)", fontsize=8)
    ax3.set_ylabel("y (mm, to nasion)", fontsize=8)
    ax3.set_zlabel("z (mm, up)", fontsize=8)
    ax3.set_xlim(-r, r)
    ax3.set_ylim(-r, r)
    ax3.set_zlim(-0.5 * r, 1.5 * r)
    ax3.set_box_aspect((1, 1, 1))
    ax3.view_init(elev=20, azim=-120)
    ax3.set_title("3-D view, MNE head frame", fontsize=9)

    if out is not None:
        out = Path(out)
        if out.suffix.lower() not in _FORMATS:
            raise MontageError(f"cannot write a plot to '{out.name}'; use one of: {' '.join(_FORMATS)}")
        buf = io.BytesIO()
        fig.savefig(buf, format=out.suffix.lower().lstrip("."), bbox_inches="tight")
        with user_writable(out, "the plot", "choose a writable --out path"):
            atomic_write_bytes(out, buf.getvalue())
    return fig
