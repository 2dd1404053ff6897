"""How the built-in montages in ``montages/*.yaml`` were derived, as code that regenerates them.

Scalp channels take MNE's colin27_1005 template (``standard_1005`` before MNE 1.13) moved to the
MNE head frame. Ear channels follow the documented *proposal* of
``reference/montages.md`` §3.3-3.5: in-ear contacts are offsets from LPA/RPA (rule
``inear-v1``), cEEGrid contacts lie on an elliptical arc around the pinna projected onto the
template scalp (rule ``ceegrid-arc-v1``, table values). They are approximations, not measured
positions, and every YAML says so.

Regenerate the files (positions in mm, rounded to 0.1 mm, the content-hash resolution)::

    python -m passport_kit.montage.builtin_recipes montages/
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from passport_kit.atomic_io import atomic_write_text
from passport_kit.montage.mne_bridge import TEMPLATE, template_head_positions
from passport_kit.montage.schema import Channel, Montage

# --------------------------------------------------------------------- TUH
#: The 19 TUH 10-20 sites in TUH file order, as MNE names (TUH spells T7/T8/P7/P8 as T3-T6).
TUH_19 = ("Fp1", "Fp2", "F3", "F4", "C3", "C4", "P3", "P4", "O1", "O2",
          "F7", "F8", "T7", "T8", "P7", "P8", "Fz", "Cz", "Pz")
_TUH_OLD_NAMES = {"T7": "T3", "T8": "T4", "P7": "T5", "P8": "T6"}
TUH_SUBSETS = {
    # AASM PSG sites; the scalp channels of EESM17 (reference/montages.md §4.4, a proposal).
    "tuh-standard": ("F3", "F4", "C3", "C4", "O1", "O2"),
    # Hair-free forehead and anterior sites: a proxy for headband devices.
    "tuh-frontal": ("Fp1", "Fp2", "F7", "F8", "F3", "F4"),
    # The ear-adjacent lateral chain: the TUH-19 sites nearest to ear-EEG.
    "tuh-temporal": ("F7", "F8", "T7", "T8", "P7", "P8"),
}

# ------------------------------------------------------------------ in-ear
#: In-ear slots as (medial, anterior, superior) offsets in mm from LPA/RPA (rule inear-v1).
EAR_SLOTS: dict[str, tuple[float, float, float]] = {
    "CANAL_ANT": (6.0, 3.5, 0.0),
    "CANAL_SUP": (6.0, 0.0, 3.5),
    "CANAL_POST": (6.0, -3.5, 0.0),
    "CANAL_INF": (6.0, 0.0, -3.5),
    "CONCHA_UP": (-3.0, -8.0, 12.0),
    "CONCHA_LOW": (-3.0, -10.0, -2.0),
    "CONCHA_LOW2": (-3.0, -13.0, -2.0),
    "CONCHA_POST": (-5.0, -16.0, 5.0),
}
#: Aarhus electrode letter -> slot. Concha vs canal is a medium-confidence reconstruction.
EAR_LETTER_SLOT = {"A": "CONCHA_UP", "B": "CONCHA_LOW", "B1": "CONCHA_LOW2", "C": "CONCHA_POST",
                   "E": "CANAL_ANT", "G": "CANAL_SUP", "T": "CANAL_SUP", "I": "CANAL_POST",
                   "K": "CANAL_INF"}
EESM_LETTERS = {
    # ELB1/ERB1 were not used in EESM17 (dataset README), so they are left out.
    "eesm17-ear": ("A", "B", "E", "G", "I", "K"),
    "eesm19-ear": ("A", "B", "C", "T", "E", "I"),
}

# ------------------------------------------------------------------ cEEGrid
#: cEEGrid arc positions (m, head frame) from reference/montages.md §3.5, rule ceegrid-arc-v1:
#: ellipse centred at LPA/RPA + (y -8 mm, z +5 mm), semi-axes 24 mm (y) x 34 mm (z),
#: theta 60..300 degrees in 10 equal steps, x on a quadratic fit of that side's template scalp.
CEEGRID_ARC: dict[str, tuple[float, float, float]] = {
    "L1": (-0.0872, 0.0040, 0.0344), "L2": (-0.0857, -0.0066, 0.0389),
    "L3": (-0.0836, -0.0175, 0.0362), "L4": (-0.0814, -0.0264, 0.0268),
    "L4b": (-0.0805, -0.0314, 0.0128), "L4a": (-0.0816, -0.0314, -0.0028),
    "L5": (-0.0843, -0.0264, -0.0169), "L6": (-0.0877, -0.0175, -0.0262),
    "L7": (-0.0901, -0.0066, -0.0289), "L8": (-0.0908, 0.0040, -0.0244),
    "R1": (0.0842, 0.0040, 0.0344), "R2": (0.0826, -0.0066, 0.0389),
    "R3": (0.0803, -0.0175, 0.0362), "R4": (0.0782, -0.0264, 0.0268),
    "R4b": (0.0774, -0.0314, 0.0128), "R4a": (0.0784, -0.0314, -0.0028),
    "R5": (0.0808, -0.0264, -0.0169), "R6": (0.0835, -0.0175, -0.0262),
    "R7": (0.0854, -0.0066, -0.0289), "R8": (0.0861, 0.0040, -0.0244),
}
#: R4b is the usual reference and R4a the ground: they carry no signal.
CEEGRID_NO_SIGNAL = {"R4b": "reference", "R4a": "ground"}

MUSE = ("TP9", "AF7", "AF8", "TP10")

_EAR_CAVEAT = ("Ear positions are APPROXIMATIONS (a documented proposal, not measured): the "
               "electrode letters' anatomical meaning is unconfirmed; expect errors of up to about "
               "1 cm. Replace them with measured positions when you have them.")


def template_positions_sha256(ch_pos: dict[str, np.ndarray]) -> str:
    """Return the SHA-256 of a template's head-frame positions (sorted names, 0.1 mm), to pin it by content."""
    doc = {n: [round(float(v) * 1e4) for v in p] for n, p in sorted(ch_pos.items())}
    return hashlib.sha256(json.dumps(doc, separators=(",", ":")).encode()).hexdigest()


