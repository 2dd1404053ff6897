"""Import from an MNE template, from files read_custom_montage reads, and from BIDS electrodes.tsv."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from passport_kit.errors import MontageError
from passport_kit.montage import get_montage
from passport_kit.montage.importers import import_montage
from passport_kit.montage.mne_bridge import make_template

STANDARD = ["F3", "F4", "C3", "C4", "O1", "O2"]


@pytest.fixture
def standard_mm() -> dict[str, np.ndarray]:
    """Return tuh-standard head-frame positions in mm."""
    m = get_montage("tuh-standard")
    return {n: p * 1000 for n, p in zip(m.ch_names, m.positions)}


def _assert_matches_tuh_standard(positions: np.ndarray, atol_m: float = 1e-9) -> None:
    np.testing.assert_allclose(positions, get_montage("tuh-standard").positions, atol=atol_m)


def test_template_with_channel_list() -> None:
    result = import_montage("colin27_1005", name="cap", channels=["F3,F4", "C3", "C4,O1,O2"])
    assert result.montage.ch_names == STANDARD
    _assert_matches_tuh_standard(result.montage.positions, atol_m=6e-5)


def test_template_without_channel_list_takes_all() -> None:
    assert import_montage("biosemi32", name="bs").montage.n_channels == 32


def test_template_with_unknown_channel_is_an_error() -> None:
    with pytest.raises(MontageError, match="channel\\(s\\) Q9 not found"):
        import_montage("colin27_1005", name="cap", channels=["Q9"])


def test_unknown_source_lists_templates() -> None:
    with pytest.raises(MontageError, match="neither an existing file nor an MNE template; .* colin27_1005"):
        import_montage("no-such-thing", name="x")


def _write_csv(path: Path, positions: dict[str, np.ndarray], sep: str = ",") -> Path:
    lines = [sep.join(["name", "x", "y", "z"])]
    lines += [sep.join([n, *(f"{v:.6f}" for v in p)]) for n, p in positions.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_custom_csv_in_mm_needs_units(tmp_path: Path, standard_mm: dict[str, np.ndarray]) -> None:
    path = _write_csv(tmp_path / "cap.csv", standard_mm)
    with pytest.raises(MontageError, match="look like millimetres: set `units: mm` \\(or --units mm when importing\\)"):
        import_montage(path, name="cap")


def test_custom_csv_with_units(tmp_path: Path, standard_mm: dict[str, np.ndarray]) -> None:
    path = _write_csv(tmp_path / "cap.csv", standard_mm)
    _assert_matches_tuh_standard(import_montage(path, name="cap", units="mm").montage.positions)


def test_custom_elc_uses_its_own_unit_line(tmp_path: Path, standard_mm: dict[str, np.ndarray]) -> None:
    body = ["# ASA electrode file", "ReferenceLabel\tavg", "UnitPosition\tmm",
            f"NumberPositions=\t{len(standard_mm)}", "Positions"]
    body += [" ".join(f"{v:.6f}" for v in p) for p in standard_mm.values()]
    body += ["Labels", *standard_mm]
    path = tmp_path / "cap.elc"
    path.write_text("\n".join(body) + "\n")
    _assert_matches_tuh_standard(import_montage(path, name="cap").montage.positions)


def test_units_are_refused_for_formats_with_their_own_units(tmp_path: Path) -> None:
    path = tmp_path / "cap.elc"
    path.write_text("x\n")
    with pytest.raises(MontageError, match="--units applies to .csv .tsv .xyz .sfp files only"):
        import_montage(path, name="cap", units="mm")


def test_custom_loc_file_is_placed_on_the_head_sphere(tmp_path: Path) -> None:
    path = tmp_path / "cap.loc"
    path.write_text("1\t-18\t0.511\tFp1\n2\t18\t0.511\tFp2\n3\t0\t0\tCz\n")
    m = import_montage(path, name="cap", channels=["Cz", "Fp1"]).montage
    assert m.ch_names == ["Cz", "Fp1"]
    assert np.linalg.norm(m.positions, axis=1) == pytest.approx([0.095, 0.095], abs=1e-3)


def test_unreadable_custom_file_is_a_montage_error(tmp_path: Path) -> None:
    path = tmp_path / "cap.elc"
    path.write_text("garbage\n")
    with pytest.raises(MontageError, match="MNE could not read"):
        import_montage(path, name="cap")


def test_unsupported_extension(tmp_path: Path) -> None:
    path = tmp_path / "cap.docx"
    path.write_text("x")
    with pytest.raises(MontageError, match="extension '.docx', which MNE cannot read"):
        import_montage(path, name="cap")


# ----------------------------------------------------------------------------- BIDS
def _bids(tmp_path: Path, positions: dict[str, np.ndarray], coordsystem: dict, extra_rows: str = "") -> Path:
    tsv = tmp_path / "sub-01_electrodes.tsv"
    rows = ["name\tx\ty\tz\timpedance"]
    rows += [f"{n}\t{p[0]:.6f}\t{p[1]:.6f}\t{p[2]:.6f}\t5" for n, p in positions.items()]
    tsv.write_text("\n".join(rows) + "\n" + extra_rows)
    (tmp_path / "sub-01_coordsystem.json").write_text(json.dumps(coordsystem))
    return tsv


def test_bids_captrak_in_mm(tmp_path: Path, standard_mm: dict[str, np.ndarray]) -> None:
    tsv = _bids(tmp_path, standard_mm, {"EEGCoordinateSystem": "CapTrak", "EEGCoordinateUnits": "mm"})
    _assert_matches_tuh_standard(import_montage(tsv, name="cap").montage.positions)


def test_bids_rows_with_na_are_dropped_and_reported(tmp_path: Path, standard_mm: dict[str, np.ndarray]) -> None:
    tsv = _bids(tmp_path, standard_mm, {"EEGCoordinateSystem": "CapTrak", "EEGCoordinateUnits": "mm"},
                extra_rows="GND\tn/a\tn/a\tn/a\tn/a\n")
    result = import_montage(tsv, name="cap")
    assert result.dropped == ["GND"] and result.montage.ch_names == STANDARD
    assert any("GND" in n for n in result.notes)


def test_bids_eeglab_als_axes_are_turned_to_ras(tmp_path: Path, standard_mm: dict[str, np.ndarray]) -> None:
    als = {n: np.array([p[1], -p[0], p[2]]) / 1000 for n, p in standard_mm.items()}
    tsv = _bids(tmp_path, als, {"EEGCoordinateSystem": "EEGLAB", "EEGCoordinateUnits": "m"})
    _assert_matches_tuh_standard(import_montage(tsv, name="cap").montage.positions, atol_m=1e-8)


def _native_template_mm() -> tuple[dict[str, np.ndarray], dict[str, list[float]]]:
    pos = make_template("colin27_1005").get_positions()
    ch = {n: pos["ch_pos"][n] * 1000 for n in STANDARD}
    marks = {k: [float(v) * 1000 for v in pos[f]] for k, f in (("NAS", "nasion"), ("LPA", "lpa"), ("RPA", "rpa"))}
    return ch, marks


def test_bids_landmarks_define_the_head_frame(tmp_path: Path) -> None:
    ch, marks = _native_template_mm()
    tsv = _bids(tmp_path, ch, {"EEGCoordinateSystem": "Other", "EEGCoordinateUnits": "mm",
                               "EEGCoordinateSystemDescription": "scanner", "AnatomicalLandmarkCoordinates": marks})
    _assert_matches_tuh_standard(import_montage(tsv, name="cap").montage.positions, atol_m=6e-5)


def test_bids_mni_space_goes_through_mne_mni_fiducials(tmp_path: Path) -> None:
    ch, _ = _native_template_mm()
    tsv = _bids(tmp_path, ch, {"EEGCoordinateSystem": "MNIColin27", "EEGCoordinateUnits": "mm"})
    _assert_matches_tuh_standard(import_montage(tsv, name="cap").montage.positions, atol_m=6e-5)


def test_bids_other_without_landmarks_is_an_error(tmp_path: Path, standard_mm: dict[str, np.ndarray]) -> None:
    tsv = _bids(tmp_path, standard_mm, {"EEGCoordinateSystem": "Other", "EEGCoordinateUnits": "mm"})
    with pytest.raises(MontageError, match="cannot place coordinate system 'Other' .* add AnatomicalLandmarkCoordinates"):
        import_montage(tsv, name="cap")


def test_bids_unknown_units_are_an_error(tmp_path: Path, standard_mm: dict[str, np.ndarray]) -> None:
    tsv = _bids(tmp_path, standard_mm, {"EEGCoordinateSystem": "CapTrak", "EEGCoordinateUnits": "n/a"})
    with pytest.raises(MontageError, match="EEGCoordinateUnits 'n/a'; set it to m, cm or mm \\(or pass --units\\)"):
        import_montage(tsv, name="cap")


def test_bids_without_coordsystem_is_an_error(tmp_path: Path, standard_mm: dict[str, np.ndarray]) -> None:
    tsv = _bids(tmp_path, standard_mm, {})
    (tmp_path / "sub-01_coordsystem.json").unlink()
    with pytest.raises(MontageError, match="no coordsystem.json found next to 'sub-01_electrodes.tsv'"):
        import_montage(tsv, name="cap")


def test_bids_non_numeric_coordinate_is_an_error(tmp_path: Path, standard_mm: dict[str, np.ndarray]) -> None:
    tsv = _bids(tmp_path, standard_mm, {"EEGCoordinateSystem": "CapTrak", "EEGCoordinateUnits": "mm"},
                extra_rows="X1\tabc\t1\t1\t5\n")
    with pytest.raises(MontageError, match="electrode 'X1' has a non-numeric coordinate"):
        import_montage(tsv, name="cap")


def _write_sfp(path: Path, positions: dict[str, np.ndarray]) -> Path:
    path.write_text("".join(f"{n}\t{p[0]:.6f}\t{p[1]:.6f}\t{p[2]:.6f}\n" for n, p in positions.items()))
    return path


def test_sfp_keeps_measured_coordinates_by_default(tmp_path: Path, standard_mm: dict[str, np.ndarray]) -> None:
    path = _write_sfp(tmp_path / "cap.sfp", standard_mm)
    _assert_matches_tuh_standard(import_montage(path, name="cap", units="mm").montage.positions)


def test_head_size_rescales_like_mne(tmp_path: Path, standard_mm: dict[str, np.ndarray]) -> None:
    path = _write_sfp(tmp_path / "cap.sfp", standard_mm)
    m = import_montage(path, name="cap", head_size=0.09).montage
    assert np.median(np.linalg.norm(m.positions, axis=1)) == pytest.approx(0.09)


@pytest.mark.parametrize("ext,kwargs,message", [
    (".csv", {"head_size": 0.09}, "--head-size does not apply to '.csv' files"),
    (".sfp", {"head_size": 0.09, "units": "mm"}, "give either --units .* or --head-size"),
    (".sfp", {"head_size": 95.0}, "--head-size 95.0 is not a head radius in metres"),
])
def test_bad_head_size_use_is_an_error(tmp_path: Path, standard_mm: dict[str, np.ndarray], ext: str,
                                       kwargs: dict, message: str) -> None:
    path = _write_sfp(tmp_path / f"cap{ext}", standard_mm)
    with pytest.raises(MontageError, match=message):
        import_montage(path, name="cap", **kwargs)
