"""`fgrpo simulate ...` subcommand (placeholder: filled in by its issue)."""

import typer


def register(app: typer.Typer) -> None:
    """Add this simulator's subcommand to `fgrpo simulate` (nothing yet)."""