def _at_resolution(p: Any) -> tuple[float, float, float]:
    # Metres at the hash resolution, 0.1 mm, so the YAML holds exactly what gets hashed.
    return tuple(round(float(v), 4) + 0.0 for v in p)  # type: ignore[return-value]


def build_builtin_montages() -> list[Montage]:
    """Return the nine built-in montages, derived from the MNE template and the ear rules."""
    ch_pos, fids = template_head_positions(TEMPLATE)
    template_meta = {"template": TEMPLATE, "template_frame": "head",
                     "template_positions_sha256": template_positions_sha256(ch_pos)}
    out: list[Montage] = []

    def tuh_channel(n: str) -> Channel:
        upper = n.upper()
        aliases = [upper] if upper != n else []
        old = _TUH_OLD_NAMES.get(n)
        if old:
            aliases.append(old)
        tuh = old or upper
        aliases += [f"EEG {tuh}-REF", f"EEG {tuh}-LE"]
        return Channel(name=n, position=_at_resolution(ch_pos[n]), aliases=tuple(aliases))

    tuh_ref = "common recording reference (TUH '-REF' files; '-LE' files use linked ears)"
    tuh_note = ("Scalp positions: MNE colin27_1005 template (standard_1005 before MNE 1.13) in the "
                "MNE head frame, rounded to 0.1 mm. Aliases carry TUH spellings (FP1, T3-T6, "
                "'EEG X-REF', 'EEG X-LE') so TUH recordings map.")
    out.append(Montage(
        name="tuh-19",
        description="The 19 TUH 10-20 scalp sites in TUH file order. " + tuh_note,
        reference=tuh_ref, channels=tuple(tuh_channel(n) for n in TUH_19),
        metadata={**template_meta, "confidence": "template"}))
    why = {"tuh-standard": "AASM PSG sites (F3 F4 C3 C4 O1 O2), the scalp channels of EESM17",
           "tuh-frontal": "hair-free forehead and anterior sites, a proxy for headbands",
           "tuh-temporal": "the ear-adjacent lateral chain, nearest to ear-EEG"}
    for name, names in TUH_SUBSETS.items():
        out.append(Montage(
            name=name,
            description=f"6-electrode subset of tuh-19: {why[name]} (a proposal; the Device "
                        f"Passport paper does not list its electrodes). " + tuh_note,
            reference=tuh_ref, channels=tuple(tuh_channel(n) for n in names),
            metadata={**template_meta, "confidence": "template"}))

    lpa, rpa = fids["lpa"], fids["rpa"]

    def ear_channel(side: str, label: str, letter: str) -> tuple[Channel, str]:
        slot = EAR_LETTER_SLOT[letter]
        med, ant, sup = EAR_SLOTS[slot]
        anchor = lpa if side == "L" else rpa
        medial_sign = 1.0 if side == "L" else -1.0  # medial is +x on the left ear, -x on the right
        pos = anchor + np.array([medial_sign * med, ant, sup]) / 1000.0
        rule = f"{'LPA' if side == 'L' else 'RPA'} + {slot} (medial {med:+g}, anterior {ant:+g}, superior {sup:+g} mm)"
        return Channel(name=label, position=_at_resolution(pos)), rule

    ear_meta = {**template_meta,
                "anchors_m": {"LPA": [round(float(v), 5) + 0.0 for v in lpa],
                              "RPA": [round(float(v), 5) + 0.0 for v in rpa]},
                "rule": "inear-v1", "confidence": "proposed"}
    for name, letters in EESM_LETTERS.items():
        pairs = [ear_channel(side, f"E{side}{letter}", letter) for side in "LR" for letter in letters]
        dataset = {"eesm17-ear": "EESM17 (OpenNeuro ds004348; 6 usable contacts per ear, ELB1/ERB1 "
                                 "not used); recorded against Cz",
                   "eesm19-ear": "EESM19 (OpenNeuro ds005185; dry electrodes, TMSi Mobita)"}[name]
        out.append(Montage(
            name=name,
            description=f"Aarhus ear-EEG, {dataset}. Positions: offsets from the template LPA/RPA "
                        f"by rule inear-v1 (reference/montages.md §3.3). " + _EAR_CAVEAT,
            reference="Cz" if name == "eesm17-ear" else "recording reference (not documented in the release)",
            channels=tuple(c for c, _ in pairs),
            metadata={**ear_meta, "rules": {c.name: r for c, r in pairs}}))

    pairs = [ear_channel(label[0], label, letter)
             for label, letter in (("LB", "B"), ("LT", "T"), ("RB", "B"), ("RT", "T"))]
    out.append(Montage(
        name="eesm23-ear",
        description="Aarhus ear-EEG, EESM23 (OpenNeuro ds005178; 4 channels LB LT RB RT, 250 Hz). "
                    "Same letters as EESM17/19 without the E prefix; positions by rule inear-v1 "
                    "(reference/montages.md §3.3). " + _EAR_CAVEAT,
        reference="recording reference (not documented in the release)",
        channels=tuple(c for c, _ in pairs),
        metadata={**ear_meta, "rules": {c.name: r for c, r in pairs}}))

    def grid_channel(label: str) -> Channel:
        side, num = label[0], label[1:]
        aliases = []
        if num[-1] in "ab":
            aliases += [f"{side}{num.upper()}", f"{side}0{num}"]
        else:
            aliases.append(f"{side}0{num}")
        return Channel(name=label, position=_at_resolution(CEEGRID_ARC[label]), aliases=tuple(aliases))

    grid = [grid_channel(n) for n in CEEGRID_ARC if n not in CEEGRID_NO_SIGNAL]
    out.append(Montage(
        name="ceegrid",
        description="cEEGrid around-ear arrays (two C-shaped grids of 10 electrodes; R4b reference "
                    "and R4a ground carry no signal, leaving 18 channels, ordered along each arc). "
                    "Positions: rule ceegrid-arc-v1, an elliptical arc around LPA/RPA projected onto "
                    "the template scalp (reference/montages.md §3.4-3.5). " + _EAR_CAVEAT,
        reference="R4b",
        channels=tuple(grid),
        metadata={**template_meta, "rule": "ceegrid-arc-v1", "confidence": "proposed",
                  "non_signal_electrodes": {n: {"role": role, "position_m": list(_at_resolution(CEEGRID_ARC[n]))}
                                            for n, role in CEEGRID_NO_SIGNAL.items()}}))

    out.append(Montage(
        name="muse",
        description="InteraXon Muse headband: TP9 AF7 AF8 TP10 (Muse-LSL order), reference Fpz "
                    "(CMS/DRL). Positions: MNE colin27_1005 template in the head frame; on real "
                    "heads the forehead sensors sit between Fp1/Fp2 and AF7/AF8 with head size.",
        reference="Fpz",
        channels=tuple(Channel(name=n, position=_at_resolution(ch_pos[n])) for n in MUSE),
        metadata={**template_meta, "confidence": "template"}))
    return out


def write_builtin_yamls(folder: Path) -> list[Path]:
    """Write every built-in montage to ``folder/<name>.yaml`` in mm; return the paths."""
    header = ("# Built-in montage of passport-kit, generated by\n"
              "#   python -m passport_kit.montage.builtin_recipes montages/\n"
              "# Edit the recipe, not this file.\n")
    paths = []
    for m in build_builtin_montages():
        path = folder / f"{m.name}.yaml"
        atomic_write_text(path, header + m.to_yaml_str(units="mm"))
        paths.append(path)
    return paths


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "montages")
    for p in write_builtin_yamls(target):
        print(p)
