"""Which existing outputs this tool made: the overwrite rule's evidence (docs/reliability.md).

A file is replaced only when we made it (else the command refuses naming --force). How we tell:
- a single file by its content: a table's columns, a JSON file's keys (the writers' recognisers passed to
  `atomic_io.check_replaceable` / `atomic_path(is_ours=...)`), a PNG by our tag (`PNG_METADATA`, `is_our_png`);
- a file inside an output folder (`fgrpo figures --out`, `llm report --out-dir`, `maze run --out`) by the
  folder's hidden manifest, `.fgrpo-sim-outputs.json`, which lists every file the tool wrote there with the
  SHA-256 of the bytes it wrote. A listed file whose bytes changed since (edited or replaced) is no longer
  ours; a link in its place is refused whatever its target holds (below). A folder written before manifests
  existed can name a recogniser per file pattern (`OutputFolder(recognisers=...)`).

`OutputFolder.check(names)` judges every file of a multi-file output before the first is written, so a
refusal leaves nothing behind; each write checks again (the writer itself enforces the rule) and then
records the new file's hash, under a lock, so two runs writing one folder never lose each other's entries.

Nothing written for a folder follows a symbolic link out of it (issue 43): a file, the manifest or its lock
that is a link (or a manifest or lock that is a folder, a FIFO, a device) is refused before the first write,
even under --force and even when the link's target has a listed hash. A single-file output is different: the
user named that path, and it is written through its link (atomic_io); inside a folder the names are ours.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import os
import stat
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

from fgrpo_sim.atomic_io import (atomic_path, check_replaceable, check_writable, check_writable_dir, hidden_name,
                                 write_text_atomic)

#: Who wrote a file, as our PNGs and manifests say it (no version: regenerating leaves the bytes unchanged).
OWNER = "fgrpo-sim"
#: matplotlib `savefig(metadata=...)` for a PNG we write alone: a tEXt chunk Software=fgrpo-sim, our tag.
PNG_METADATA = {"Software": OWNER}
MANIFEST = ".fgrpo-sim-outputs.json"

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def is_our_png(path: str | os.PathLike) -> bool:
    """Does the PNG at `path` carry our tag (a tEXt chunk Software=fgrpo-sim before the image data)?"""
    with open(path, "rb") as fh:
        if fh.read(8) != _PNG_SIGNATURE:
            return False
        while True:
            head = fh.read(8)
            if len(head) < 8:
                return False
            length, kind = int.from_bytes(head[:4], "big"), head[4:]
            if kind in (b"IDAT", b"IEND") or length > 1 << 20:  # metadata comes before the pixels
                return False
            body = fh.read(length)
            fh.read(4)  # CRC
            if kind == b"tEXt" and body == b"Software\x00" + OWNER.encode():
                return True


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class OutputFolder:
    """An output folder whose files obey the overwrite rule through its manifest (module doc).

    `option` names the folder in errors (`--out-dir`); `force` (the command's --force) replaces what is not
    ours; `recognisers` maps a file-name pattern (fnmatch, relative to the folder) to an `is_ours(path)` that
    recognises files written before the manifest existed (e.g. a maze summary.json by its keys)."""

    def __init__(self, folder: str | os.PathLike, option: str, *, force: bool = False,
                 recognisers: Mapping[str, Callable[[Path], bool]] | None = None):
        self.folder = Path(folder)
        self.option = option
        self.force = force
        self.recognisers = dict(recognisers or {})

    @property
    def manifest(self) -> Path:
        return self.folder / MANIFEST

    @property
    def lock(self) -> Path:
        return self.folder / hidden_name(MANIFEST, ".lock")

    def _refuse_link(self, path: Path, what: str) -> None:
        """`path` (inside the folder) must not be a link, and where it exists a regular file: a link would be
        followed out of the folder, a folder or FIFO in a sidecar's place breaks (or hangs) its update after
        the output is written. lstat, never open: a FIFO is judged without blocking."""
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return
        except OSError as exc:
            raise ValueError(f"{self.option} {path}: cannot inspect it ({exc.strerror or exc})") from None
        if stat.S_ISLNK(mode):
            raise ValueError(f"{self.option} {path} is a link (to {os.readlink(path)}); {what} in an output folder "
                             "is never written through a link: remove the link, or choose another folder")
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
            raise ValueError(f"{self.option} {path} is {kind}, where {what} belongs; remove it, or choose "
                             "another folder")

    def _check_inside(self, name: str) -> None:
        """No part of folder/name is a link (a sub-folder link leads out as surely as a file link), and the
        manifest and its lock are regular files or absent: checked before any file is written."""
        self._refuse_link(self.manifest, "its manifest")
        self._refuse_link(self.lock, "its manifest's lock")
        path = self.folder
        for part in Path(name).parts:
            path = path / part
            if os.path.islink(path):
                self._refuse_link(path, "a file")

    def recorded(self) -> dict[str, str]:
        """The manifest's file -> SHA-256 table; {} without one. A manifest we cannot read is refused
        (a file of that name that is not ours), or ignored under --force; one that is a link, a folder or a
        FIFO is refused even under --force (`_refuse_link`; never opened, so a FIFO cannot hang us)."""
        if not os.path.lexists(self.manifest):
            return {}
        self._refuse_link(self.manifest, "its manifest")
        from fgrpo_sim.jsonl import read_json_file

        try:
            data = read_json_file(self.manifest, "manifest")
        except ValueError:
            data = None
        if isinstance(data, dict) and data.get("written_by") == OWNER and isinstance(data.get("files"), dict):
            return {k: v for k, v in data["files"].items() if isinstance(v, str)}
        if self.force:
            return {}
        raise ValueError(f"{self.option} {self.folder}: {MANIFEST} there was not written by this tool; pass --force "
                         "to replace it, or choose another folder")

    def is_ours(self, name: str, target: Path, recorded: dict[str, str] | None = None) -> bool:
        """Is the existing file `target` (folder/name; never a link: `_check_inside` refuses those first) one this
        tool wrote as `name`?"""
        recorded = self.recorded() if recorded is None else recorded
        if name in recorded and _sha256(target) == recorded[name]:
            return True
        for pattern, recognise in self.recognisers.items():
            if fnmatch.fnmatchcase(name, pattern):
                return bool(recognise(target))
        return False

    def check(self, names: Iterable[str]) -> None:
        """Before any work and before the first file: every one of `names` can be written and is new or ours."""
        check_writable_dir(self.folder, self.option)
        names = list(names)
        recorded = self.recorded() if self.folder.is_dir() else {}
        for name in names:
            self._check_inside(name)
            path = self.folder / name
            check_writable(path, self.option)  # a folder, device or FIFO in a file's place, a parent that is a file
            self._check_one(name, path, recorded)

    def _check_one(self, name: str, path: Path, recorded: dict[str, str]) -> None:
        check_replaceable(path, self.option, lambda target: self.is_ours(name, target, recorded), force=self.force)

    @contextlib.contextmanager
    def path(self, name: str) -> Iterator[Path]:
        """A temp path for folder/name (atomic_path), checked against the rule at the write; on success the
        new file's hash goes into the manifest. A link on the way is refused before the write (module doc)."""
        self._check_inside(name)
        recorded = self.recorded() if os.path.lexists(self.manifest) else {}
        with atomic_path(self.folder / name, name=self.option, force=self.force,
                         is_ours=lambda target: self.is_ours(name, target, recorded)) as tmp:
            yield tmp
            digest = _sha256(tmp)
        self._record(name, digest)

    def write_text(self, name: str, text: str) -> Path:
        with self.path(name) as tmp:
            tmp.write_text(text)
        return self.folder / name

    def _record(self, name: str, digest: str) -> None:
        """Add name -> digest to the manifest (read, update, rewrite atomically, under the folder's lock)."""
        from filelock import FileLock

        from fgrpo_sim.jsonl import dumps

        lock_path = self.lock
        self._refuse_link(lock_path, "its manifest's lock")  # checked before the write too; planted since?
        lock = FileLock(lock_path, thread_local=False)
        try:
            lock.acquire()
        except OSError as exc:  # a lock planted between the check and here: one line, not a raw errno
            raise ValueError(f"{self.option} {self.folder}: cannot take the manifest's lock {lock_path} "
                             f"({exc.strerror or exc}); remove it and run again") from None
        try:
            self._refuse_link(self.manifest, "its manifest")
            try:
                force, self.force = self.force, True  # a manifest we may not read is replaced by a sound one
                files = self.recorded()
            finally:
                self.force = force
            files[name] = digest
            text = dumps({"written_by": OWNER, "files": dict(sorted(files.items()))}, indent=1) + "\n"
            write_text_atomic(self.manifest, text)
            with contextlib.suppress(OSError):
                os.unlink(lock_path)  # while still held, as output_lock does: no empty lock file stays
        finally:
            lock.release()
