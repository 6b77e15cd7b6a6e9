"""`fgrpo simulate ...` commands (placeholder: filled in by its issue)."""

import typer

app = typer.Typer(help="(not yet implemented)", no_args_is_help=True)
