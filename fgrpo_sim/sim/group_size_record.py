"""The checked reader of one saved group-size report (`fgrpo simulate group-size --json`, read back by `--from`,
the figure and the docs from the committed record): every field typed and in range before any is printed.

`--from` once checked only that the keys exist, so NaN, 1e400 or 16.5 as the predicted N were printed with
exit 0, and a null, a short interval or a dict where a list belongs crashed the formatter (issue 43). Here each
field has a kind; a record that breaks one is a ValueError naming the file, line and field. The record's own
consistency is checked too: the per-N lists are as long as `N`, the lowest N is one of `N`.

A report's fields as `group_size_report.setting_reports` writes them: required (REPORT_KEYS) or optional, each
checked where present; unknown fields are carried along unchecked (a newer writer may add one).
"""

from __future__ import annotations

from typing import Any, Callable

from fgrpo_sim.validation import file_number, shorten

Check = Callable[[Any, str, str, dict], Any]  # (value, where, field name, the whole report) -> value as used


def _number(low=None, high=None, *, integer=False, what=None) -> Check:
    def check(value, where, name, report):
        return file_number(value, where, f"field {name!r}", low, high, integer=integer, what=what)
    return check


def _text(value, where, name, report):
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: field {name!r} must be a non-empty text, got {shorten(value)}")
    return value


def _flag(value, where, name, report):
    if not isinstance(value, bool):
        raise ValueError(f"{where}: field {name!r} must be true or false, got {shorten(value)}")
    return value


def _optional(check: Check) -> Check:
    def maybe(value, where, name, report):
        return None if value is None else check(value, where, name, report)
    return maybe


def _list(item: Check, per_n: bool = True, length: int | None = None) -> Check:
    """A list of `item`s: one per N where `per_n` (the report's N list), or exactly `length`."""
    def check(value, where, name, report):
        want = len(report["N"]) if per_n else length
        if not isinstance(value, list) or (want is not None and len(value) != want):
            size = f" of {want} values" + (" (one per N)" if per_n else "") if want is not None else ""
            raise ValueError(f"{where}: field {name!r} must be a list{size}, got {shorten(value)}")
        return [item(x, where, f"{name}[{i}]", report) for i, x in enumerate(value)]
    return check


def _interval(value, where, name, report):
    """[estimate, low, high] as `group_size_report.paired_interval` writes it: bounds null when undefined."""
    est, bound = _number(), _optional(_number())
    if not isinstance(value, list) or len(value) != 3:
        raise ValueError(f"{where}: field {name!r} must be an interval [estimate, low, high], got {shorten(value)}")
    return [est(value[0], where, f"{name}[0]", report), *(bound(v, where, f"{name}[{i}]", report)
                                                          for i, v in enumerate(value[1:], 1))]


def _record(fields: dict[str, Check], required: tuple[str, ...]) -> Check:
    """A JSON object whose `fields` are checked (`required` ones must be there), others kept as they are."""
    def check(value, where, name, report):
        if not isinstance(value, dict):
            raise ValueError(f"{where}: field {name!r} must be an object, got {shorten(value)}")
        missing = [k for k in required if k not in value]
        if missing:
            raise ValueError(f"{where}: field {name!r} has no {missing[0]!r}")
        return {**value, **{k: kind(value[k], where, f"{name}.{k}", report)
                            for k, kind in fields.items() if k in value}}
    return check


PROBABILITY = _number(0, 1, what="a probability")
POSITIVE = _number(0, None)
N_VALUE = _number(1, None, integer=True)


def _lowest_n(value, where, name, report):
    n = N_VALUE(value, where, name, report)
    if n not in report["N"]:
        raise ValueError(f"{where}: field {name!r} = {n} is not one of the report's N {report['N']}")
    return n


def _group_sizes(value, where, name, report):
    sizes = _list(N_VALUE, per_n=False)(value, where, name, report)
    if not sizes or sizes != sorted(set(sizes)):
        raise ValueError(f"{where}: field {name!r} must list group sizes in increasing order, got {shorten(value)}")
    return sizes


#: The lowest N of a curve and what surrounds it (`group_size_report._flanks`), in the report and its best checkpoint.
FLANKS: dict[str, Check] = {
    "observed_lowest_N": _lowest_n, "lowest_share": _optional(PROBABILITY),
    "argmin_share": _optional(_list(PROBABILITY)), "first_minus_lowest": _interval,
    "last_minus_lowest": _interval, "dip": _flag, "verdict": _text}
FGRPO_ENTRY = _record({"gamma": POSITIVE, "variant": _text, **{k: _interval for k in (
    "minus_grpo", "pass1_minus_grpo", "minus_control", "equal_pass1_minus_grpo", "equal_pass1_minus_control")}},
    required=("gamma", "variant", "minus_grpo"))
CURVE = _record({"variant": _text, "gamma": POSITIVE, "lr": _number(0, None), "pass256": _list(_interval),
                 "pass1": _list(PROBABILITY), "dnll_rare": _list(_number())},
                required=("variant", "gamma", "pass256"))

#: Every field a report may hold, by kind. "N" first: the per-N lists are checked against it.
FIELDS: dict[str, Check] = {
    "N": _group_sizes,
    "rare_correct_prob": PROBABILITY, "optimizer": _text, "parametrisation": _text, "view": _text,
    "rare_mass": _number(0, 1, what="a probability mass"), "base_lr": POSITIVE, "lr": POSITIVE,
    "rare_share_median": _optional(PROBABILITY),
    "populations": _number(1, None, integer=True), "batch_seeds": _number(1, None, integer=True),
    "unit": _text, "steps": _number(0, None, integer=True), "interval": _text, "few_units": _flag,
    "predicted_N": _optional(N_VALUE),
    **FLANKS,
    "pass256": _list(PROBABILITY), "pass1": _list(PROBABILITY), "dnll_rare": _list(_number()),
    "pass256_at_lowest": _interval,
    "sd_between_populations": _optional(POSITIVE), "sd_between_batch_seeds": _optional(POSITIVE),
    "fgrpo_at_lowest": _list(FGRPO_ENTRY, per_n=False),
    "curves": _list(CURVE, per_n=False),
    "best_checkpoint": _record({**FLANKS, "pass256": _list(PROBABILITY)}, required=(*FLANKS, "pass256")),
}


def check_report(obj: dict, where: str, required: tuple[str, ...]) -> dict:
    """`obj` (one report, read from `where`: "FILE line L") with every known field checked and converted
    (16.0 as an N is 16; NaN, inf, 1e400, text where a number belongs refused); ValueError naming the field."""
    missing = [k for k in required if k not in obj]
    if missing:
        raise ValueError(f"{where} is not a group-size report (no {missing[0]!r})")
    report = dict(obj)
    for name, kind in FIELDS.items():
        if name in report:
            report[name] = kind(report[name], where, name, report)
    return report


__all__ = ["FIELDS", "check_report"]
