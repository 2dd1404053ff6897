"""CLI commands of this part (filled in by its issue)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this part's commands to the root app."""
