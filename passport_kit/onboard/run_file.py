"""Run files: the settings of ``adapt`` written in a YAML file, so that a run can be kept and repeated.

A run file is a mapping of :class:`~passport_kit.onboard.adapt.AdaptConfig` fields, the same
typed object the command-line options fill::

    # run.yaml
    montage: eesm17-ear
    data: ./eesm17          # relative paths: from the current folder, as on the command line
    recipe: finetune        # the training recipe (probe | finetune), as --recipe
    max_steps: 200
    mask_bad_channels: 0.4

    $ passport-kit adapt --config run.yaml --out runs/ear --seed 3    # options given override the file

The ``training`` block of a bundle's ``adapter.json`` is such a file (JSON is YAML), so
``passport-kit adapt --config runs/ear/adapter.json --out runs/ear-again`` repeats that run.
Only ``yaml.safe_load`` (within budgets: :mod:`passport_kit.bounded_yaml`) reads it; a bad file is a :class:`~passport_kit.errors.ConfigError`
with one line that says what to fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from passport_kit.bounded_yaml import load_yaml, read_yaml_text
from passport_kit.checkpoint.layout import ADAPTER_FORMAT  # torch-free: reading a run file needs no torch
from passport_kit.errors import ConfigError, validation_problem, yaml_problem
from passport_kit.onboard.recipes import get_recipe, recipe_names


def read_run_file(path: str | Path) -> dict[str, Any]:
    """Return the adapt settings in the run file at ``path`` (a YAML mapping, or an adapter.json's ``training``)."""
    path = Path(path)
    # Bounded like montages and dataset.yaml (issue 46): `--config /dev/zero` grew to 21 GB, a FIFO hung.
    text = read_yaml_text(path, "run file", ConfigError)
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        where, problem = yaml_problem(exc, "not YAML")
        raise ConfigError(f"run file '{path}' is not valid YAML{where} ({problem}); fix the file") from None
    if isinstance(data, dict) and data.get("format") == ADAPTER_FORMAT:
        data = data.get("training")
        if not isinstance(data, dict) or not data:
            raise ConfigError(f"'{path}' is an adapter bundle's adapter.json without training settings; "
                              "give a run file (YAML) instead")
        if data.get("recipe") in recipe_names() and "head_lr" not in get_recipe(data["recipe"]).takes:
            # bundles of the probe before issue 27 recorded a head_lr the probe never used
            data = {k: v for k, v in data.items() if k != "head_lr"}
    if not isinstance(data, dict):
        raise ConfigError(f"run file '{path}' must hold a mapping of adapt settings (e.g. 'montage: eesm17-ear', "
                          f"'data: ./eesm17'), not {type(data).__name__}; fix the file")
    return data


def adapt_config_from_file(path: str | Path, **overrides: Any) -> Any:
    """Return the :class:`~passport_kit.onboard.adapt.AdaptConfig` of a run file, ``overrides`` replacing its settings.

    Unknown settings and invalid values are a :class:`ConfigError` naming the file and the setting.
    """
    from passport_kit.onboard.adapt import AdaptConfig

    settings = read_run_file(path)
    unknown = sorted(set(map(str, settings)) - set(AdaptConfig.model_fields))
    if unknown:
        raise ConfigError(f"run file '{path}': unknown setting(s) {', '.join(unknown)}; remove or rename them (the "
                          f"settings are adapt's options with '_' for '-', e.g. max_steps)")
    try:
        return AdaptConfig.model_validate({**settings, **overrides})
    except ValidationError as exc:
        where, message = validation_problem(exc)
        if not where:  # a rule between settings (recipe and its options)
            raise ConfigError(f"run file '{path}' with the command line's options: {message}") from None
        source = "on the command line" if where in overrides else f"in run file '{path}'"
        raise ConfigError(f"invalid adapt setting {where} {source}: {message}; fix it there") from None


__all__ = ["adapt_config_from_file", "read_run_file"]
