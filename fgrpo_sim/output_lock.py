"""An exclusive lock on an output file for a whole read-modify-write (resume, then append or rewrite).

Outputs that a run reads back and extends (the categorical result table, the `llm eval` samples file)
are locked through a hidden sidecar next to the real file: `.NAME.lock` beside NAME (beside a symbolic
link's target, so two names for one file share one lock). The lock is `filelock`'s (POSIX `flock`, which
the kernel drops when its process ends, however it ends, so a killed run never leaves a stale lock).
Ours on top: a run that finishes (or fails) removes the sidecar while still holding it, so no empty
`.NAME.lock` is left beside a finished output (filelock keeps it); a run waiting on that file then finds it
unlinked and locks the new one (filelock checks), and a killed run's empty sidecar is simply locked again.

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

from filelock import FileLock, Timeout

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
    global _last_locked
    lock = lock_path_for(path, name)
    held = _acquire(lock, path, name, wait, wait_hint)
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
        with contextlib.suppress(OSError):
            os.unlink(lock)  # while still held (module doc)
        held.release()


def _refuse_planted(lock: Path, path, name: str) -> None:
    """A lock file that is a link or not a regular file was not left by a run of ours (ours are plain files,
    removed on release): it is refused in one line before anything is read or written, never followed
    (a link could lead the lock's create-and-truncate out of the folder; a folder fails only at the acquire)."""
    import stat

    try:
        mode = os.lstat(lock).st_mode
    except OSError:  # absent (the usual case), or a parent we cannot see: the acquire names that
        return
    kind = ("a link" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode) else
            None if stat.S_ISREG(mode) else "not a regular file")
    if kind is not None:
        raise ValueError(f"{name} {path}: its lock file {lock} is {kind}, not one this tool made; remove it and "
                         "run again")


def _acquire(lock: Path, path, name: str, wait: bool, wait_hint: str) -> FileLock:
    """The held lock on `lock`: at once, else a ValueError, or with `wait` after announcing the wait."""
    _refuse_planted(lock, path, name)
    file_lock = FileLock(lock, thread_local=False)
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        try:
            file_lock.acquire(timeout=0)
        except Timeout:
            if not wait:
                advice = f"let it finish, {wait_hint}, or choose another output" if wait_hint else \
                    "let it finish or choose another output"
                raise ValueError(f"{name} {path} is being written by another run (it holds the lock {lock}); "
                                 f"{advice}") from None
            print(f"waiting for another run writing {path} (lock {lock}) ...", file=sys.stderr, flush=True)
            file_lock.acquire()
    except OSError as exc:  # an unwritable folder (Timeout is an OSError too, but never reaches here)
        raise ValueError(f"{name} {path}: cannot create its lock file {lock} ({exc.strerror or exc})") from None
    return file_lock
