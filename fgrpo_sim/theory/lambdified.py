"""Lambdified closed forms shipped as package source, so a command start neither derives nor imports sympy.

Every numeric theory function is `sympy.lambdify` of a derivation (derivation and number cannot drift apart).
Deriving costs about 1.5 s of CPU (importing sympy, simplifying, the derivation's own checks), so the numbers
run the source lambdify wrote, committed as one module per closed form in `theory/_generated/` and imported
like any other package code. Nothing is read from a cache folder or passed to `exec`: a file outside the
installed package never runs (docs/reliability.md, "Caches and compiled code").

A derivation registers itself with `@closed_form("NAME")` (its function returns lambdify's function, or a
tuple of them); `lambdified("NAME")` returns the generated function(s). `python -m fgrpo_sim.theory.generate`
(`make theory-generated`) rewrites `_generated/` from the registered derivations; tests/test_theory_generated.py
regenerates and compares, so an edited derivation without regenerated source fails the suite.
"""

from __future__ import annotations

import importlib
from typing import Callable

#: NAME -> its derivation (filled by `@closed_form` as the theory modules import)
DERIVATIONS: dict[str, Callable] = {}
GENERATED_PACKAGE = f"{__package__}._generated"


def closed_form(name: str):
    """Register the decorated derivation as closed form NAME (an identifier: it names a module)."""
    if not name.isidentifier():
        raise ValueError(f"name must be a Python identifier, got {name!r}")

    def register(derive: Callable) -> Callable:
        DERIVATIONS[name] = derive
        return derive

    return register


def lambdified(name: str):
    """The generated function of closed form NAME (a tuple where its derivation returns several)."""
    if name not in DERIVATIONS:
        raise ValueError(f"name must be a registered closed form ({', '.join(sorted(DERIVATIONS))}), got {name!r}")
    return importlib.import_module(f"{GENERATED_PACKAGE}.{name}").FORM
