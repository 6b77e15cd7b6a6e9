"""Nothing from a cache folder runs as code (issue 43, "Code from the cache is executed"; docs/reliability.md,
"Caches and compiled code"): the theory's closed forms are package source (no record is read, nothing is
exec'd), and the compiled sampler is loaded only from this user's private folder after its owner, mode and
recorded content hash check out. Planted records and libraries, special files and foreign owners in the cache
never run, never block, and leave the numbers as they were.

The planted theory records sit where the cache of issue 42's code looked (`lambdified-NAME-FP.json`, FP hashed
from the theory sources and library versions, so anyone could compute it); the planted libraries where it
looked (`count_sampler_KEY.so`) and in the new private folder in every untrusted shape.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import stat
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

from fgrpo_sim.sim.categorical import compiled

ROOT = Path(__file__).resolve().parent.parent
THEORY = ROOT / "fgrpo_sim" / "theory"
OLD_FORMAT = "fgrpo-sim lambdified 1"
OLD_NAMES = ("activity_kernel", "scaled_slope", "step_sign", "lr_multiplier-mean_abs_advantage",
             "lr_multiplier-variance", "inclusion", "mass_changes")
COMPILER = shutil.which(os.environ.get("CC", "cc"))
needs_compiler = pytest.mark.skipif(COMPILER is None, reason="no C compiler to build a planted library")


def _old_record_paths(cache: Path) -> list[Path]:
    """Where the on-disk lambdify cache (removed in issue 43) kept its records: anyone can compute the name."""
    digest = hashlib.sha256(OLD_FORMAT.encode())
    for path in sorted(THEORY.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for package in ("sympy", "numpy", "scipy"):
        try:
            digest.update(f"{package}={version(package)}\0".encode())
        except PackageNotFoundError:
            digest.update(f"{package}=none\0".encode())
    fp = digest.hexdigest()[:24]
    return [cache / "fgrpo-sim" / f"lambdified-{name}-{fp}.json" for name in OLD_NAMES]


def _fgrpo(cache: Path, *args: str, timeout: float = 300, **env) -> subprocess.CompletedProcess:
    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "FGRPO_CACHE_DIR": str(cache),
               **env}
    return subprocess.run([sys.executable, "-m", "fgrpo_sim", *args], capture_output=True, text=True, env=environ,
                          timeout=timeout)


def _tail_miss(n: int, mu: float, tau: float) -> float:
    return (1 - tau) ** n - (mu - tau) ** n - (1 - mu) ** n  # Lemma 3.1 as printed (no cancellation here)


TAIL_MISS = ["theory", "tail-miss", "--n", "8", "--mu", "0.5", "--tau", "0.05", "--json"]


def test_a_planted_theory_record_never_runs(tmp_path):
    """A record whose module-level code writes a marker and whose function returns a constant: the old cache
    exec'd it (the marker appeared, the command printed 0.0 with exit 0)."""
    marker = tmp_path / "ran"
    source = (f"import pathlib\npathlib.Path({str(marker)!r}).write_text('planted')\n"
              "def planted(*args, **kwargs):\n    return 0.0\n")
    for path in _old_record_paths(tmp_path / "cache"):
        path.parent.mkdir(parents=True, exist_ok=True)
        functions = [{"name": "planted", "source": source, "origins": {}}] * (2 if "mass_changes" in path.name else 1)
        path.write_text(json.dumps({"format": OLD_FORMAT, "tuple": "mass_changes" in path.name,
                                    "functions": functions}))
        path.chmod(0o666)  # as the corpus found it: written by anyone
    result = _fgrpo(tmp_path / "cache", *TAIL_MISS)
    assert result.returncode == 0, result.stderr
    assert not marker.exists()
    row = json.loads(result.stdout)
    assert row["probability"] == pytest.approx(_tail_miss(8, 0.5, 0.05), rel=1e-12)
    lr = _fgrpo(tmp_path / "cache", "theory", "lr-multiplier", "--gamma", "0.5", "--json")
    assert lr.returncode == 0 and not marker.exists(), lr.stderr
    beta = lambda a, b: math.gamma(a) * math.gamma(b) / math.gamma(a + b)  # noqa: E731
    assert json.loads(lr.stdout)["multiplier"] == pytest.approx(beta(1.5, 2.0) / beta(1.5, 1.5), rel=1e-12)  # App. N


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_in_the_cache_never_blocks(tmp_path):
    """FIFOs in place of every theory record and of the kept library and its record: the old cache opened the
    record to read it and hung every theory command."""
    cache = tmp_path / "cache"
    for path in _old_record_paths(cache):
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)
    result = _fgrpo(cache, *TAIL_MISS, timeout=120)  # a hang raises TimeoutExpired (and the child is killed)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["probability"] == pytest.approx(_tail_miss(8, 0.5, 0.05), rel=1e-12)


