"""Input checks shared by every public function.

Errors name the parameter and its allowed range, so that the CLI can print them as one line.
"""

from __future__ import annotations

import contextlib
import math
from decimal import Decimal
from typing import Any, Iterator

import numpy as np


def _bound(x: Any) -> str:
    """A range bound as a reader reads it: 2^62 and 2^32 - 1, not 4611686018427387904 and 4294967295 (issue 46)."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool) and abs(int(x)) >= 2**16:
        for k, rest in ((int(x).bit_length() - 1, ""), (int(x).bit_length(), " - 1")):
            if abs(int(x)) == 2**k - (1 if rest else 0):
                return f"{'-' if x < 0 else ''}2^{k}{rest}"
    return _fmt(x)


def _fmt(x: Any) -> str:
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if isinstance(x, float):  # short form unless it hides the difference: 1.0000001 must not print as 1
        short = f"{x:g}"
        return short if float(short) == x else repr(x)
    return str(x)


def check_range(
    name: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> np.ndarray:
    """Return `value` as a float array, raising ValueError unless every element lies in the interval.

    The message reads e.g. "mu must be in [0, 1], got 1.5".
    """
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):  # a string, None, a ragged list: say which parameter, not numpy's words
        raise ValueError(f"{name} must be a number or an array of numbers, got {value!r}") from None
    lo_txt = ("(" if low_open else "[") + (_fmt(low) if low is not None else "-inf")
    hi_txt = (_fmt(high) if high is not None else "inf") + (")" if high_open else "]")
    bad = np.isnan(arr)
    if low is not None:
        bad |= (arr <= low) if low_open else (arr < low)
    if high is not None:
        bad |= (arr >= high) if high_open else (arr > high)
    if np.any(bad):
        first = arr[bad].flat[0] if arr.ndim else arr.item()
        raise ValueError(f"{name} must be in {lo_txt}, {hi_txt}, got {_fmt(float(first))}")
    return arr


def check_integer(name: str, value: Any, low: int | None = None, high: int | None = None) -> np.ndarray:
    """Return `value` as an int64 array, raising ValueError unless every element is an integer in [low, high]."""
    int64 = np.iinfo(np.int64)
    items = value if isinstance(value, (list, tuple)) else [value]
    huge = next((v for v in items if isinstance(v, int) and not isinstance(v, bool) and not int64.min <= v <= int64.max),
                None)
    if huge is not None:  # before numpy turns it into uint64 (wraps) or float64 (rounds)
        raise ValueError(f"{name} must be in [{_bound(low if low is not None else int64.min)}, "
                         f"{_bound(high if high is not None else int64.max)}], got {huge}")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if arr.dtype.kind == "O" and arr.size and all(isinstance(v, int) and not isinstance(v, bool) for v in arr.flat):
        # Python ints too large for int64: report the range, not a type error
        big = next(v for v in arr.flat if not int64.min <= v <= int64.max)
        raise ValueError(f"{name} must be in [{_bound(low if low is not None else int64.min)}, "
                         f"{_bound(high if high is not None else int64.max)}], got {big}")
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if np.any(bad):
            raise ValueError(f"{name} must be an integer, got {_fmt(float(arr[bad].flat[0]))}")
        too_big = np.abs(arr) >= 2.0**63
        if np.any(too_big):
            raise ValueError(f"{name} must be in [{_bound(low if low is not None else int64.min)}, "
                             f"{_bound(high if high is not None else int64.max)}], got {_fmt(float(arr[too_big].flat[0]))}")
    elif arr.dtype.kind == "u" and arr.size and int(arr.max()) > int64.max:  # >= 2^63: would wrap negative
        raise ValueError(f"{name} must be in [{_bound(low if low is not None else int64.min)}, "
                         f"{_bound(high if high is not None else int64.max)}], got {int(arr.max())}")
    elif arr.dtype.kind not in "iub":
        shown = arr.flat[0] if arr.size and arr.ndim else value
        shown = shown.item() if isinstance(shown, np.generic) else shown
        raise ValueError(f"{name} must be an integer, got {shown!r}")
    arr = arr.astype(np.int64)
    bad = np.zeros(arr.shape, dtype=bool)
    if low is not None:
        bad |= arr < low
    if high is not None:
        bad |= arr > high
    if np.any(bad):  # reported as an integer (check_range would print 1e+11)
        lo_txt = _bound(low) if low is not None else "-inf"
        hi_txt = _bound(high) if high is not None else "inf"
        raise ValueError(f"{name} must be in [{lo_txt}, {hi_txt}], got {int(arr[bad].flat[0])}")
    return arr


def shorten(value: Any, limit: int = 80) -> str:
    """repr of `value` cut to about `limit` characters, for messages that echo user input."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def check_choice(name: str, value: str, choices: tuple[str, ...] | list[str]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(str, choices))}, got {value!r}")
    return value


