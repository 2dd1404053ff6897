"""CLI for base checkpoints: ``checkpoints list|show|import-cbramod``; ``checkpoints reseal`` seals an edited adapter bundle.

Parses, calls :mod:`passport_kit.checkpoint`, prints. User errors are CheckpointErrors, which
the root app turns into exit code 2 and one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from passport_kit.cli.options import HelpfulGroup

checkpoints_app = typer.Typer(
    name="checkpoints",
    help="List and show base checkpoints; import the official CBraMod weights; re-seal an edited adapter bundle.",
    no_args_is_help=True,
    cls=HelpfulGroup,
    rich_markup_mode=None,
)


#: How ``show`` reports :func:`~passport_kit.checkpoint.weights_status`.
_STATUS = {"matches": "matches it", "differs": "DIFFERS: changed or damaged, loading refuses it",
           "missing": "MISSING: loading refuses this checkpoint"}


def _summary(info: Any) -> dict[str, Any]:
    """Return the JSON-ready description of one checkpoint (BaseCheckpointInfo)."""
    data = info.model_dump(mode="json")
    data["path"] = str(info.path)
    return data


@checkpoints_app.command("list")
def list_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List shipped and user base checkpoints."""
    from rich.console import Console
    from rich.table import Table

    from passport_kit.checkpoint import list_checkpoints

    infos = list_checkpoints()
    if as_json:
        typer.echo(json.dumps([_summary(i) for i in infos], indent=2, ensure_ascii=False))
        return
    if not infos:
        typer.echo(
            "no checkpoints yet; create one with `passport-kit pretrain` or"
            " `passport-kit checkpoints import-cbramod FILE.pth`"
        )
        return
    table = Table(title="checkpoints")
    rows = [
        (i.name, i.source, i.model.arch, i.model.embedding, i.weights_sha256[:8])
        for i in infos
    ]
    for k, column in enumerate(("name", "source", "arch", "embedding", "sha256")):
        # Full width for every column: names are what the user types next.
        table.add_column(column, no_wrap=True, min_width=max(len(column), *(len(r[k]) for r in rows)))
    for row in rows:
        table.add_row(*row)
    Console(highlight=False, soft_wrap=False).print(table)


@checkpoints_app.command("show")
def show_cmd(
    name: Annotated[str, typer.Argument(help="Checkpoint name or folder.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Show one checkpoint: architecture, embedding, preprocessing contract, training, hash, licence."""
    from passport_kit.checkpoint import WEIGHTS_FILE, find_checkpoint, weights_status
    from passport_kit.checkpoint.licences import NOT_STATED
    from passport_kit.model.config import EXPERT_KINDS

    info = find_checkpoint(name)
    # The hash shown is checked against the file, not only read from config.json (issue 28).
    status = weights_status(info)
    if as_json:
        typer.echo(json.dumps(_summary(info) | {"weights": status}, indent=2, ensure_ascii=False))
        return
    m = info.model
    lines = [
        f"name:          {info.name} ({info.source}, {info.path})",
        f"architecture:  {m.arch}: {m.n_layers} layers, d={m.d_model}, {m.n_heads} heads, ff {m.d_ff}",
        f"embedding:     {m.embedding}"
        + (f" ({m.n_experts} experts)" if m.embedding in EXPERT_KINDS else ""),
        f"parameters:    {info.n_parameters:,}",
        f"preprocessing: {json.dumps(info.preprocessing.model_dump(mode='json'), ensure_ascii=False)}",
        f"training:      {json.dumps(info.training, ensure_ascii=False, default=str)}",
        f"sha256:        {info.weights_sha256} ({WEIGHTS_FILE} {_STATUS[status]})",
        f"licence:       {info.licence or NOT_STATED}",
        f"format:        {info.format} v{info.format_version}, passport-kit {info.package_version}",
    ]
    if info.init_from is not None:  # pretrain --init-from
        src = info.init_from
        lines.insert(3, f"upcycled from: {src.name} ({src.embedding}, sha256 {src.sha256[:12]}...), trained: "
                        f"{src.trained}, time: {m.temporal_position}, {len(src.frozen_tensors)} tensors kept")
    typer.echo("\n".join(lines))


@checkpoints_app.command("import-cbramod")
def import_cbramod_cmd(
    file: Annotated[Path, typer.Argument(help="The official CBraMod pretrained_weights.pth.")],
    name: Annotated[str, typer.Option("--name", help="Checkpoint name.")] = "cbramod-official",
    out: Annotated[
        Optional[Path],
        typer.Option("--out", help="Output folder (default: the user checkpoint folder / NAME)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing folder.")] = False,
) -> None:
    """Convert the official CBraMod weights into a base checkpoint (acpe embedding)."""
    from passport_kit.checkpoint import check_name, checkpoint_roots, import_cbramod, user_checkpoint_dir
    from passport_kit.errors import CheckpointError

    check_name(name)
    if out is None and any(s == "shipped" and (r / name).exists() for s, r in checkpoint_roots()):
        # A user checkpoint may not hide a shipped one of the same name.
        raise CheckpointError(f"a shipped checkpoint is named {name!r}; choose another --name")
    folder = out if out is not None else user_checkpoint_dir() / name
    if folder.exists() and not force:
        raise CheckpointError(f"'{folder}' already exists; pass --force to replace it or choose --out")
    path = import_cbramod(file, folder, name=name, overwrite=force)
    typer.echo(f"imported '{file}' as base checkpoint '{name}' at {path}")


@checkpoints_app.command("reseal")
def reseal_cmd(
    folder: Annotated[Path, typer.Argument(help="The adapter bundle folder (adapt --out) whose adapter.json you edited.")],
) -> None:
    """Seal an adapter bundle as it is now: an edit of adapter.json or its tensors made on purpose is then loaded.

    adapt seals every bundle it writes; predict and evaluate refuse a bundle changed after that,
    naming what changed. Re-sealing takes the edit as the bundle's own (its numbers are still checked on load).
    """
    from passport_kit.checkpoint.seal import reseal_bundle

    changed = reseal_bundle(folder)
    typer.echo(f"sealed adapter '{folder}' as it is now ({'changed: ' + ', '.join(changed) if changed else 'unchanged'})")


def register(app: typer.Typer) -> None:
    """Add this part's commands to the root app."""
    app.add_typer(checkpoints_app)