# ---- the compiled sampler --------------------------------------------------------------------------------

GOOD = "int which(void) { return 1; }\n"  # what load_library is asked to build in the unit tests below
PLANTED = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void planted(void) {
    const char *path = getenv("FGRPO_TEST_MARKER");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f) { fputs("planted library ran", f); fclose(f); }
}
int which(void) { return 666; }
"""


@pytest.fixture(scope="module")
def planted_library(tmp_path_factory) -> Path:
    """A shared library whose constructor writes $FGRPO_TEST_MARKER when it is loaded."""
    if COMPILER is None:
        pytest.skip("no C compiler to build a planted library")
    folder = tmp_path_factory.mktemp("planted")
    (folder / "planted.c").write_text(PLANTED)
    subprocess.run([COMPILER, "-shared", "-fPIC", str(folder / "planted.c"), "-o", str(folder / "planted.so")],
                   check=True, capture_output=True)
    return folder / "planted.so"


def _plant(dest: Path, library: Path, record: bool = True, mode: int = 0o600) -> None:
    """The planted library as `dest`, with a record of its true hash beside it (what a forger would write)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(library, dest)
    dest.chmod(mode)
    if record:
        dest.with_suffix(".sha256").write_text(hashlib.sha256(library.read_bytes()).hexdigest() + "\n")
        dest.with_suffix(".sha256").chmod(mode)


def _private(cache: Path) -> Path:
    return cache / "fgrpo-sim" / f"native-{os.geteuid()}"


def _name(source: str) -> str:
    return f"count_sampler_{compiled.library_key(source)}.so"


def _untrusted_folder_mode(cache: Path, library: Path) -> None:
    folder = _private(cache)
    _plant(folder / _name(GOOD), library)
    folder.chmod(0o777)


def _untrusted_file_mode(cache: Path, library: Path) -> None:
    _plant(_private(cache) / _name(GOOD), library, mode=0o666)
    _private(cache).chmod(0o700)


def _linked_file(cache: Path, library: Path) -> None:
    _plant(cache / "elsewhere" / _name(GOOD), library)
    folder = _private(cache)
    folder.mkdir(mode=0o700, parents=True)
    (folder / _name(GOOD)).symlink_to(cache / "elsewhere" / _name(GOOD))
    (folder / _name(GOOD)).with_suffix(".sha256").symlink_to((cache / "elsewhere" / _name(GOOD)).with_suffix(".sha256"))


def _linked_folder(cache: Path, library: Path) -> None:
    _plant(cache / "elsewhere" / _name(GOOD), library)
    (cache / "elsewhere").chmod(0o700)
    _private(cache).parent.mkdir(parents=True)
    _private(cache).symlink_to(cache / "elsewhere")


def _no_record(cache: Path, library: Path) -> None:
    _plant(_private(cache) / _name(GOOD), library, record=False)


def _wrong_record(cache: Path, library: Path) -> None:
    _plant(_private(cache) / _name(GOOD), library, record=False)
    (_private(cache) / _name(GOOD)).with_suffix(".sha256").write_text("0" * 64 + "\n")


def _old_location(cache: Path, library: Path) -> None:
    _plant(cache / "fgrpo-sim" / _name(GOOD), library, record=False)


PLANTS = {"old-location": _old_location, "no-record": _no_record, "wrong-record": _wrong_record,
          "folder-writable-by-all": _untrusted_folder_mode, "file-writable-by-all": _untrusted_file_mode,
          "file-is-a-link": _linked_file, "folder-is-a-link": _linked_folder}


@pytest.mark.parametrize("plant", PLANTS)
def test_a_planted_library_is_never_loaded(tmp_path, monkeypatch, planted_library, plant):
    cache, marker = tmp_path / "cache", tmp_path / "ran"
    monkeypatch.setenv("FGRPO_CACHE_DIR", str(cache))
    monkeypatch.setenv("FGRPO_TEST_MARKER", str(marker))
    PLANTS[plant](cache, planted_library)
    assert compiled.load_library(GOOD).which() == 1  # built afresh, not the planted one
    assert not marker.exists()


