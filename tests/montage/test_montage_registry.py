"""User registry: store, find, list, remove; never shadow a built-in; safe under concurrency."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from passport_kit.errors import MontageError
from passport_kit.montage import (
    Montage,
    get_montage,
    list_montages,
    register_montage,
    remove_montage,
    resolve_montage,
    user_montage_dir,
)

PASSPORT_KIT = Path(sys.executable).with_name("passport-kit")


def test_registry_lives_under_passport_kit_home(_isolated_home: Path, ear_dict: dict[str, Any]) -> None:
    path = register_montage(Montage.from_dict(ear_dict))
    assert path == _isolated_home / "montages" / "my-ear.yaml"


def test_default_home_is_the_platformdirs_user_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.delenv("PASSPORT_KIT_HOME")
    assert user_montage_dir() == Path(platformdirs.user_data_dir("passport-kit", appauthor=False)) / "montages"


def test_registered_montage_comes_back_identical(ear_dict: dict[str, Any]) -> None:
    m = Montage.from_dict(ear_dict)
    register_montage(m)
    back = get_montage("my-ear")
    assert back.content_hash == m.content_hash and back.channels == m.channels


def test_register_accepts_a_yaml_path(ear_yaml: Path) -> None:
    register_montage(ear_yaml)
    assert get_montage("my-ear").n_channels == 4


def test_lookup_is_case_insensitive(ear_dict: dict[str, Any]) -> None:
    register_montage(Montage.from_dict(ear_dict))
    assert get_montage("MY-EAR").name == "my-ear"
    assert get_montage("TUH-19").name == "tuh-19"


def test_list_has_builtins_first_then_user(ear_dict: dict[str, Any]) -> None:
    register_montage(Montage.from_dict(ear_dict))
    rows = list_montages()
    assert [r.source for r in rows][-1] == "user" and rows[-1].name == "my-ear"
    assert {r.name for r in rows if r.source == "builtin"} >= {"tuh-19", "ceegrid"}
    assert rows[-1].n_channels == 4


def test_force_replaces_a_user_montage(ear_dict: dict[str, Any]) -> None:
    register_montage(Montage.from_dict(ear_dict))
    register_montage(Montage.from_dict({**ear_dict, "description": "v2"}), force=True)
    assert get_montage("my-ear").description == "v2"


def test_without_force_the_old_montage_stays(ear_dict: dict[str, Any]) -> None:
    register_montage(Montage.from_dict(ear_dict))
    with pytest.raises(MontageError, match="already registered"):
        register_montage(Montage.from_dict({**ear_dict, "description": "v2"}))
    assert get_montage("my-ear").description == ear_dict["description"]


def test_builtin_cannot_be_shadowed_even_with_force(ear_dict: dict[str, Any]) -> None:
    with pytest.raises(MontageError, match="is a built-in"):
        register_montage(Montage.from_dict({**ear_dict, "name": "muse"}), force=True)
    assert not (user_montage_dir() / "muse.yaml").exists()
    assert get_montage("muse").ch_names == ["TP9", "AF7", "AF8", "TP10"]


def test_a_user_file_with_a_builtin_name_is_ignored(ear_dict: dict[str, Any]) -> None:
    # Someone copies a file by hand: the built-in still wins, so nothing is shadowed silently.
    m = Montage.from_dict({**ear_dict, "name": "muse"})
    m.to_yaml(user_montage_dir() / "muse.yaml")
    assert get_montage("muse").n_channels == 4 and get_montage("muse").ch_names[0] == "TP9"


def test_remove_deletes_only_that_montage(ear_dict: dict[str, Any]) -> None:
    register_montage(Montage.from_dict(ear_dict))
    register_montage(Montage.from_dict({**ear_dict, "name": "other-ear"}))
    remove_montage("my-ear")
    assert [r.name for r in list_montages("user")] == ["other-ear"]


def test_writes_leave_no_temp_files(ear_dict: dict[str, Any]) -> None:
    register_montage(Montage.from_dict(ear_dict))
    register_montage(Montage.from_dict(ear_dict), force=True)
    assert sorted(p.name for p in user_montage_dir().iterdir()) == [".registry.lock", "my-ear.yaml"]


def test_resolve_accepts_a_name_or_a_yaml_path(ear_yaml: Path) -> None:
    assert resolve_montage(ear_yaml).name == "my-ear"
    assert resolve_montage(str(ear_yaml)).name == "my-ear"
    assert resolve_montage("tuh-19").n_channels == 19


def test_resolve_passes_a_montage_through(ear_dict: dict[str, Any]) -> None:
    m = Montage.from_dict(ear_dict)
    assert resolve_montage(m) is m


def test_a_hand_edited_broken_registry_file_is_reported(ear_dict: dict[str, Any]) -> None:
    register_montage(Montage.from_dict(ear_dict))
    (user_montage_dir() / "my-ear.yaml").write_text("name: [\n")
    with pytest.raises(MontageError, match="is not valid YAML"):
        get_montage("my-ear")


def test_eight_parallel_register_montage_processes_all_land(
    ear_dict: dict[str, Any], tmp_path: Path, _isolated_home: Path,
) -> None:
    files = []
    for i in range(8):
        m = Montage.from_dict({**ear_dict, "name": f"ear-{i}"})
        files.append(m.to_yaml(tmp_path / f"ear-{i}.yaml", units="mm"))
    env = {"PASSPORT_KIT_HOME": str(_isolated_home), "PATH": "/usr/bin:/bin"}
    procs = [subprocess.Popen([str(PASSPORT_KIT), "register-montage", str(f)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for f in files]
    results = [(p.wait(timeout=120), p.stderr.read().decode()) for p in procs]  # type: ignore[union-attr]
    assert all(rc == 0 for rc, _ in results), results
    assert sorted(r.name for r in list_montages("user")) == [f"ear-{i}" for i in range(8)]
    for i in range(8):
        assert get_montage(f"ear-{i}").n_channels == 4


def _register_same_name(args: tuple[dict[str, Any], int]) -> str:
    data, i = args
    try:
        register_montage(Montage.from_dict({**data, "description": f"writer {i}"}))
        return "ok"
    except MontageError as exc:
        return str(exc)


def test_racing_registrations_of_one_name_let_exactly_one_win(ear_dict: dict[str, Any]) -> None:
    import multiprocessing as mp

    with mp.get_context("fork").Pool(6) as pool:
        outcomes = pool.map(_register_same_name, [(ear_dict, i) for i in range(6)])
    assert outcomes.count("ok") == 1, outcomes
    assert all("already registered" in o for o in outcomes if o != "ok")
    assert get_montage("my-ear").description.startswith("writer ")


def test_registering_the_same_montage_again_is_a_no_op(ear_dict: dict[str, Any]) -> None:
    # The README's Python snippet after the tour's register-montage: re-running must not fail.
    first = register_montage(Montage.from_dict(ear_dict))
    before = first.read_bytes()
    assert register_montage(Montage.from_dict(ear_dict)) == first and first.read_bytes() == before
