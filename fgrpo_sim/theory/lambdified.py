"""Lambdified closed forms kept on disk, so a command start need not import sympy to re-derive them.

Every numeric theory function is `sympy.lambdify` of a derivation (derivation and number cannot drift apart).
Deriving costs about 1.5 s of CPU per process (importing sympy, simplifying, the derivation's own checks), which
was most of `fgrpo plan`'s start. `lambdified(name, derive)` derives once and stores what lambdify generated:
the Python source of each function and, for every global name it uses, the module that name comes from. Later
processes rebuild the functions from that record, without sympy.

The record is keyed by the text of every theory module, the sympy, numpy and scipy versions and the name, so an
edited derivation (or a new sympy) derives afresh. A record is trusted only if every name resolves to the same
object lambdify used; anything else (a name from no known module, an unreadable or foreign file) derives and
returns the live function. Where: $FGRPO_CACHE_DIR (`packaged.cache_dir`), beside the compiled sampler.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Callable

#: where lambdify's names come from, in the order they are looked up
SOURCE_MODULES = ("numpy", "scipy.special", "math", "builtins")
FORMAT = "fgrpo-sim lambdified 1"


@cache
def _theory_fingerprint() -> str:
    """Hash of every theory module's text and the versions that change what lambdify writes."""
    digest = hashlib.sha256(FORMAT.encode())
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for package in ("sympy", "numpy", "scipy"):
        try:
            digest.update(f"{package}={version(package)}\0".encode())
        except PackageNotFoundError:
            digest.update(f"{package}=none\0".encode())
    return digest.hexdigest()[:24]


def _record_path(name: str) -> Path:
    from fgrpo_sim.packaged import cache_dir

    return cache_dir() / f"lambdified-{name}-{_theory_fingerprint()}.json"


def _is_record(path: Path) -> bool:
    try:
        return json.loads(path.read_text()).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def _describe(fn: Callable) -> dict | None:
    """Source and name origins of one lambdified function; None when a name cannot be traced to a module."""
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return None
    origins = {}
    for name in fn.__code__.co_names:
        if name not in fn.__globals__:
            continue  # an attribute name (x.real), not a global
        value = fn.__globals__[name]
        origin = next((m for m in SOURCE_MODULES
                       if getattr(importlib.import_module(m), name, _MISSING) is value), None)
        if origin is None:
            return None
        origins[name] = origin
    return {"name": fn.__name__, "source": source, "origins": origins}


_MISSING = object()


def _rebuild(entry: dict) -> Callable:
    namespace = {name: getattr(importlib.import_module(module), name) for name, module in entry["origins"].items()}
    exec(compile(entry["source"], f"<lambdified {entry['name']}>", "exec"), namespace)  # our own record
    return namespace[entry["name"]]


def _load(path: Path):
    try:
        record = json.loads(path.read_text())
        if record.get("format") != FORMAT or any(module not in SOURCE_MODULES for e in record["functions"]
                                                  for module in e["origins"].values()):
            return None
        functions = tuple(_rebuild(entry) for entry in record["functions"])
        return functions if record["tuple"] else functions[0]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, SyntaxError, ImportError):
        return None  # missing, torn or foreign: derive again


def lambdified(name: str, derive: Callable[[], Callable | tuple[Callable, ...]]):
    """derive() (a lambdified function or a tuple of them), from the disk record when one matches."""
    path = _record_path(name)
    loaded = _load(path)
    if loaded is not None:
        return loaded
    result = derive()
    as_tuple = isinstance(result, tuple)
    entries = [_describe(fn) for fn in (result if as_tuple else (result,))]
    if all(entries):
        _store(path, {"format": FORMAT, "tuple": as_tuple, "functions": entries})
    return result


def _store(path: Path, record: dict) -> None:
    from fgrpo_sim.atomic_io import write_text_atomic

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(record), is_ours=_is_record,
                          name="lambdified record")
    except (OSError, ValueError):
        pass  # a read-only cache only costs the next start its derivation
