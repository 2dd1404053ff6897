"""Run files: the settings of ``adapt`` written in a YAML file, so that a run can be kept and repeated.

A run file is a mapping of :class:`~passport_kit.onboard.adapt.AdaptConfig` fields, the same
typed object the command-line options fill::

    # run.yaml
    montage: eesm17-ear
    data: ./eesm17          # relative paths: from the run file's folder (issue 57)
    recipe: finetune        # the training recipe (probe | finetune), as --recipe
    max_steps: 200
    mask_bad_channels: 0.4

    $ passport-kit adapt --config run.yaml --out runs/ear --seed 3    # options given override the file

The ``training`` block of a bundle's ``adapter.json`` is such a file (JSON is YAML), so
``passport-kit adapt --config runs/ear/adapter.json --out runs/ear-again`` repeats that run.
Only ``yaml.safe_load`` (within budgets: :mod:`passport_kit.bounded_yaml`) reads it; a bad file is a :class:`~passport_kit.errors.ConfigError`
with one line that says what to fix. It is read strictly (issue 57): a key given twice, ``true`` for a
number (``seed: true`` was read as 1) or a quoted number are refused; relative ``data`` and ``out``, and a
``montage`` or ``checkpoint`` written as a path (with a ``/`` or a ``.yaml`` suffix), are read from the run
file's folder. An adapter.json's ``training`` block keeps the paths as ``adapt`` was given them (from the
folder it ran in).
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
    if isinstance(data, dict) and data.get("format") != ADAPTER_FORMAT:
        data = _from_run_folder(data, path.parent)
    elif isinstance(data, dict):
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


#: Settings that name a file or folder: relative in a run file, they are read from its folder.
PATH_SETTINGS = ("data", "out")
#: Settings that name a registered item or a path: a value with a '/' or a YAML suffix is a path.
NAME_OR_PATH_SETTINGS = ("montage", "checkpoint")


def _from_run_folder(data: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Return the run file settings ``data`` with its relative paths read from ``folder`` (the run file's)."""
    def path_like(key: str, value: Any) -> bool:
        if not isinstance(value, str) or not value or Path(value).is_absolute():
            return False
        return key in PATH_SETTINGS or (key in NAME_OR_PATH_SETTINGS and (
            "/" in value or value.lower().endswith((".yaml", ".yml"))))

    return {k: str(folder / v) if path_like(str(k), v) else v for k, v in data.items()}


def _strict_types(settings: dict[str, Any], fields: dict[str, Any], path: Path) -> None:
    """Return None when no setting of the run file at ``path`` is ``true``/``false`` or text where a number or
    another type is meant (pydantic's lax mode reads ``true`` as 1 and "200" as 200); else a ConfigError."""
    from pydantic import TypeAdapter

    for key, value in settings.items():
        if not isinstance(value, (bool, str)) or key not in fields:
            continue
        adapter = TypeAdapter(fields[key].annotation)
        try:
            adapter.validate_python(value, strict=True)
            continue
        except ValidationError:
            pass
        try:
            lax = adapter.validate_python(value)
        except ValidationError:
            continue  # the usual validation names what is wrong
        if isinstance(value, bool) or isinstance(lax, (int, float)):
            raise ConfigError(f"invalid adapt setting {key} in run file '{path}': {value!r} is "
                              f"{'true/false' if isinstance(value, bool) else 'text'}, not what {key} takes (read "
                              f"as {lax!r}); write the value itself, e.g. {key}: {_example(lax)}")


def _example(value: Any) -> str:
    """Return how a run file writes ``value`` (the lax reading of a mistyped one)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


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
    _strict_types(settings, AdaptConfig.model_fields, Path(path))
    try:
        return AdaptConfig.model_validate({**settings, **overrides})
    except ValidationError as exc:
        where, message = validation_problem(exc)
        if not where:  # a rule between settings (recipe and its options)
            raise ConfigError(f"run file '{path}' with the command line's options: {message}") from None
        source = "on the command line" if where in overrides else f"in run file '{path}'"
        raise ConfigError(f"invalid adapt setting {where} {source}: {message}; fix it there") from None


__all__ = ["adapt_config_from_file", "read_run_file"]
