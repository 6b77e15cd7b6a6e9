"""docs/evaluation.md: each number computed from its source (the graders' rules, the report's and the prompts'
defaults, the paired-test calibration record in benchmarks/RESULTS.md, the shipped paper tables, pyproject.toml)."""

from __future__ import annotations

import re
import tomllib
from functools import cache

from doc_census import ROOT, Claim, Given
from doc_claims.core_and_metrics import (calibration_setting, m_rule, option_default, size_ns, size_range, size_rows,
                                         ustat_divisor)
from doc_claims.results_record import percent


@cache
def _math_benchmarks() -> str:
    from fgrpo_sim.llm.evaluation.data import BENCHMARKS

    return f"({len([b for b in BENCHMARKS if b != 'generic'])} benchmarks, and `generic`"


@cache
def _thousands() -> str:
    """How many digits after `\\,` make it a thousands separator, probed on the reward's own pattern."""
    from fgrpo_sim.llm.rewards import _DIGIT_GROUP_SEP

    separated = [d for d in range(1, 7) if _DIGIT_GROUP_SEP.sub("", "1\\," + "0" * d) == "1" + "0" * d]
    if len(separated) != 1:
        raise ValueError(f"a thousands separator is read before {separated} digits, not one count")
    example = "1\\,000"
    return f"before exactly {separated[0]} digits is a thousands separator (`{example}` = " \
           f"{_DIGIT_GROUP_SEP.sub('', example)})"


def _report_default(name: str):
    from fgrpo_sim.commands.llm import report_command

    return option_default(report_command, name)


@cache
def _mark_alpha() -> str:
    import inspect

    from fgrpo_sim.llm.evaluation.report import significance

    return f"significant at two-sided alpha = {inspect.signature(significance).parameters['alpha'].default:g}"


@cache
def _ustat_size() -> str:
    low, high = size_range("u-statistic")
    n_low, n_high = size_ns()
    alpha = calibration_setting()["alpha"]
    divisors = {int(r["n (m)"].split()[0]) // int(r["n (m)"].split("(")[1].rstrip(")")) for r in size_rows()}
    if len(divisors) != 1:
        raise ValueError(f"the record's k = m rows are not all n / d, got d in {divisors}")
    return f"measured size {low:.1f}-{high:.1f}% at alpha = {alpha:g} for n = {n_low} to {n_high}, k = 1 and " \
           f"n / {divisors.pop()}"


@cache
def _app_q_defaults() -> str:
    cap, divisor = m_rule()
    if _report_default("m") is not None:
        raise ValueError("fgrpo llm report --m no longer defaults to the rule")
    return f"default min({cap}, n // {divisor}), `--iterations`, default {_report_default('iterations'):,}"


@cache
def _app_q_size() -> str:
    """The share of App. Q's rejections over all the record's size rows (each row one share of its null draws)."""
    draws, alpha = calibration_setting()["draws"], calibration_setting()["alpha"]
    rejected = [percent(r["app-q"]) / 100 * draws for r in size_rows()]
    if any(abs(x - round(x)) > 1e-6 for x in rejected):
        raise ValueError("App. Q's size rows are not whole counts of the record's draws")
    total, nulls = round(sum(rejected)), round(draws * len(rejected))
    return f"its measured size at alpha = {alpha:g} is {100 * total / nulls:.2f}% ({total} of {nulls:,} true nulls)"


@cache
def _ifeval_python() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirement = next(r for r in project["optional-dependencies"]["llm"] if r.startswith("if-verifiable"))
    return "Python >= " + re.search(r"python_version >= '([\d.]+)'", requirement).group(1)


@cache
def _decoding() -> str:
    from fgrpo_sim.llm.evaluation import prompts

    if prompts.TOP_K is not None:
        raise ValueError("the prompts now set a top-k")
    return f"temperature {prompts.TEMPERATURE:.1f}, top-p {prompts.TOP_P:.1f}, no top-k"


def _llama_date() -> str:
    from fgrpo_sim.llm.evaluation.prompts import DEFAULT_LLAMA_DATE

    return f'we pass "{DEFAULT_LLAMA_DATE}"'


@cache
def _paper_tables() -> str:
    """The tables `fgrpo_sim/paper_tables/` holds: main_results.csv's `table` column and the files' numbers."""
    from fgrpo_sim.paper_tables import read_table

    numbers = {int(row["table"]) for row in read_table("main_results.csv")}
    for path in (ROOT / "fgrpo_sim" / "paper_tables").glob("table*.csv"):
        ends = [int(x) for x in re.match(r"table(\d+)(?:_(\d+))?_", path.name).groups() if x]
        numbers |= set(range(ends[0], ends[-1] + 1))
    return f"holds Tables {_ranges(sorted(numbers))} as CSV"


def _ranges(numbers: list[int]) -> str:
    """1, 2, 3, 6, 7 -> '1-3, 6, 7': runs of three or more as a range."""
    runs, out = [], []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    for run in runs:
        out += [f"{run[0]}-{run[-1]}"] if len(run) >= 3 else [str(n) for n in run]
    return ", ".join(out)


CLAIMS = [
    Claim(_math_benchmarks, source="fgrpo_sim.llm.evaluation.data.BENCHMARKS (less `generic`)"),
    Claim(_thousands, source="fgrpo_sim.llm.rewards._DIGIT_GROUP_SEP, probed"),
    Claim(_mark_alpha, source="fgrpo_sim.llm.evaluation.report.significance(alpha=...)"),
    Claim(_ustat_size, source="benchmarks/RESULTS.md, paired tests (issue 37): size rows, u-statistic column"),
    Claim(lambda: f"pass@k with k > n / {ustat_divisor()} untested",
          source="fgrpo_sim.metrics.paired_tests.largest_k('u-statistic', ...)"),
    Claim(_app_q_defaults, source="fgrpo_sim.metrics.subsample_size and fgrpo llm report's --m / --iterations"),
    Claim(_app_q_size, source="benchmarks/RESULTS.md, paired tests (issue 37): app-q column x draws per n"),
    Claim(_ifeval_python, source="pyproject.toml, the llm extra's if-verifiable marker"),
    Claim(_decoding, source="fgrpo_sim.llm.evaluation.prompts TEMPERATURE, TOP_P, TOP_K"),
    Claim(_llama_date, source="fgrpo_sim.llm.evaluation.prompts.DEFAULT_LLAMA_DATE"),
    Claim(lambda: f"(`--k`, paper {_report_default('k')})", source="fgrpo llm report's --k default"),
    Claim(_paper_tables, source="fgrpo_sim/paper_tables/: main_results.csv's table column and the tableNN files"),
]

GIVEN = [
    Given("(5.0 = 5,", why="an example of the GPQA value rule; tests/test_llm_grading.py checks the rule"),
    Given("`1e3` vs 1000: credited", why="an example input of the E-notation rule; tests/test_llm_grading.py "
                                          "checks it"),
    Given("Euler's e times 3", why="math-verify's reading of the example `1e3`, described"),
]
