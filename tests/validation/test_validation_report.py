"""The whole validation report on simulated nights whose device error is known by construction (issues 44, 56)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from passport_kit.validation import Night, epoch_grid, method_report, write_validation

CLASSES = ["W", "N1", "N2", "N3", "REM"]
W, N1, N2, N3, REM = range(5)


def scored_night(seed: int, hours: float = 3.0) -> np.ndarray:
    """Return a scorer's night: 15-20 min awake, then sleep cycles of N1, N2, N3, N2, REM, a wake epoch between."""
    rng = np.random.default_rng(seed)
    epochs = int(hours * 120)
    stages = [W] * int(rng.integers(30, 41))
    while len(stages) < epochs:
        for stage, low, high in ((N1, 4, 10), (N2, 30, 50), (N3, 10, 30), (N2, 10, 20), (REM, 10, 30), (W, 1, 3)):
            stages += [stage] * int(rng.integers(low, high))
    return np.array(stages[:epochs])


def wake_instead_of_sleep(reference: np.ndarray, minutes: float) -> np.ndarray:
    """Return a device that stages ``minutes`` of N2 in mid-night as wake, and every other epoch as the scorer."""
    device = reference.copy()
    n2 = np.flatnonzero(reference == N2)
    device[n2[len(n2) // 2: len(n2) // 2 + int(minutes * 2)]] = W
    return device


@pytest.fixture
def nights() -> list[Night]:
    return [Night(name=f"night{i}", reference=(r := scored_night(i)), device=wake_instead_of_sleep(r, 10))
            for i in range(6)]


def test_ten_minutes_of_sleep_called_wake_is_a_tst_bias_of_minus_ten(nights: list[Night]) -> None:
    report = method_report("device", nights, CLASSES)
    d = report["discrepancy"]
    assert d["TST"]["n"] == 6 and d["TST"]["bias"] == pytest.approx(-10.0)
    assert d["TST"]["bias_ci"] == pytest.approx([-10.0, -10.0]) and d["TST"]["loa"]["lower"] == pytest.approx(-10.0)
    assert d["WASO"]["bias"] == pytest.approx(10.0) and d["W_min"]["bias"] == pytest.approx(10.0)
    assert d["N2_min"]["bias"] == pytest.approx(-10.0)
    assert d["SOL"]["bias"] == 0.0 and d["N3_min"]["bias"] == 0.0 and d["REM_latency"]["bias"] == 0.0
    # SE = 100 · TST / TIB: 10 min of a 180-min night is 5.56 percentage points.
    assert d["SE"]["bias"] == pytest.approx(-100 * 10 / 180)


def test_the_epoch_numbers_see_where_the_device_errs(nights: list[Night]) -> None:
    report = method_report("device", nights, CLASSES)
    pooled = report["pooled"]
    # Every scorer's wake epoch is device wake (sensitivity 1); 20 of the device's wake epochs per night are N2.
    assert pooled["stages"]["W"]["sensitivity"] == 1.0 and pooled["stages"]["W"]["ppv"] < 1.0
    assert pooled["stages"]["N3"] == pytest.approx({k: 1.0 for k in pooled["stages"]["N3"]})
    assert pooled["confusion"][N2][W] == 6 * 20 and pooled["accuracy"] == pytest.approx(1 - 120 / (6 * 360))
    kappa = report["per_night_spread"]["kappa"]
    assert kappa["n"] == 6 and 0.8 < kappa["min"] <= kappa["mean"] <= kappa["max"] < 1.0


def test_a_late_sleep_onset_moves_sol_and_tst_by_the_same_minutes() -> None:
    nights = []
    for i in range(4):
        reference = scored_night(10 + i)
        device = reference.copy()
        onset = int(np.argmax(reference != W))
        device[onset: onset + 10] = W  # five minutes more awake before sleep
        nights.append(Night(name=f"n{i}", reference=reference, device=device))
    d = method_report("late", nights, CLASSES)["discrepancy"]
    assert d["SOL"]["bias"] == pytest.approx(5.0) and d["TST"]["bias"] == pytest.approx(-5.0)
    assert d["WASO"]["bias"] == 0.0


def test_a_short_record_keeps_its_stage_minutes_and_withholds_the_whole_night_measures(nights: list[Night]) -> None:
    short = Night(name="nap", reference=(r := scored_night(9, hours=1.5)), device=wake_instead_of_sleep(r, 5))
    report = method_report("device", [*nights, short], CLASSES)
    nap = report["nights"][-1]
    assert nap["epoch_by_epoch"]["kappa"] < 1.0 and "TST" not in nap["discrepancy"]
    assert nap["discrepancy"]["N2_min"]["difference"] == pytest.approx(-5.0)  # Menghini: stage minutes on any record
    assert "90 min" in nap["discrepancy_withheld"] and "2 h" in nap["discrepancy_withheld"]
    assert report["discrepancy"]["TST"]["n"] == 6 and report["discrepancy"]["N2_min"]["n"] == 7


def test_too_few_long_nights_withhold_the_group_with_the_reason(nights: list[Night]) -> None:
    report = method_report("device", nights[:2], CLASSES)
    tst = report["discrepancy"]["TST"]
    assert tst["n"] == 2 and "bias" not in tst and "needs 3" in tst["withheld"]


def test_a_night_without_rem_has_no_rem_latency_on_either_side(nights: list[Night]) -> None:
    reference = scored_night(20)
    reference[reference == REM] = N2
    report = method_report("device", [*nights, Night(name="no-rem", reference=reference, device=reference)], CLASSES)
    assert report["nights"][-1]["discrepancy"]["REM_latency"]["difference"] is None
    assert report["discrepancy"]["REM_latency"]["n"] == 6 and report["discrepancy"]["TST"]["n"] == 7


def test_epochs_the_scorer_left_unscored_are_unscored_on_both_sides() -> None:
    reference = scored_night(3)
    device = reference.copy()
    reference[200:220] = -1  # 10 min the scorer did not score: the device's stages there do not count
    device[200:220] = W
    nights = [Night(name=f"n{i}", reference=reference, device=device) for i in range(3)]
    report = method_report("device", nights, CLASSES)
    assert report["discrepancy"]["TST"]["bias"] == 0.0 and report["pooled"]["accuracy"] == 1.0


def test_a_night_whose_stagings_differ_in_length_is_refused() -> None:
    with pytest.raises(ValueError, match="one epoch grid"):
        Night(name="n", reference=np.zeros(10, int), device=np.zeros(9, int))


def test_epoch_grid_puts_dropped_windows_back_as_gaps() -> None:
    grid = epoch_grid(np.array([30.0, 60.0, 150.0]), np.array([1, 2, 4]), 30.0)
    assert grid.tolist() == [1, 2, -1, -1, 4]


def test_the_files_carry_the_same_numbers_and_the_page_opens_offline(nights: list[Night], tmp_path: Path) -> None:
    reports = [method_report("my device", nights, CLASSES),
               method_report("scorer again", [Night(name=n.name, reference=n.reference, device=n.reference)
                                              for n in nights], CLASSES)]
    files = write_validation(tmp_path / "v", reports, context="six simulated nights")
    group = {(r["method"], r["measure"]): r for r in csv.DictReader(files["validation_discrepancy"].open())}
    assert float(group[("my device", "TST")]["bias"]) == pytest.approx(-10.0)
    assert float(group[("scorer again", "TST")]["bias"]) == 0.0
    epochs = {(r["method"], r["night"]): r for r in csv.DictReader(files["validation_epochs"].open())}
    assert float(epochs[("scorer again", "pooled")]["kappa"]) == 1.0
    data = json.loads(files["validation_json"].read_text())
    assert data["methods"][0]["discrepancy"]["TST"]["bias"] == pytest.approx(-10.0) and "Menghini" in data["framework"]
    assert files["bland_altman_my-device"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = files["validation_html"].read_text()
    # An error matrix and a Bland–Altman figure per method, and a hypnogram per night.
    assert page.count("data:image/png;base64,") == 2 * 2 + len(nights)
    assert files["hypnogram_night0"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not re.search(r"""(src|href)=["'](?!data:|#)""", page) and "<script" not in page
    assert "six simulated nights" in page and "PABAK" in page
    # The page opens with the methods side by side (before any method's own section), measures named in words.
    first_table = page.index("<table>")
    assert page.index("Methods side by side") < first_table < page.index('id="m0"')
    assert "scorer again" in page[first_table:page.index("</table>")]
    assert "Total sleep time (TST, min)" in page and "REM_latency" not in page and "W_min" not in page
    methods = list(csv.DictReader(files["validation_methods"].open()))
    assert [m["method"] for m in methods] == ["my device", "scorer again"]
    assert float(methods[0]["tst_bias"]) == pytest.approx(-10.0)


def test_icc_and_mdc_per_measure_with_cis(nights: list[Night]) -> None:
    rng = np.random.default_rng(5)
    noisy = [Night(name=n.name, reference=n.reference,
                   device=wake_instead_of_sleep(n.reference, float(rng.integers(0, 30)))) for n in nights]
    d = method_report("device", noisy, CLASSES)["discrepancy"]
    for measure in ("TST", "WASO", "N2_min"):
        g = d[measure]
        assert g["icc_ci"][0] < g["icc"] < g["icc_ci"][1] and g["mdc_ci"][0] < g["mdc"] < g["mdc_ci"][1]


def test_subgroups_from_a_dataset_column(nights: list[Night]) -> None:
    grouped = [Night(name=n.name, reference=n.reference, device=n.device, groups={"sex": "F" if i % 2 else "M"})
               for i, n in enumerate(nights)]
    report = method_report("device", grouped, CLASSES)
    sex = report["subgroups"]["sex"]
    assert set(sex) == {"F", "M"} and sex["F"]["nights"] == 3 and sex["F"]["TST"]["bias"] == pytest.approx(-10.0)
    assert method_report("device", nights, CLASSES)["subgroups"] == {}
