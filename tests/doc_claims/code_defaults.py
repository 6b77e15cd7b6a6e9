"""Defaults read from the code's source (ast), for claims whose module is slow to import (torch, scipy,
matplotlib): the value the code would use, without importing it."""

from __future__ import annotations

import ast
from functools import cache

from doc_census import ROOT


@cache
def _tree(path: str) -> ast.Module:
    return ast.parse((ROOT / path).read_text())


def _named(path: str, kind, name: str):
    return next(n for n in ast.walk(_tree(path)) if isinstance(n, kind) and n.name == name)


def function_default(path: str, function: str, parameter: str):
    """The default of `parameter` of the function (or method) `function` defined in `path`."""
    args = _named(path, ast.FunctionDef, function).args
    positional = args.posonlyargs + args.args
    defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):], args.defaults))
    defaults |= {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
    return ast.literal_eval(defaults[parameter])


def field_default(path: str, cls: str, field: str):
    """The default of a dataclass field `field: type = value` of class `cls` in `path`."""
    return next(ast.literal_eval(n.value) for n in _named(path, ast.ClassDef, cls).body
                if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", "") == field)


def module_constant(path: str, name: str):
    """The literal a module assigns to `name` at its top level (`DEFAULT_SEEDS = 10`)."""
    node = next(n for n in _tree(path).body
                if isinstance(n, ast.Assign) and [getattr(t, "id", "") for t in n.targets] == [name])
    return ast.literal_eval(node.value)