def test_a_library_owned_by_another_user_is_refused_even_by_root(tmp_path, monkeypatch, planted_library):
    """A file or folder owned by someone else is never trusted. As root the planted files really belong to
    another uid (nobody); otherwise the test moves this process's uid instead, which is the same comparison."""
    cache, marker = tmp_path / "cache", tmp_path / "ran"
    monkeypatch.setenv("FGRPO_CACHE_DIR", str(cache))
    monkeypatch.setenv("FGRPO_TEST_MARKER", str(marker))
    folder = _private(cache)
    _plant(folder / _name(GOOD), planted_library)
    if os.geteuid() == 0:
        for path in (folder, folder / _name(GOOD), (folder / _name(GOOD)).with_suffix(".sha256")):
            os.chown(path, 65534, 65534)
    else:
        real = os.geteuid()
        monkeypatch.setattr(compiled, "_euid", lambda: real + 1)
        folder.rename(_private(cache).parent / f"native-{real + 1}")
        folder = _private(cache).parent / f"native-{real + 1}"
    assert compiled.refusal(os.stat(folder), "folder").startswith("owned by uid")
    assert compiled.load_library(GOOD).which() == 1
    assert not marker.exists()
    if os.geteuid() == 0:  # the file alone foreign, in a folder of ours
        os.chown(folder, 0, 0)
        assert compiled.load_library(GOOD).which() == 1
        assert not marker.exists()


def test_the_trust_rule_names_what_it_refuses(tmp_path):
    folder = tmp_path / "f"
    folder.mkdir(mode=0o700)
    folder.chmod(0o700)
    assert compiled.refusal(os.stat(folder), "folder") is None
    folder.chmod(0o770)
    assert compiled.refusal(os.stat(folder), "folder") == "writable by others (mode 770)"
    assert compiled.refusal(os.stat(folder), "file") == "not a regular file"
    file = tmp_path / "lib.so"
    file.write_bytes(b"")
    file.chmod(0o602)
    assert compiled.refusal(os.stat(file), "file") == "writable by others (mode 602)"


SPECIAL = ["fifo-library", "fifo-record", "folder-library", "empty-library-with-its-record", "torn-record"]


@pytest.mark.parametrize("entry", SPECIAL)
def test_special_or_malformed_entries_are_built_again_without_blocking(tmp_path, monkeypatch, entry):
    if COMPILER is None:
        pytest.skip("no C compiler")
    cache = tmp_path / "cache"
    monkeypatch.setenv("FGRPO_CACHE_DIR", str(cache))
    folder = _private(cache)
    folder.mkdir(mode=0o700, parents=True)
    library, record = folder / _name(GOOD), (folder / _name(GOOD)).with_suffix(".sha256")
    if entry.startswith("fifo"):
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this system")
        os.mkfifo(library if entry == "fifo-library" else record, 0o600)
        (record if entry == "fifo-library" else library).write_text("x")
    elif entry == "folder-library":
        library.mkdir()
    elif entry == "empty-library-with-its-record":
        library.write_bytes(b"")
        record.write_text(hashlib.sha256(b"").hexdigest() + "\n")
    else:
        compiled.load_library(GOOD)
        record.write_text(record.read_text()[:20])
    assert compiled.load_library(GOOD).which() == 1
    if entry != "folder-library":  # a folder in its place stays; every other entry is replaced by a sound build
        assert stat.S_ISREG(os.lstat(library).st_mode)
        assert record.read_text().strip() == hashlib.sha256(library.read_bytes()).hexdigest()


@needs_compiler
def test_simulate_categorical_never_loads_a_planted_sampler(tmp_path, planted_library):
    """End to end: the real kernel's name, planted where the old cache loaded it from (the corpus saw its
    constructor run under `simulate categorical`) and in a private folder that others may write."""
    from fgrpo_sim.sim.categorical.sampling import kernel_source

    cache, marker = tmp_path / "cache", tmp_path / "ran"
    name = _name(kernel_source())
    _plant(cache / "fgrpo-sim" / name, planted_library, mode=0o666)
    result = _fgrpo(cache, "simulate", "categorical", "--out", str(tmp_path / "out.csv"), "--n", "4", "--gamma", "0",
                    "--seeds", "0", "--steps", "2", "--stride", "1", "--num-actions", "20", "--num-correct", "4",
                    "--backend", "native", "--device", "cpu", "--no-progress", FGRPO_TEST_MARKER=str(marker))
    assert not marker.exists()
    assert result.returncode == 0, result.stderr
    assert (_private(cache) / name).is_file()  # the real kernel, built and kept in the private folder


@needs_compiler
def test_each_load_is_the_library_it_checked(tmp_path, monkeypatch):
    """dlopen matches a name against what it loaded before opening anything: two different builds loaded in one
    process (kept or fresh) must each be their own library, never an earlier one under a reused name."""
    monkeypatch.setenv("FGRPO_CACHE_DIR", str(tmp_path / "cache"))
    other = "int which(void) { return 2; }\n"
    for _ in range(2):  # built and kept, then loaded from what was kept
        assert compiled.load_library(GOOD).which() == 1
        assert compiled.load_library(other).which() == 2
