"""`fgrpo passk` command (placeholder: filled in by its issue)."""

import typer


def register(app: typer.Typer) -> None:
    """Add the `passk` command to the top-level app (nothing yet)."""
