"""Where liblsl looks for streams: a configuration (``LSLAPICFG``) that keeps discovery on this machine.

By default liblsl finds streams by multicast and broadcast on the local network. A
configuration file named by the ``LSLAPICFG`` environment variable changes that; the one
:func:`write_machine_scope_config` writes sets ``[multicast] ResolveScope = machine``, turns
IPv6 off and lists 127.0.0.1 as the only known peer, so no discovery packet leaves the
loopback interface (the tests and benchmarks run under it). Users who stream from a device on
their network set their own scope there (``link``, ``site``; liblsl's documentation:
https://labstreaminglayer.readthedocs.io/info/lslapicfg.html). liblsl reads the file once,
when it is first used, so the variable must be set before the first stream is resolved.
"""

from __future__ import annotations

import configparser
import os
from pathlib import Path

#: The environment variable liblsl reads its configuration file's path from.
CONFIG_VARIABLE = "LSLAPICFG"

#: A liblsl configuration whose discovery stays on this machine (loopback only, IPv4).
MACHINE_SCOPE = """\
[ports]
IPv6 = disable

[multicast]
ResolveScope = machine
KnownPeers = {127.0.0.1}
"""


def write_machine_scope_config(path: str | Path) -> Path:
    """Return ``path`` after writing :data:`MACHINE_SCOPE` there (set ``LSLAPICFG`` to it before liblsl starts)."""
    from passport_kit.atomic_io import atomic_write_text

    return atomic_write_text(path, MACHINE_SCOPE)


def config_in_force() -> dict[str, dict[str, str]]:
    """Return the liblsl configuration ``LSLAPICFG`` names, as ``{section: {key: value}}`` (keys lower case).

    Empty when the variable is unset or names no file: liblsl then uses its defaults (or
    ``lsl_api.cfg`` in its own search path), which resolve streams on the local network.
    """
    name = os.environ.get(CONFIG_VARIABLE)
    if not name or not Path(name).is_file():
        return {}
    parser = configparser.ConfigParser()
    parser.read(name, encoding="utf-8")
    return {section: dict(parser[section]) for section in parser.sections()}


def machine_scoped(config: dict[str, dict[str, str]]) -> bool:
    """Return whether ``config`` (:func:`config_in_force`) keeps liblsl's discovery on this machine."""
    multicast, ports = config.get("multicast", {}), config.get("ports", {})
    return (multicast.get("resolvescope", "").strip().lower() == "machine"
            and ports.get("ipv6", "").strip().lower() in ("disable", "disabled", "false", "0")
            and multicast.get("knownpeers", "").strip().strip("{}").replace(" ", "") == "127.0.0.1")
