"""Defaults read from the code's source (ast), for claims whose module is slow to import (torch, scipy,
matplotlib): the value the code would use, without importing it."""

from __future__ import annotations

import ast
from functools import cache

from doc_census import ROOT


@cache
def source_tree(path: str) -> ast.Module:
    """The parsed source of the repository file `path` (fgrpo_sim/...)."""
    return ast.parse((ROOT / path).read_text())


@cache
def module_assignments(path: str) -> dict[str, ast.AST]:
    """name -> value expression of each top-level `NAME = value` of `path`."""
    return {target.id: node.value for node in source_tree(path).body if isinstance(node, ast.Assign)
            for target in node.targets if isinstance(target, ast.Name)}


def _literal(node: ast.AST, constants: dict[str, ast.AST]):
    """A value written as a literal, a module constant (NAME) or an item of one (NAME["key"])."""
    if isinstance(node, ast.Name):
        return _literal(constants[node.id], constants)
    if isinstance(node, ast.Subscript):
        return _literal(node.value, constants)[ast.literal_eval(node.slice)]
    return ast.literal_eval(node)


def _named(path: str, kind, name: str):
    return next(n for n in ast.walk(source_tree(path)) if isinstance(n, kind) and n.name == name)


def function_default(path: str, function: str, parameter: str):
    """The default of `parameter` of the function (or method) `function` defined in `path`."""
    args = _named(path, ast.FunctionDef, function).args
    positional = args.posonlyargs + args.args
    defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):], args.defaults))
    defaults |= {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
    return ast.literal_eval(defaults[parameter])


@cache
def dataclass_defaults(path: str, cls: str) -> dict:
    """The field defaults of the top-level dataclass `cls` in `path`. A default that is no literal (a field
    factory, an imported name) is left out; asking for it is a KeyError."""
    (node,) = [n for n in source_tree(path).body if isinstance(n, ast.ClassDef) and n.name == cls]
    out = {}
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            try:
                out[stmt.target.id] = _literal(stmt.value, module_assignments(path))
            except (ValueError, KeyError):
                continue
    return out


def field_default(path: str, cls: str, field: str):
    """The default of a dataclass field `field: type = value` of class `cls` in `path`."""
    return dataclass_defaults(path, cls)[field]


def module_constant(path: str, name: str):
    """The value a module assigns to `name` at its top level (`DEFAULT_SEEDS = 10`, `X = OTHER["key"]`)."""
    return _literal(module_assignments(path)[name], module_assignments(path))