#: Longest integer literal any option or input field accepts (Python's int() refuses longer ones, and
#: every range in this package is far below it).
MAX_INT_DIGITS = 4300


def parse_list(name: str, text: str, kind: type = float, *, unique: bool = True) -> list:
    """Values of a comma-separated command-line list such as "2,4,8": kind int, float, str or Decimal (numbers
    with the digits as typed, for `theory`'s 1 - mu near 1; a repeat is still judged by the float value).

    Integers may be written as integral floats ("1e3"); spaces around a value are ignored, but an empty
    element ("4,,16", "4,16,") is an error: it is almost always a typo for a missing value. Ranges are
    checked by the caller (with check_range / check_integer), so this only guarantees the type.
    A list of choices (seeds, group sizes, gammas, ...) must not repeat a value ("0,0" or "1,1.0"):
    a repeat would silently run or count the same thing twice. `unique=False` is for fixed-field
    tuples such as Beta(A, B), whose fields may be equal.
    """
    what = LIST_KINDS[kind]
    parts = [part.strip() for part in str(text).split(",")]
    if not any(parts):
        raise ValueError(f"{name} must list at least one value, got {text!r}")
    if not all(parts):
        raise ValueError(f"{name} has an empty element (two commas in a row, or one at an end); "
                         f"give one value between commas, got {text!r}")
    values = []
    for part in parts:
        digits = part.lstrip("+-")
        if kind is int and len(digits) > MAX_INT_DIGITS and digits.isdigit():
            # int() would refuse it with Python's conversion-limit message; say which option and range
            raise ValueError(f"{name} values must be integers of at most {MAX_INT_DIGITS} digits, "
                             f"got one of {len(digits)} digits")
        try:
            if kind is str:
                values.append(part)
            elif kind is float:
                values.append(float(part))
            elif kind is Decimal:
                float(part)  # what float() refuses (hex, "snan") is no number here either
                values.append(Decimal(part))
            else:
                try:
                    values.append(int(part))
                except ValueError:
                    number = float(part)
                    if not math.isfinite(number) or number != int(number):
                        raise ValueError(part) from None
                    values.append(int(number))
        except (ValueError, ArithmeticError):  # decimal.InvalidOperation is an ArithmeticError
            raise ValueError(f"{name} must be a comma-separated list of {what}, got {shorten(text)}") from None
    if unique:
        seen = set()
        for value in values:
            key = float(value) if kind is Decimal else value  # .5 and 5e-1 are one number, as 1 and 1.0 are
            if key in seen:  # 0 and 0.0, 1e3 and 1000 are the same value
                raise ValueError(f"{name} lists {_fmt(key) if kind in (float, Decimal) else value} twice; "
                                 f"give each value once, got {text!r}")
            seen.add(key)
    return values


#: The element kinds of a list option and their word in messages and `--help` (NUMBERS, INTEGERS, NAMES).
LIST_KINDS = {int: "integers", float: "numbers", Decimal: "numbers", str: "names"}


class CommaList:
    """The CLI's one comma-separated list type: `typer.Option("2,4", "--n", parser=CommaList("--n", int))` hands
    the command a list, and a bad list fails while click parses, as one line naming the option (`parse_list`'s
    rules: no empty element, no repeated value unless `unique=False`). Ranges stay with the library's checks,
    which the Python API shares. A plain callable, not a click.ParamType: typer >= 0.20 converts values with
    pydantic and has no `click_type=`, while `parser=` takes a callable on every typer we support."""

    def __init__(self, name: str, kind: type = float, *, unique: bool = True, words: tuple[str, ...] = (),
                 one: str | None = None):
        # words: whole values that stand for a list the command builds (`passk --k auto`); one: why this command
        # takes a single value of a name that is a list elsewhere (`--optimizer`: a list where a command sweeps)
        self.name, self.kind, self.unique, self.words, self.one = name, kind, unique, tuple(words), one
        self.__name__ = LIST_KINDS[kind]  # typer 0.16 shows it in --help

    def __call__(self, value: Any) -> list:
        if isinstance(value, (list, tuple)):  # already converted (click converts a default once more)
            return list(value)
        if str(value).strip().lower() in self.words:
            return [str(value).strip().lower()]
        try:
            values = parse_list(self.name, value, self.kind, unique=self.unique)
        except ValueError as exc:
            if self.words and str(exc).startswith(f"{self.name} must be a comma-separated list"):
                raise ValueError(f"{self.name} must be {', '.join(self.words)} or a comma-separated list of "
                                 f"{LIST_KINDS[self.kind]}, got {shorten(value)}") from None
            raise
        if self.one is not None and len(values) > 1:
            raise ValueError(f"{self.name} takes one value here ({self.one}), got {shorten(value)}")
        return values


