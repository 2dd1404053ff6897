"""liblsl stays on this machine in the tests: the configuration in force resolves streams on the machine only."""

from __future__ import annotations

from pathlib import Path

import pytest

from passport_kit.live.lsl_scope import MACHINE_SCOPE, config_in_force, machine_scoped, write_machine_scope_config


def test_the_tests_run_liblsl_with_a_machine_scope() -> None:
    config = config_in_force()  # the file LSLAPICFG names (set by conftest before liblsl is first used)
    assert config["multicast"]["resolvescope"] == "machine"
    assert config["ports"]["ipv6"] == "disable" and config["multicast"]["knownpeers"] == "{127.0.0.1}"
    assert machine_scoped(config)


def test_liblsl_read_that_configuration(lsl: None) -> None:
    import os

    from mne_lsl.lsl import library_version

    assert library_version() >= 114  # a liblsl that reads LSLAPICFG (1.14+)
    assert Path(os.environ["LSLAPICFG"]).read_text(encoding="utf-8") == MACHINE_SCOPE


@pytest.mark.parametrize(("text", "scoped"), [
    (MACHINE_SCOPE, True),
    (MACHINE_SCOPE.replace("ResolveScope = machine", "ResolveScope = site"), False),
    (MACHINE_SCOPE.replace("IPv6 = disable", "IPv6 = allow"), False),
    ("[multicast]\nResolveScope = machine\n", False),
    ("", False),
])
def test_machine_scoped_reads_the_scope_ipv6_and_peers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str,
                                                        scoped: bool) -> None:
    path = tmp_path / "lsl_api.cfg"
    path.write_text(text)
    monkeypatch.setenv("LSLAPICFG", str(path))
    assert machine_scoped(config_in_force()) is scoped


def test_no_configuration_is_not_machine_scoped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LSLAPICFG", raising=False)
    assert config_in_force() == {} and not machine_scoped({})


def test_write_machine_scope_config(tmp_path: Path) -> None:
    assert write_machine_scope_config(tmp_path / "a.cfg").read_text(encoding="utf-8") == MACHINE_SCOPE
