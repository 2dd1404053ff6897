"""Command-line interface: a thin Typer shell over the Python API (no logic of its own)."""
