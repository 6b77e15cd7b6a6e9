"""Atomic output: write to a temporary file in the target folder, then rename.

A run that is interrupted never leaves a half-written result behind. Paths that cannot be written
(a folder where a file is expected, a parent that is a file, a read-only place) raise ValueError
naming the target, so that the CLI reports them as one line; `check_writable` lets a command find
that out before it spends any compute.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Iterator


def _default_file_mode() -> int:
    """What `open(path, "w")` would give a new file: 0o666 minus the process umask (mkstemp gives 0o600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def check_writable(path: str | os.PathLike, name: str = "output") -> Path:
    """Raise ValueError unless a file could be written at `path` (creating missing parent folders).

    Nothing is created; the message names the parameter, e.g. "--out /x/y.csv: /x is a file, not a folder".
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{name} {path} is a folder; give a file path")
    parent = path.parent
    while not parent.exists():  # the first existing ancestor must be a writable folder
        if parent == parent.parent:
            break
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise ValueError(f"{name} {path}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{name} {path}: folder {parent} is not writable")
    return path


def check_writable_dir(path: str | os.PathLike, name: str = "output folder") -> Path:
    """Raise ValueError unless `path` is (or can be created as) a writable folder; nothing is created."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{name} {path} is a file; give a folder")
    if not path.exists():
        check_writable(path, name)
    elif not os.access(path, os.W_OK | os.X_OK):
        raise ValueError(f"{name} {path} is not writable")
    return path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to `path`; on success it replaces `path`, on error it is removed.

    The result gets the permissions of the file it replaces, or those of a normally created file.
    """
    path = check_writable(path, "output")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp" + path.suffix, dir=path.parent)
    except OSError as exc:
        raise ValueError(f"cannot write {path}: {exc.strerror or exc}") from None
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        try:
            mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else _default_file_mode()
            os.chmod(tmp_path, mode)
        except OSError:
            pass  # permissions are a courtesy; the data is what matters
        try:
            os.replace(tmp_path, path)
        except OSError as exc:
            raise ValueError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)
