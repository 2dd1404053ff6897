"""What licences a base checkpoint and an adapter bundle carry, in one line each (issue 58 item 6).

passport-kit's code is MIT (``LICENSE``, pyproject's ``license``). What a model *contains* can
carry other terms: a base checkpoint's weights (an imported CBraMod release; weights trained on
data under attribution or non-commercial licences: its ``config.json`` ``licence``), and the
sleep stager a bundle's read-out stacks, which predict runs again on every night (YASA is
BSD-3-Clause; GSSC, an optional plugin and never a dependency, is AGPL-3.0). ``adapt`` records
them in the bundle's ``adapter.json`` (``licences``) and prints them; ``checkpoints show``
prints a base's.
"""

from __future__ import annotations

from typing import Any

#: passport-kit's own licence (LICENSE; pyproject.toml's ``license``).
PACKAGE_LICENCE = "MIT"
#: What a base checkpoint without a ``licence`` in its config.json (written before issue 58) says.
NOT_STATED = "not stated in its config.json (written before licences were recorded); see its MODEL_CARD.md"
#: Licence words that bind what is distributed with the component (copyleft): ``adapt`` says so in a note.
COPYLEFT = ("AGPL", "GPL", "LGPL")


def stager_licences(prior: dict[str, Any] | None) -> dict[str, str]:
    """Return ``{'sleep stager NAME': licence}`` of the stager(s) a read-out's ``prior`` settings name (``yasa``,
    ``yasa+gssc``; None: none)."""
    if not prior or not prior.get("name"):
        return {}
    from passport_kit.sleep.priors import ENSEMBLE_SEPARATOR, PRIORS, available_priors

    available_priors()  # registers the built-in stagers (a name it does not know: a plugin not installed here)
    out = {}
    for name in str(prior["name"]).split(ENSEMBLE_SEPARATOR):
        licence = getattr(PRIORS.get(name), "licence", "")
        out[f"sleep stager {name}"] = licence or "unknown here: see the stager's own package"
    return out


def bundle_licences(base_name: str, base_licence: str | None, prior: dict[str, Any] | None) -> dict[str, str]:
    """Return the licences of what an adapter bundle contains or needs to predict: passport-kit's (its adapter
    tensors, written by this code), its base checkpoint's, and the sleep stager its read-out stacks."""
    return {"passport-kit (code and the adapter's own tensors)": PACKAGE_LICENCE,
            f"base checkpoint {base_name}": base_licence or NOT_STATED} | stager_licences(prior)


def copyleft(licences: dict[str, str]) -> dict[str, str]:
    """Return the entries of ``licences`` under a copyleft licence (AGPL, GPL): terms that reach what is distributed
    with them."""
    return {what: text for what, text in licences.items() if any(word in text for word in COPYLEFT)}


def licences_line(licences: dict[str, str]) -> str:
    """Return ``licences`` as one line: ``passport-kit (...): MIT; base checkpoint X: ...; sleep stager yasa: ...``."""
    return "; ".join(f"{what}: {text}" for what, text in licences.items())


__all__ = ["COPYLEFT", "NOT_STATED", "PACKAGE_LICENCE", "bundle_licences", "copyleft", "licences_line",
           "stager_licences"]
