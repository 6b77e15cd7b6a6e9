"""An exclusive lock on an output file for a whole read-modify-write (resume, then append or rewrite).

Outputs that a run reads back and extends (the categorical result table, the `llm eval` samples file)
are locked through a hidden sidecar next to the real file: `.NAME.lock` beside NAME (beside a symbolic
link's target, so two names for one file share one lock). The lock is POSIX `flock`: the kernel drops
it when its process ends, however it ends, so a killed run never leaves a stale lock. A run that
finishes (or fails) removes the sidecar while still holding it; a killed run leaves an empty one,
which the next run simply locks again.

A second writer either fails at once with a one-line ValueError naming the lock (the default; the
CLI exits 2) or, with `wait=True` (`--wait`), blocks until the first run is done and then resumes from
what that run wrote.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock (documented in docs/reliability.md)
    fcntl = None  # type: ignore[assignment]


#: The output whose lock this process took last and did not release normally: where an interrupted
#: run can be resumed from (the CLI names it on Ctrl-C).
_last_locked: Path | None = None


def last_locked_output() -> Path | None:
    return _last_locked


def lock_path_for(path: str | os.PathLike, name: str = "--out") -> Path:
    """The sidecar lock file of output `path`: `.NAME.lock` next to the file that is really written
    (NAME shortened with a hash when the whole name would pass the 255-byte file-name limit)."""
    from fgrpo_sim.atomic_io import hidden_name, resolve_output

    target = resolve_output(path, name)
    return target.with_name(hidden_name(target.name, ".lock"))


@contextlib.contextmanager
def output_lock(path: str | os.PathLike, *, wait: bool = False, name: str = "--out",
                wait_hint: str = "pass --wait to queue behind it", resumable: str | os.PathLike | None = None
                ) -> Iterator[Path]:
    """Hold an exclusive lock on output `path` for the duration of the block; yields the lock file's path.

    `wait_hint` is the advice in the busy message (empty for a command without a --wait option);
    `resumable` is what an interrupted run names as its resume point (default: `path`)."""
    lock = lock_path_for(path, name)
    if fcntl is None:  # pragma: no cover
        yield lock
        return
    global _last_locked
    fd = _acquire(lock, path, name, wait, wait_hint)
    _last_locked = Path(resumable if resumable is not None else path)
    try:
        yield lock
    except KeyboardInterrupt:  # keep it: the CLI names it as the place to resume from
        raise
    except BaseException:
        _last_locked = None
        raise
    else:
        _last_locked = None
    finally:
        # Removed while still held: a run waiting on this inode then sees that the path no longer
        # names it and starts over on a fresh file (see _acquire), so no two runs ever hold the lock.
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)  # releases the lock


def _acquire(lock: Path, path, name: str, wait: bool, wait_hint: str) -> int:
    """Open and flock `lock`; returns the descriptor once the lock is held on the file the path names."""
    announced = False
    while True:
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise ValueError(f"{name} {path}: cannot create its lock file {lock} ({exc.strerror or exc})") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not wait:
                    advice = f"let it finish, {wait_hint}, or choose another output" if wait_hint else \
                        "let it finish or choose another output"
                    raise ValueError(f"{name} {path} is being written by another run (it holds the lock {lock}); "
                                     f"{advice}") from None
                if not announced:
                    print(f"waiting for another run writing {path} (lock {lock}) ...", file=sys.stderr, flush=True)
                    announced = True
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                on_path, held = os.stat(lock), os.fstat(fd)
                same = (on_path.st_dev, on_path.st_ino) == (held.st_dev, held.st_ino)
            except FileNotFoundError:
                same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            return fd
        os.close(fd)  # the previous holder removed that file as it finished: lock the new one
