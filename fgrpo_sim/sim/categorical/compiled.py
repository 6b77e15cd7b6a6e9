"""The compiled kernel (`kernel.c`): built once per user and machine, loaded only when it is provably ours.

Loading a shared library runs its code (its constructors run inside dlopen), so a cache folder that someone else
can write must never hand us one. The trust rule (docs/reliability.md, "Caches and compiled code"):

- The kept build lives in `$FGRPO_CACHE_DIR/fgrpo-sim/native-<euid>/`, created 0700. It is used only while it is a
  real folder (not a link), owned by the effective user and writable by nobody else; everything below is opened
  relative to that checked folder's descriptor, so swapping the folder afterwards changes nothing.
- The library `count_sampler_<key>.so` and its record `count_sampler_<key>.sha256` (the library's SHA-256, written
  when this user built it) must be regular files there, owned by the effective user, writable by nobody else.
  They are opened without following links and without blocking (a FIFO or a folder in their place never hangs).
- The library's bytes, read once through that descriptor, must hash to the record; those very bytes are then
  loaded, from a fresh 0700 temporary folder of this process (nobody else can swap them before dlopen). Key: a hash of the kernel's text, the machine and the CPU flags (an edited kernel.c compiles
  anew; a -march=native build never runs on another CPU).
- Root is no exception: a file or folder owned by another user is refused.

Whatever fails the rule is never loaded: the kernel is built again into the private folder, or, where that folder
cannot be trusted, into a fresh temporary folder of this process only; without a compiler the caller falls back
to the torch sampler (same law).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from fgrpo_sim.packaged import cache_dir

MAX_LIBRARY_BYTES = 64 << 20  # far above the kernel's ~0.1 MB: a larger file is not our build
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def _euid() -> int:
    return os.geteuid()


def _cpu_signature() -> str:
    """CPU model and feature flags (Linux), so a cached -march=native build never runs on another CPU."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor()
    keep = [ln for ln in lines if ln.startswith(("model name", "flags"))][:2]
    return "\n".join(keep)


def library_key(source: str) -> str:
    return hashlib.sha256((source + platform.machine() + sys.platform + _cpu_signature()).encode()).hexdigest()[:16]


def private_folder() -> Path:
    """This user's folder of kept builds (it may not exist yet, or fail the rule)."""
    return cache_dir() / f"native-{_euid()}"


def library_path(source: str) -> Path:
    """Where the build of `source` is kept: a changed kernel, machine or CPU gets a new file."""
    return private_folder() / f"count_sampler_{library_key(source)}.so"


def refusal(st: os.stat_result, kind: str) -> str | None:
    """Why a file with this stat may not be trusted (None: it may). kind: "folder" or "file"."""
    is_kind = stat.S_ISDIR(st.st_mode) if kind == "folder" else stat.S_ISREG(st.st_mode)
    if not is_kind:
        return f"not a regular {kind}"
    if st.st_uid != _euid():
        return f"owned by uid {st.st_uid}, not {_euid()}"
    if st.st_mode & 0o022:
        return f"writable by others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _open_private_folder() -> int | None:
    """A descriptor of this user's private folder (created 0700 when missing), or None when it fails the rule."""
    folder = private_folder()
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            pass
        fd = os.open(folder, _OPEN_FLAGS | os.O_DIRECTORY)
    except OSError:
        return None  # missing and not creatable, a link, not a folder: build for this process only
    if refusal(os.fstat(fd), "folder") is not None:
        os.close(fd)
        return None
    return fd


def _open_trusted(name: str, dir_fd: int, limit: int) -> int | None:
    """A descriptor of `name` in the folder `dir_fd` when it is a regular file that passes the rule, else None."""
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None  # missing, a link (O_NOFOLLOW), unreadable
    st = os.fstat(fd)
    if refusal(st, "file") is not None or st.st_size > limit:
        os.close(fd)
        return None
    return fd


