"""`python -m fgrpo_sim` and the `fgrpo` console script (pyproject: `fgrpo_sim.__main__:run`).

The command line's imports (typer, numpy, the command modules) take a second or more, and cli.main can catch
only what happens once it runs: Ctrl-C during them printed a KeyboardInterrupt traceback and died by the
signal. The entry point guards the import itself, so every command ends Ctrl-C the same way: one line, 130.
"""

import sys


def run() -> None:
    try:
        from fgrpo_sim.cli import main
    except KeyboardInterrupt:
        from fgrpo_sim import INTERRUPTED_LINE, exit_130  # the package itself: imported before this module ran

        print(INTERRUPTED_LINE, file=sys.stderr)
        exit_130()
    main()


if __name__ == "__main__":
    run()
