"""Atomic output: write to a temporary file in the target folder, then rename.

A run that is interrupted never leaves a half-written result behind. Paths that cannot be written
(a folder where a file is expected, a parent that is a file, a read-only place, a device, a FIFO)
raise ValueError naming the target, so that the CLI reports them as one line; `check_writable` lets
a command find that out before it spends any compute.

An output that is a symbolic link is written through: the temp file goes next to the link's final
target and replaces the target, so the link stays a link and never points at stale data. (Not inside an
output folder: `ownership.OutputFolder` refuses a link among its files, its manifest or its lock.)

While a temp file is being written its writer holds an advisory lock on it (POSIX `flock`), so a
later run can tell a leftover of a killed run (unlocked) from a concurrent run's live temp file
(locked) and removes only the former (`remove_stale_temp_files`).
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Iterator

try:  # POSIX; elsewhere temp files are not locked and stale ones are recognised by age alone
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

#: Temp files younger than this are never removed as stale (covers the instant between their
#: creation and their writer taking the lock).
STALE_TEMP_AGE_S = 10.0
#: Without `flock` (Windows) an unlocked temp file cannot be told from a live one: only very old ones go.
STALE_TEMP_AGE_NO_LOCK_S = 24 * 3600.0


def _default_file_mode() -> int:
    """What `open(path, "w")` would give a new file: 0o666 minus the process umask (mkstemp gives 0o600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def resolve_output(path: str | os.PathLike, name: str = "output") -> Path:
    """The file an output at `path` really writes: the final target of a symbolic link, else `path`.

    Raises ValueError when that file exists and is not a regular file (a folder, /dev/null, a FIFO, a
    socket): replacing it would destroy it, and writing into it would lose the result.
    """
    path = Path(path)
    if path.is_symlink():
        target = Path(os.path.realpath(path))
        if not target.exists() and not target.parent.is_dir():
            raise ValueError(f"{name} {path} is a link to {target}, whose folder does not exist")
    else:
        target = path
    try:
        mode = target.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there yet (check_writable judges the parent)
        return target
    except OSError as exc:
        raise ValueError(f"{name} {path}: cannot inspect it ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        raise ValueError(f"{name} {path} is a folder; give a file path")
    if not stat.S_ISREG(mode):
        kind = ("a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else
                "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        via = f" (through the link to {target})" if target != path else ""
        raise ValueError(f"{name} {path} exists and is {kind}{via}; give a regular file path")
    return target


def check_writable(path: str | os.PathLike, name: str = "output", *, folder: bool = False) -> Path:
    """Raise ValueError unless a file could be written at `path` (creating missing parent folders).

    Nothing is created; the message names the parameter, e.g. "--out /x/y.csv: /x is a file, not a folder".
    A symbolic link is checked at its final target; an existing non-regular file (a device, a FIFO, a
    folder) is refused, and so is a path typed with a trailing "/" (`folder_spelling`), which names a
    folder (`folder=True`: check_writable_dir's own call, where it does). Returns `path` as given (not the
    link's target).
    """
    typed = None if folder else folder_spelling(path)
    if typed is not None:  # before Path(), which drops the slash: `--out D/new/` would write a file named new
        raise ValueError(f"{name} {typed} ends in '/', which names a folder; give a file path")
    given = Path(path)
    if str(given) == "":
        raise ValueError(f"{name} is empty; give a file path")
    long = next((part for part in given.parts if len(os.fsencode(part)) > NAME_MAX), None)
    if long is not None:  # found now, not when the result is written after the run
        raise ValueError(f"{name} {given}: the name {long[:40]}... is {len(os.fsencode(long))} bytes; "
                         f"file names are limited to {NAME_MAX}")
    path = resolve_output(given, name)
    parent = path.parent
    while not parent.exists():  # the first existing ancestor must be a writable folder
        if parent == parent.parent:
            break
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise ValueError(f"{name} {path}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{name} {path}: folder {parent} is not writable")
    return given


def check_writable_dir(path: str | os.PathLike, name: str = "output folder") -> Path:
    """Raise ValueError unless `path` is (or can be created as) a writable folder; nothing is created."""
    if str(path) == "":  # Path("") is ".": an empty --out would write into the current folder
        raise ValueError(f"{name} is empty; give a folder path")
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{name} {path} is a file; give a folder")
    if not path.exists():
        check_writable(path, name, folder=True)
    elif not os.access(path, os.W_OK | os.X_OK):
        raise ValueError(f"{name} {path} is not writable")
    return path


#: The paths this command-line call was given with a trailing "/" (absolute path -> as typed), or None outside
#: one: the CLI's path type turns "D/new/" into Path("D/new"), which has lost the slash, so the CLI notes the
#: spelling here (`note_typed_path`, inside `typed_paths()`) and check_writable can still tell a file output
#: spelled as a folder (a ContextVar: in-process calls and threads never see another call's paths).
_FOLDER_TYPED: contextvars.ContextVar[dict | None] = contextvars.ContextVar("fgrpo_folder_typed", default=None)


@contextlib.contextmanager
def typed_paths() -> Iterator[None]:
    """The span of one command-line call whose typed path spellings `note_typed_path` records."""
    token = _FOLDER_TYPED.set({})
    try:
        yield
    finally:
        _FOLDER_TYPED.reset(token)


def note_typed_path(raw: str) -> None:
    """Remember a path value as the user typed it, when it ends in a separator (inside `typed_paths()`)."""
    typed = _FOLDER_TYPED.get()
    if typed is not None and isinstance(raw, str) and raw.endswith(("/", os.sep)):
        typed[os.path.abspath(raw)] = raw


def folder_spelling(path: str | os.PathLike) -> str | None:
    """`path` as typed when it ends in "/" (a str given so, or a path the CLI noted), else None."""
    if isinstance(path, str) and path.endswith(("/", os.sep)):
        return path
    typed = _FOLDER_TYPED.get()
    if not typed:
        return None
    try:
        return typed.get(os.path.abspath(path))
    except (TypeError, ValueError):  # not a path (bytes, an embedded NUL): the checks below name it
        return None


#: Write errors that mean "no room": reported with the output's path (the OSError of a write has none).
_SPACE_ERRORS = {getattr(errno, n) for n in ("ENOSPC", "EDQUOT", "EFBIG") if hasattr(errno, n)}

#: Longest file name (bytes) on the file systems we write to (ext4, xfs, btrfs, APFS, tmpfs).
NAME_MAX = 255


def hidden_name(name: str, suffix: str, reserve: int = 0) -> str:
    """`.NAME` + `suffix` for a hidden sidecar of file NAME, kept within NAME_MAX bytes (with `reserve`
    bytes left for a random part): a long NAME is cut and a hash of the whole name appended, so a legal
    output name never fails because of its temp or lock file."""
    # os.fsencode, not str.encode: a legal non-UTF-8 file name ($'bad\xff.json') reaches Python as a lone
    # surrogate (surrogateescape), which strict UTF-8 refuses; fsencode gives back the bytes the kernel counts
    whole = f".{name}{suffix}"
    if len(os.fsencode(whole)) + reserve <= NAME_MAX:
        return whole
    import hashlib

    tag = "~" + hashlib.sha256(os.fsencode(name)).hexdigest()[:16]
    room = NAME_MAX - reserve - len(os.fsencode(f".{tag}{suffix}"))
    head = os.fsdecode(os.fsencode(name)[:room].decode("utf-8", errors="ignore").encode())  # never half a character
    return f".{head}{tag}{suffix}"


def _temp_prefix_suffix(target: Path) -> tuple[str, str]:
    suffix = ".tmp" + target.suffix
    if len(os.fsencode(suffix)) > 40:  # an odd, very long extension: the temp file need not keep it
        suffix = ".tmp"
    prefix = hidden_name(target.name, ".", reserve=8 + len(os.fsencode(suffix)))
    return prefix, suffix


def _is_our_temp_name(filename: str) -> bool:
    """Does `filename` have the shape of `atomic_path`'s temp files: .NAME.<8 random chars>.tmp<suffix>?"""
    return re.fullmatch(r"\..+\.[A-Za-z0-9_]{8}\.tmp(\.[^./]*)?", filename) is not None


def _is_stale(path: Path, now: float) -> bool:
    """True for a temp file that no live writer holds (its lock is free) and that is old enough."""
    try:
        age = now - path.lstat().st_mtime
    except OSError:
        return False
    if fcntl is None:
        return age >= STALE_TEMP_AGE_NO_LOCK_S
    if age < STALE_TEMP_AGE_S or not path.is_file() or path.is_symlink():
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # a running writer holds it
    finally:
        os.close(fd)  # closing releases a lock we took
    return True


def remove_stale_temp_files(folder: str | os.PathLike, target_name: str | None = None) -> list[Path]:
    """Delete leftover temp files of killed runs in `folder` (only of `target_name` when given).

    Only files with `atomic_path`'s own name pattern are considered, and only those that are at least
    STALE_TEMP_AGE_S seconds old and not locked by a live writer; returns the removed paths.
    """
    import time

    folder = Path(folder)
    if not folder.is_dir():
        return []
    now = time.time()
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        name = entry.name
        if not _is_our_temp_name(name):
            continue
        if target_name is not None:
            prefix, suffix = _temp_prefix_suffix(Path(target_name))
            if not (name.startswith(prefix) and name.endswith(suffix) and len(name) == len(prefix) + 8 + len(suffix)):
                continue
        path = folder / name
        if _is_stale(path, now):
            try:
                path.unlink()
                removed.append(path)
            except OSError:
                pass
    return removed


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, is_ours=None, force: bool = False, name: str = "output",
                force_option: str = "--force") -> Iterator[Path]:
    """Yield a temporary path next to `path`; on success it replaces `path`, on error it is removed.

    The result gets the permissions of the file it replaces, or those of a normally created file.
    A symbolic link is written through (its target is replaced, the link kept); an existing path that
    is not a regular file is refused. Stale temp files of this target left by killed runs are removed.

    `is_ours` (the overwrite rule, `check_replaceable`): an existing file is replaced only when
    `is_ours(target)` recognises it or `force` is set; checked here, at the write itself, so a writer
    that passes its recogniser cannot replace someone's file even where its command forgot to check first.
    """
    given = check_writable(path, name)
    if is_ours is not None:
        check_replaceable(given, name, is_ours, force=force, force_option=force_option)
    path = resolve_output(given, name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        prefix, suffix = _temp_prefix_suffix(path)
        remove_stale_temp_files(path.parent, path.name)
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=path.parent)
    except OSError as exc:
        raise ValueError(f"cannot write {given}: {exc.strerror or exc}") from None
    if fcntl is not None:  # fd and lock held until the rename: mark this temp file live for others' cleanup
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    else:  # pragma: no cover - Windows cannot rename a file that is open
        os.close(fd)
        fd = -1
    tmp_path = Path(tmp)
    try:
        try:
            yield tmp_path
        except OSError as exc:
            if exc.errno not in _SPACE_ERRORS:
                raise
            raise ValueError(f"cannot write {given}: {exc.strerror or exc}") from None  # not only "[Errno 28]"
        try:
            mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else _default_file_mode()
            os.chmod(tmp_path, mode)
        except OSError:
            pass  # permissions are a courtesy; the data is what matters
        try:
            os.replace(tmp_path, path)
        except OSError as exc:
            raise ValueError(f"cannot write {given}: {exc.strerror or exc}") from None
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    finally:
        if fd >= 0:
            os.close(fd)


def check_not_input(out: str | os.PathLike | None, name: str, *inputs: str | os.PathLike | None) -> None:
    """Refuse an output that is one of the command's own inputs (also through a link or a relative path):
    it would be replaced by the result before, or while, it is read."""
    if out is None:
        return
    target = os.path.realpath(out)
    for given in inputs:
        if given is not None and os.path.realpath(given) == target:
            raise ValueError(f"{name} {out} is the input file {given}; choose another output path "
                             "(writing it would replace the data being read)")


def check_replaceable(path: str | os.PathLike | None, name: str, is_ours, *, force: bool = False,
                      force_option: str = "--force") -> None:
    """The overwrite rule of every writer (docs/reliability.md): an existing output is replaced only when
    this command made it (`is_ours(target)` recognises its schema or marker) or the user says so with
    `force_option`; any other file is someone's data and is refused, before any work, in one line.

    `is_ours` may raise on a foreign file (not JSON, not UTF-8, no header): that counts as not ours."""
    if path is None or force:
        return
    target = resolve_output(path, name)
    if not target.exists():
        return
    try:
        ours = bool(is_ours(target))
    except Exception:  # noqa: BLE001 - a file our reader cannot even parse is certainly not ours
        ours = False
    if not ours:
        raise ValueError(f"{name} {path} exists and was not written by this command; pass {force_option} to "
                         "replace it, or choose another path")


def recorded_path(path: str | os.PathLike, out: str | os.PathLike | None = None) -> str:
    """`path` as an output records it: relative to the output's folder (to the current folder without an
    output), so that two identical runs in two folders write the same bytes (an absolute input path would
    differ). A name that is not an existing path (a hub id, 'tiny') is kept as given."""
    if not os.path.exists(path):
        return os.fspath(path)
    base = os.path.dirname(os.path.abspath(out)) if out is not None else os.getcwd()
    try:
        return os.path.relpath(os.path.abspath(path), base)
    except ValueError:  # another drive (Windows): no relative form
        return os.fspath(path)


def write_text_atomic(path: str | os.PathLike, text: str, **rule) -> Path:
    """`text` to `path` atomically; `rule`: atomic_path's overwrite-rule keywords (is_ours, force, name)."""
    with atomic_path(path, **rule) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_bytes_atomic(path: str | os.PathLike, data: bytes, **rule) -> Path:
    with atomic_path(path, **rule) as tmp:
        tmp.write_bytes(data)
    return Path(path)
