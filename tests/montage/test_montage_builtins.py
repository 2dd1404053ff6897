"""The nine built-in montages: present, valid, positions as documented, regenerable from the recipes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from passport_kit.montage import builtin_montage_dir, get_montage, list_montages
from passport_kit.montage.builtin_recipes import build_builtin_montages

REPO = Path(__file__).resolve().parents[2]

EXPECTED = {
    "tuh-19": 19, "tuh-standard": 6, "tuh-frontal": 6, "tuh-temporal": 6,
    "eesm17-ear": 12, "eesm19-ear": 12, "eesm23-ear": 4, "ceegrid": 18, "muse": 4,
}


def test_builtins_are_found_in_the_checkout() -> None:
    assert builtin_montage_dir() == REPO / "montages"


def test_all_nine_builtins_are_listed_with_their_sizes() -> None:
    rows = {r.name: r.n_channels for r in list_montages("builtin")}
    assert rows == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_builtin_description_says_how_positions_were_derived(name: str) -> None:
    description = get_montage(name).description
    assert "colin27_1005" in description or "inear-v1" in description or "ceegrid-arc-v1" in description


@pytest.mark.parametrize("name", ["eesm17-ear", "eesm19-ear", "eesm23-ear", "ceegrid"])
def test_ear_builtins_say_positions_are_approximations(name: str) -> None:
    m = get_montage(name)
    assert "APPROXIMATIONS" in m.description and m.metadata["confidence"] == "proposed"


# Head-frame values (m) from reference/montages.md §2.3, §3.2, §3.5 and §4.3.
@pytest.mark.parametrize("montage,channel,xyz", [
    ("tuh-19", "Fp1", (-0.0309, 0.1146, 0.0279)),
    ("tuh-19", "T7", (-0.0860, 0.0149, 0.0312)),
    ("tuh-19", "Pz", (-0.0017, -0.0452, 0.1267)),
    ("tuh-temporal", "P8", (0.0710, -0.0423, 0.0412)),
    ("muse", "TP9", (-0.0876, -0.0176, -0.0034)),
    ("muse", "AF8", (0.0542, 0.0998, 0.0249)),
    ("eesm17-ear", "ELK", (-0.0765, 0.0000, -0.0035)),
    ("eesm19-ear", "ELA", (-0.0855, -0.0080, 0.0120)),
    ("eesm19-ear", "ERC", (0.0875, -0.0160, 0.0050)),
    ("eesm23-ear", "RT", (0.0765, 0.0000, 0.0035)),
    ("ceegrid", "L4a", (-0.0816, -0.0314, -0.0028)),
    ("ceegrid", "R8", (0.0861, 0.0040, -0.0244)),
])
def test_builtin_positions_match_the_reference_table(montage: str, channel: str, xyz: tuple) -> None:
    np.testing.assert_allclose(get_montage(montage).channel(channel).position, xyz, atol=1.01e-4)


@pytest.mark.parametrize("alias,name", [("FP1", "Fp1"), ("T3", "T7"), ("T6", "P8"), ("EEG T5-REF", "P7"),
                                        ("EEG CZ-LE", "Cz"), ("EEG FZ-REF", "Fz")])
def test_tuh_aliases_map_tuh_names(alias: str, name: str) -> None:
    assert get_montage("tuh-19").channel(alias).name == name


def test_tuh_subsets_are_drawn_from_tuh_19() -> None:
    full = get_montage("tuh-19")
    for name in ("tuh-standard", "tuh-frontal", "tuh-temporal"):
        sub = get_montage(name)
        assert sub.positions.tolist() == full.subset(sub.ch_names).positions.tolist()


def test_eesm17_leaves_out_the_unused_b1_contacts() -> None:
    assert not {"ELB1", "ERB1"} & set(get_montage("eesm17-ear").ch_names)


def test_ceegrid_keeps_reference_and_ground_out_of_the_channels() -> None:
    m = get_montage("ceegrid")
    assert m.reference == "R4b" and not {"R4a", "R4b"} & set(m.ch_names)
    assert set(m.metadata["non_signal_electrodes"]) == {"R4a", "R4b"}


def test_ceegrid_accepts_surrey_spellings() -> None:
    assert get_montage("ceegrid").channel("L4A").name == "L4a"


def test_ear_contacts_within_one_ear_never_coincide() -> None:
    for name in ("eesm17-ear", "eesm19-ear", "ceegrid"):
        pos = get_montage(name).positions
        d = np.linalg.norm(pos[:, None] - pos[None], axis=-1) + np.eye(len(pos))
        assert d.min() > 0.0029, name


def test_builtin_files_are_what_the_recipes_generate() -> None:
    for m in build_builtin_montages():
        stored = get_montage(m.name)
        assert stored.content_hash == m.content_hash, m.name
        assert [c.aliases for c in stored.channels] == [c.aliases for c in m.channels]