def _read_all(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while chunk := os.pread(fd, 1 << 20, size):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise OSError("file grew past its limit")
    return b"".join(chunks)


def _load_private_copy(data: bytes) -> ctypes.CDLL:
    """dlopen `data` (bytes already checked) from a fresh folder of this process: mkdtemp makes it 0700 and ours,
    so no one else can change the file between the check and the load, and its new name keeps dlopen from
    handing back a library it loaded earlier under the same name (it matches names before it opens)."""
    with tempfile.TemporaryDirectory(prefix="fgrpo-sim-native-") as tmp:
        path = Path(tmp) / "count_sampler.so"
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as handle:
            handle.write(data)
        return ctypes.CDLL(str(path))  # mapped now: removing the folder leaves the library loaded


def _load_kept(dir_fd: int, name: str) -> ctypes.CDLL | None:
    """The kept library NAME when it and its record pass the rule and its bytes match the record, else None."""
    record_fd = _open_trusted(name.removesuffix(".so") + ".sha256", dir_fd, limit=128)
    if record_fd is None:
        return None
    try:
        recorded = _read_all(record_fd, 128).decode("ascii", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(record_fd)
    lib_fd = _open_trusted(name, dir_fd, MAX_LIBRARY_BYTES)
    if lib_fd is None:
        return None
    try:
        data = _read_all(lib_fd, MAX_LIBRARY_BYTES)
        if hashlib.sha256(data).hexdigest() != recorded:
            return None  # torn, empty, edited or not the build the record describes: build again
        return _load_private_copy(data)
    except OSError:
        return None  # our own file, yet not a library dlopen accepts (e.g. empty): build again
    finally:
        os.close(lib_fd)


def _compile(source: str, folder: Path) -> Path:
    """kernel.c compiled into `folder` (a fresh private temporary folder); RuntimeError without a compiler."""
    src, out = folder / "count_sampler.c", folder / "count_sampler.so"
    src.write_text(source)
    compiler = os.environ.get("CC", "cc")
    # -fno-trapping-math lets gcc turn the clamps of exp into vector min/max; -march=native doubles the vector
    # width where AVX2 exists (the key includes the CPU's flags)
    base_cmd = [compiler, "-O3", "-fno-math-errno", "-fno-trapping-math", "-shared", "-fPIC", "-std=c11",
                str(src), "-o", str(out)]
    result = subprocess.run(base_cmd[:2] + ["-march=native"] + base_cmd[2:], capture_output=True, text=True)
    if result.returncode != 0:
        result = subprocess.run(base_cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "compiler failed")
    return out


def _keep(dir_fd: int, name: str, data: bytes) -> None:
    """Write `data` as NAME in the private folder (0600, via a temp name and rename, relative to its descriptor)."""
    tmp = f".{name}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def load_library(source: str) -> ctypes.CDLL:
    """The compiled `source`, loaded under the trust rule (module docstring); RuntimeError without a compiler."""
    name = f"count_sampler_{library_key(source)}.so"
    dir_fd = _open_private_folder()
    try:
        if dir_fd is not None:
            kept = _load_kept(dir_fd, name)
            if kept is not None:
                return kept
        # mkdtemp: a new folder, mode 0700, ours; the build's bytes are read once, then kept and loaded
        with tempfile.TemporaryDirectory(prefix="fgrpo-sim-native-") as tmp:
            built = _compile(source, Path(tmp))
            lib_fd = os.open(built, _OPEN_FLAGS)
            try:
                if refusal(os.fstat(lib_fd), "file") is not None:
                    raise RuntimeError(f"the kernel build in {tmp} is not this user's private file")
                data = _read_all(lib_fd, MAX_LIBRARY_BYTES)
                if dir_fd is not None:
                    try:  # library first, record last: a record always describes a complete library
                        _keep(dir_fd, name, data)
                        _keep(dir_fd, name.removesuffix(".so") + ".sha256",
                              (hashlib.sha256(data).hexdigest() + "\n").encode())
                    except OSError:
                        pass  # a full or read-only cache only costs the next start a build
            finally:
                os.close(lib_fd)
        return _load_private_copy(data)
    finally:
        if dir_fd is not None:
            os.close(dir_fd)