def broadcast_named(**arrays: Any) -> list[np.ndarray]:
    """np.broadcast_arrays of the keyword arguments, with a ValueError naming them when the shapes clash."""
    try:
        return np.broadcast_arrays(*arrays.values())
    except ValueError:
        shapes = ", ".join(f"{name} {np.shape(value)}" for name, value in arrays.items())
        raise ValueError(f"{', '.join(arrays)} must broadcast to one shape, got shapes {shapes}") from None


#: Largest Beta shape parameter accepted: numpy's Beta sampler (a ratio of Gamma draws) stays exact up to
#: here; beyond, A + B overflows near 1e308 and every draw comes out 0.
BETA_SHAPE_MAX = 1e15


def check_beta_shapes(name: str, a: Any, b: Any, high: float = BETA_SHAPE_MAX) -> tuple[float, float]:
    """(a, b) of a Beta(a, b) difficulty distribution, each in (0, high]; `name` is the option, e.g. "--beta"."""
    a = float(check_range(f"{name} A", a, 0.0, high, low_open=True))
    b = float(check_range(f"{name} B", b, 0.0, high, low_open=True))
    return a, b


@contextlib.contextmanager
def options_named(**options: str) -> Iterator[None]:
    """Inside, a ValueError that starts with a parameter's name is re-raised naming the user's option
    instead (`options_named(rare_masses="--rare-mass")`): the API names its parameters, the CLI its options,
    from the one check, so a command never answers with a name its user never typed."""
    try:
        yield
    except ValueError as exc:
        text = str(exc)
        for param in sorted(options, key=len, reverse=True):  # rare_mass_x before rare_mass
            if text.startswith(param + " "):
                raise ValueError(options[param] + text[len(param):]) from None
        raise


def integral(value: Any) -> int | None:
    """`value` as an int when it is a whole number read from JSON (4, or an integral float such as 4.0 that
    another tool wrote), else None; booleans are not numbers here. Counts accept both spellings."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) <= 2**53:
        return int(value)  # beyond 2^53 a float no longer holds every integer: not a count we can trust
    return None


def finite_number(value: Any, *, text: bool = False) -> float | None:
    """`value` read from a file as a finite float, else None: the one conversion of every number a reader
    takes from JSON (and, with `text`, from a CSV field or a JSON string). Booleans, None, NaN, +-inf, text
    that is no number and integers beyond a float's range (10**400: float() raises OverflowError) are None."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)) or (isinstance(value, str) and not text):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def file_number(value: Any, where: str, name: str, low: float | None = None, high: float | None = None, *,
                integer: bool = False, text: bool = False, what: str | None = None) -> float | int:
    """A number read from a file, converted and checked: a float in [low, high] (`finite_number`), or with
    `integer` an int (an integral float such as 4.0 too, `integral`) in [low, high], at most 2^63 - 1 (numpy's
    int64). Else ValueError "WHERE: NAME must be WHAT in [low, high], got X", `where` naming file and line."""
    int64_max = int(np.iinfo(np.int64).max)
    top = high if high is not None or not integer else int64_max
    number = integral(value) if integer else finite_number(value, text=text)
    inside = number is not None and (low is None or number >= low) and (top is None or number <= top)
    if not inside:
        bounds = (f" in [{_fmt(low)}, {'2^63 - 1' if top == int64_max else _fmt(top)}]" if low is not None and top is not None
                  else f" >= {_fmt(low)}" if low is not None else f" <= {_fmt(top)}" if top is not None else "")
        kind = what or ("an integer" if integer else "a number")
        raise ValueError(f"{where}: {name} must be {kind}{bounds}, got {shorten(value)}")
    return number
