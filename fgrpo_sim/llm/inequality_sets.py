"""A boxed inequality in one variable, read as the set it describes, before math-verify parses it (issue 45).

math-verify compares an interval with an inequality only one way (the interval answer for an inequality gold),
and not at all for a disjunction or an absolute value: `x<0 \\text{ or } x>1` against
`(-\\infty,0)\\cup(1,\\infty)` and `|x| \\le 1` against `[-1,1]` were graded wrong. This module rewrites

    x OP a, a OP x           ->  (a,\\infty), [a,\\infty), (-\\infty,a), (-\\infty,a]
    side or side or ...      ->  their intervals joined by \\cup ("or", \\text{or}, \\lor, \\vee; one variable)
    |x| < a, |x| \\le a       ->  (-a,a), [-a,a]
    |x| > a, |x| \\ge a       ->  (-\\infty,-a)\\cup(a,\\infty), (-\\infty,-a]\\cup[a,\\infty)

in the answer and the reference alike (the training reward and evaluation share `rewards._parse`). Anything
else (two variables, "and", a bound holding a comparison) is left to math-verify as written. The chained form
"a < x < b" is `rewards._CHAINED`'s.
"""

from __future__ import annotations

import re

_LESS = r"<|\\leq?(?:slant)?(?![A-Za-z])|\u2264"
_GREATER = r">|\\geq?(?:slant)?(?![A-Za-z])|\u2265"
_OP = rf"(?P<op>{_LESS}|{_GREATER})"
_BOUND = r"(?P<bound>(?:(?!<|>|\\[lg]eq?|\u2264|\u2265|=|\||\\[lr]vert|\\(?:lor|vee)\b|\\text\s*\{|\bor\b).)+?)"
_VAR = r"(?P<var>[A-Za-z])"
_SIDE_VAR_FIRST = re.compile(rf"\s*{_VAR}\s*{_OP}\s*{_BOUND}\s*")
_SIDE_BOUND_FIRST = re.compile(rf"\s*{_BOUND}\s*{_OP}\s*{_VAR}\s*")
_OR = re.compile(r"\\text\s*\{\s*or\s*\}|\\(?:lor|vee)(?![A-Za-z])|\bor\b")
_ABS = re.compile(rf"\s*(?:\\left\s*)?(?:\||\\lvert)\s*{_VAR}\s*(?:\\right\s*)?(?:\||\\rvert)\s*{_OP}\s*{_BOUND}\s*")


def _is_less(op: str) -> bool:
    return re.fullmatch(_LESS, op) is not None


def _closed(op: str) -> bool:
    return op not in ("<", ">")


def _side(text: str) -> tuple[str, str] | None:
    """(variable, interval) of one inequality "x OP a" or "a OP x"; None for anything else."""
    if match := _SIDE_VAR_FIRST.fullmatch(text):
        upper = _is_less(match["op"])  # x < a: a bounds x above
    elif match := _SIDE_BOUND_FIRST.fullmatch(text):
        upper = not _is_less(match["op"])  # a > x: a bounds x above
    else:
        return None
    bound, closed = match["bound"].strip(), _closed(match["op"])
    if re.fullmatch(r"[A-Za-z]", bound):  # "a < b" relates two variables: no set of one
        return None
    if upper:
        return match["var"], f"(-\\infty,{bound}{']' if closed else ')'}"
    return match["var"], f"{'[' if closed else '('}{bound},\\infty)"


def _negated(bound: str) -> str:
    return f"-{bound}" if re.fullmatch(r"\d+(?:\.\d+)?|\\frac\s*\{[^{}]*\}\s*\{[^{}]*\}|\\sqrt\s*\{[^{}]*\}", bound) \
        else f"-({bound})"


def as_interval_set(content: str) -> str | None:
    """The interval or union of intervals a one-variable inequality, disjunction or |x| bound describes (module
    docstring), or None when `content` is none of these."""
    if match := _ABS.fullmatch(content):
        bound, closed = match["bound"].strip(), _closed(match["op"])
        if _is_less(match["op"]):
            return f"{'[' if closed else '('}{_negated(bound)},{bound}{']' if closed else ')'}"
        return (f"(-\\infty,{_negated(bound)}{']' if closed else ')'}\\cup"
                f"{'[' if closed else '('}{bound},\\infty)")
    sides = [_side(part) for part in _OR.split(content)]
    if not all(sides) or len({var for var, _ in sides}) != 1:
        return None
    return "\\cup".join(interval for _, interval in sides)


__all__ = ["as_interval_set"]
