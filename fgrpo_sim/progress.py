"""Progress bars, shown on a terminal only.

A bar redraws itself with carriage returns. Written to a log file, a pipe or a CI console, every refresh
becomes a line of its own (`make figures > log` once wrote about 1,900 of them, nested bars adding blank
lines), so a bar appears only when the caller asks for progress *and* the bar's stream is a terminal.
Inner bars of nested loops pass `leave=False`: they vanish when done instead of leaving a finished line.
"""

from __future__ import annotations

import sys
from typing import Any, Iterable, TextIO


def on_terminal(stream: TextIO | None = None) -> bool:
    """Whether `stream` (default stderr, where bars go) is an interactive terminal."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


def show_progress(progress: bool, stream: TextIO | None = None) -> bool:
    """The one rule: a bar when asked for and stderr (or `stream`) is a terminal."""
    return bool(progress) and on_terminal(stream)


def bar(iterable: Iterable | None = None, *, progress: bool = True, **kwargs: Any):
    """`tqdm(iterable, **kwargs)` on stderr, disabled unless `show_progress(progress)`."""
    from tqdm import tqdm

    stream = kwargs.pop("file", None) or sys.stderr
    return tqdm(iterable, file=stream, disable=not show_progress(progress, stream), **kwargs)
