"""docs/core-and-metrics.md: each number computed from its source (code defaults, the committed example files,
the paired-test calibration record in benchmarks/RESULTS.md, fgrpo_sim.core on the worked example)."""

from __future__ import annotations

import inspect
import json
import re
from functools import cache

import numpy as np

from doc_census import ROOT, Claim, Given
from doc_claims.results_record import number_in, percent, section, table

# ------------------------------------------------------------------ the committed example files (docs/examples/)
EXAMPLES = ROOT / "docs" / "examples"
EXAMPLE_SEED, EXAMPLE_BETA = 0, (0.5, 0.8)


@cache
def example_counts(name: str) -> tuple[np.ndarray, np.ndarray]:
    rows = [json.loads(line) for line in (EXAMPLES / f"passk-{name}.jsonl").read_text().splitlines()]
    return np.array([r["n"] for r in rows]), np.array([r["c"] for r in rows])


@cache
def example_rates() -> tuple[float, float]:
    """The Beta parameters that regenerate both committed files exactly (the generator of commit 33a7d93:
    rates ~ Beta, base ~ Binomial(n, rate), focal the same with rates <= 0.05 raised by 0.01): a wrong
    parameter here regenerates other counts and raises."""
    n, c_base = example_counts("base")
    _, c_focal = example_counts("focal")
    rng = np.random.default_rng(EXAMPLE_SEED)
    rates = rng.beta(*EXAMPLE_BETA, n.size)
    base = rng.binomial(n, rates)
    focal = rng.binomial(n, np.where(rates > 0.05, rates, rates + 0.01))
    if not (np.array_equal(base, c_base) and np.array_equal(focal, c_focal)):
        raise ValueError(f"Beta{EXAMPLE_BETA} with default_rng({EXAMPLE_SEED}) no longer regenerates docs/examples/")
    return EXAMPLE_BETA


@cache
def _examples_shape() -> str:
    (n_base, _), (n_focal, _) = example_counts("base"), example_counts("focal")
    if n_base.size != n_focal.size or len(set(n_base) | set(n_focal)) != 1:
        raise ValueError("the two example files must have the same problems and one n")
    return f"{n_base.size} problems x {n_base[0]} samples each"


# ------------------------------------------------------------------ code defaults
def option_default(command, name: str):
    """A typer command's option default, as its signature declares it."""
    return inspect.signature(command).parameters[name].default.default


def passk_option(name: str):
    from fgrpo_sim.commands.passk import passk_command

    return option_default(passk_command, name)


@cache
def m_rule() -> tuple[int, int]:
    """(cap, divisor) of the default m = min(cap, n // divisor), read off subsample_size at two n."""
    from fgrpo_sim.metrics import subsample_size

    cap = subsample_size(10**6)
    divisor = 512 // subsample_size(512)
    if any(subsample_size(n) != min(cap, n // divisor) for n in (8, 64, 100, 1024, 4096)):
        raise ValueError("subsample_size is no longer min(cap, n // divisor)")
    return cap, divisor


@cache
def ustat_divisor() -> int:
    """The u-statistic test covers k <= n / d: d from largest_k."""
    from fgrpo_sim.metrics.paired_tests import largest_k

    return 64 // largest_k("u-statistic", 64, None)


@cache
def _accuracy() -> str:
    """tests/test_metrics.py's high-precision comparison (mpmath): its relative tolerance and its largest n."""
    text = (ROOT / "tests" / "test_metrics.py").read_text()
    body = text[text.index("def test_pass_at_k_large_n_against_high_precision"):]
    body = body[:body.index("\ndef ", 1)]
    tolerance = re.search(r"rel=(1e-\d+)", body).group(1)
    largest = max(int(n.replace("_", "")) for n in re.findall(r"\((\d[\d_]*), \d[\d_]*, \d[\d_]*\)", body))
    exponent = round(np.log10(largest))
    if 10**exponent != largest:
        raise ValueError(f"the largest n of the exact comparison is {largest}, not a power of ten")
    return f"accurate to {tolerance} relative at n = 1e{exponent}"


@cache
def _refusals() -> str:
    # constant values: bootstrap_mean_ci checks the number of seeds, then returns without resampling
    from fgrpo_sim.metrics.bootstrap import bootstrap_mean_ci
    from fgrpo_sim.metrics.subsampling import min_iterations

    rounds_times_alpha = round(min_iterations(0.05) * 0.05)
    seeds = next(s for s in range(1, 10) if _accepts(bootstrap_mean_ci, np.zeros(s)))
    return f"fewer than {rounds_times_alpha} / alpha rounds, a bootstrap over one problem, intervals over fewer " \
           f"than {seeds} seeds"


def _accepts(function, *args, **kwargs) -> bool:
    try:
        function(*args, **kwargs)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------ the calibration record (issue 37)
CALIBRATION = "Paired tests of a pass@k difference"


def size_rows() -> list[dict[str, str]]:
    return [r for r in table(CALIBRATION) if re.fullmatch(r"\d+ \(\d+\)", r["n (m)"])]


def power_row(k: int) -> dict[str, str]:
    return next(r for r in table(CALIBRATION) if r["n (m)"].startswith("power") and r["k"] == str(k))


def size_range(test: str) -> tuple[float, float]:
    sizes = [percent(r[test]) for r in size_rows()]
    return min(sizes), max(sizes)


def size_ns() -> tuple[int, int]:
    ns = [int(r["n (m)"].split()[0]) for r in size_rows()]
    return min(ns), max(ns)


def power_setting() -> tuple[int, str]:
    """(n, shift) of the power rows, as the record's row label names them: 'power: n = 64, +0.02 on every rate'."""
    label = power_row(1)["n (m)"]
    match = re.match(r"power: n = (\d+), (\+[\d.]+) on every rate", label)
    return int(match.group(1)), match.group(2)


def calibration_setting() -> dict[str, float]:
    text = section(CALIBRATION)
    return {"draws": number_in(text, r"([\d,]+) seeded null draws per n"),
            "alpha": number_in(text, r"two-sided alpha = ([\d.]+)"),
            "problems": number_in(text, r"Defaults: (\d+) problems")}


def _ustat_size() -> str:
    return "the u-statistic test rejects {:.1f}-{:.1f}% of true nulls".format(*size_range("u-statistic"))


def _ustat_power() -> str:
    n, shift = power_setting()
    problems = calibration_setting()["problems"]
    return (f"finds a {shift} pass@1 shift (n = {n}, {problems:.0f} problems) "
            f"{percent(power_row(1)['u-statistic']):.1f}% of the time")


def _app_q_size_power() -> str:
    low, high = size_range("app-q")
    return f"App. Q's test rejects {low:.1f}-{high:.1f}% and finds that shift {percent(power_row(1)['app-q']):.1f}%"


# ------------------------------------------------------------------ the default test over the grid (issue 45)
GRID = "The default paired test at every edge"
GRID_RECORD = ROOT / "benchmarks" / "paired_test_grid.json"
_GRID_CELL = re.compile(r"([\d.]+)% \((\d+)/(\d+)\) \[([\d.]+), ([\d.]+)\]")
_K_COLUMNS = ("k = 1", "k = n/4", "k = n/2", "k = n")


@cache
def _calibration():
    """benchmarks/paired_test_calibration.py as a module (benchmarks/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("calibration", ROOT / "benchmarks" / "paired_test_calibration.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def grid_tables() -> tuple[tuple[dict[str, str], ...], tuple[dict[str, str], ...]]:
    """(size rows, power rows) of the RESULTS.md grid section, after checking that its tables are what
    `paired_test_calibration.py --grid-markdown` prints from the committed record (no hand-typed cell)."""
    printed = _calibration().grid_markdown(json.loads(GRID_RECORD.read_text()))
    text = section(GRID)
    if printed not in text:
        raise ValueError("benchmarks/RESULTS.md's grid tables differ from --grid-markdown of paired_test_grid.json")
    size = table(GRID)
    power_text = text[text.index("| problems | n | power"):]
    header, *body = [[c.strip() for c in line.strip("|").split("|")] for line in power_text.splitlines()
                     if line.startswith("|") and "---" not in line]
    return size, tuple(dict(zip(header, row)) for row in body)


def _cells(row: dict[str, str], columns=_K_COLUMNS) -> list[tuple[float, int, int, float, float]]:
    return [tuple(float(x) for x in m.groups()) for c in columns if (m := _GRID_CELL.fullmatch(row[c]))]


@cache
def _grid_scope() -> str:
    """The grid's problems and n, from the committed record; its k columns from the RESULTS.md header."""
    points = json.loads(GRID_RECORD.read_text())["points"]
    problems, ns = sorted({p["problems"] for p in points}), sorted({p["n"] for p in points})
    size, _ = grid_tables()
    ks = [c.removeprefix("k = ") for c in size[0] if c.startswith("k = ")]
    return (f"{problems[0]:,} to {problems[-1]:,} problems, n = {ns[0]} to {ns[-1]}, k = {', '.join(ks[:-1])} "
            f"and {ks[-1]}")


@cache
def _grid_size() -> str:
    size, _ = grid_tables()
    cells = [cell for row in size for cell in _cells(row)]
    rejections, verdicts = sum(c[1] for c in cells), sum(c[2] for c in cells)
    outside = sum(1 for c in cells if not c[3] <= 5.0 <= c[4])
    rates = [c[0] for c in cells]
    alpha = json.loads(GRID_RECORD.read_text())["alpha"]
    return (f"alpha = {alpha:g}: {len(cells)} size cells, {min(rates):.1f}-{max(rates):.1f}% each, "
            f"{100 * rejections / verdicts:.2f}% pooled over {verdicts:,.0f} tests with a verdict; {outside} of the "
            f"{len(cells)} cells' 95% intervals exclude 5%")


@cache
def _grid_ustat_worst() -> str:
    size, _ = grid_tables()
    worst = max(size, key=lambda row: _cells(row, ("u-statistic, k = n/2",))[0][0]
                if _cells(row, ("u-statistic, k = n/2",)) else -1.0)
    rate = _cells(worst, ("u-statistic, k = n/2",))[0][0]
    return (f"reaches {rate:.1f}% at {worst['problems']} problems, n = {worst['n']}, {worst['law']} rates, "
            f"k = n/2")


@cache
def _grid_power() -> str:
    _, power = grid_tables()
    row = next(r for r in power if (r["problems"], r["n"]) == ("30", "8"))
    mine, theirs = _cells(row, ("power k = 1",))[0][0], _cells(row, ("u-statistic, k = 1",))[0][0]
    shift = next(p["shift"] for p in json.loads(GRID_RECORD.read_text())["points"] if p["shift"])
    return (f"against +{shift:g} on mid-range rates equals the z-test's: at 30 problems and n = 8, {mine:.1f}% at "
            f"k = 1 (u-statistic: {theirs:.1f}%)")


@cache
def _subsampling_benchmark() -> str:
    text = section("Paired m-out-of-n subsampling test")
    problems = number_in(text, r"\n(\d+) problems x \d+ samples, m = ")
    samples = number_in(text, r"\n\d+ problems x (\d+) samples, m = ")
    m = number_in(text, r"\n\d+ problems x \d+ samples, m = (\d+)")
    rounds = number_in(text, r"m = \d+, ([\d,]+) iterations")
    return f"({problems:.0f} problems x {samples:.0f} samples, m = {m:.0f}, {rounds:,.0f} rounds)"


# ------------------------------------------------------------------ fgrpo_sim.core
@cache
def _worked_example() -> str:
    import torch

    from fgrpo_sim.core import focal_advantages, focal_weight, grpo_advantages, group_success_rate

    gamma = 0.5  # the example's gamma, an input
    rewards = torch.tensor([[1.0, 0, 0, 0], [1, 1, 1, 0]])
    mu = group_success_rate(rewards)
    weights = focal_weight(mu, gamma)
    advantages = grpo_advantages(rewards)
    if not torch.allclose(focal_advantages(advantages, mu, gamma), weights[:, None] * advantages):
        raise ValueError("focal_advantages no longer scales each group's GRPO advantages by its weight")
    bases = [round(float(w) ** (1 / gamma), 9) for w in weights]
    return (f"mu_hat {mu[0]:g} and {mu[1]:g}; at gamma = {gamma:g} the focal weights {bases[0]:g}^{gamma:g} and "
            f"{bases[1]:g}^{gamma:g}")


def clip_defaults(method: str) -> tuple[float, float]:
    from fgrpo_sim.core.losses import DEFAULT_CLIP

    return DEFAULT_CLIP[method]


def _log_ratio_clamp() -> str:
    from fgrpo_sim.core.losses import _MAX_LOG_RATIO

    return f"log r clamped to [-{_MAX_LOG_RATIO:g}, {_MAX_LOG_RATIO:g}] (as verl)"


@cache
def _auto_ks() -> str:
    from fgrpo_sim.commands.passk import _parse_ks

    first = _parse_ks(["auto"], 1024)[:3]
    return f"({', '.join(map(str, first))}, ... up to the smallest n)"


@cache
def _app_q_defaults() -> str:
    cap, divisor = m_rule()
    if passk_option("m") is not None:
        raise ValueError("fgrpo passk --m no longer defaults to the rule")
    return (f"`--m` defaults to min({cap}, smallest n / {divisor}), `--iterations` to "
            f"{passk_option('iterations'):,}; k > m gets no test")


# ------------------------------------------------------------------ the two success estimates (issue 49)
SMOOTHING_EXAMPLE = 0.5  # the alpha the section shows (a given: the write-ups' value)


def _weights(n: int, alpha: float, gamma: float = 1.0) -> list[float]:
    """core's focal weight of the groups with c = 0..n correct of n."""
    import torch

    from fgrpo_sim.core import focal_weight, group_success_rate

    rewards = (torch.arange(n)[None, :] < torch.arange(n + 1)[:, None]).double()
    return focal_weight(group_success_rate(rewards), gamma, alpha, n).tolist()


def _n2_phrase() -> str:
    raw, smooth = _weights(2, 0.0), _weights(2, SMOOTHING_EXAMPLE)
    return (f"At N = 2 (gamma = 1) the raw weight is {raw[0]:.3g}, {raw[1]:.3g} or {raw[2]:.3g} (c = 0, 1, 2), the "
            f"smoothed one {smooth[0]:.3g}, {smooth[1]:.3g} or {smooth[2]:.3g}")


def _n2_active() -> str:
    (raw,), (smooth,) = _weights(2, 0.0)[1:2], _weights(2, SMOOTHING_EXAMPLE)[1:2]
    assert raw == smooth, (raw, smooth)
    return f"both estimates give it {raw:g}^gamma: at N = 2"


def _n4_phrase() -> str:
    raw, smooth = _weights(4, 0.0)[1:4], _weights(4, SMOOTHING_EXAMPLE)[1:4]
    return (f"At N = 4 the active groups' weights are {', '.join(f'{w:.3g}' for w in raw)} raw and "
            f"{', '.join(f'{w:.3g}' for w in smooth)}")


def _m_half() -> str:
    from fgrpo_sim.theory import lr_multiplier

    return f"it tends to App. N's {lr_multiplier(0.5):.3f} for every alpha"


CLAIMS = [
    Claim(_n2_phrase, source="fgrpo_sim.core.focal_weight at N = 2, alpha 0 and 0.5"),
    Claim(_n2_active, source="fgrpo_sim.core.focal_weight at N = 2, c = 1"),
    Claim(_n4_phrase, source="fgrpo_sim.core.focal_weight at N = 4, c = 1..3"),
    Claim(_m_half, source="theory.lr_multiplier(0.5)"),
    Claim(_examples_shape, source="docs/examples/passk-{base,focal}.jsonl (rows, n)"),
    Claim(lambda: "rates ~ Beta({:g}, {:g})".format(*example_rates()),
          source="the parameters that regenerate docs/examples/ exactly (example_rates)"),
    Claim(_auto_ks, source="fgrpo_sim.commands.passk._parse_ks(['auto'], n)"),
    Claim(lambda: f"`--test u-statistic` (k > n / {ustat_divisor()} gets no test)",
          source="fgrpo_sim.metrics.paired_tests.largest_k('u-statistic', ...)"),
    Claim(_app_q_defaults, source="fgrpo_sim.metrics.subsample_size and fgrpo passk's --m / --iterations defaults"),
    Claim(_accuracy, source="tests/test_metrics.py::test_pass_at_k_large_n_against_high_precision (rel, largest n)"),
    Claim(_refusals, source="fgrpo_sim.metrics.subsampling.min_iterations(0.05) x 0.05; bootstrap_mean_ci's "
                            "smallest accepted number of seeds"),
    Claim(_ustat_size, source="benchmarks/RESULTS.md, paired tests (issue 37): size rows, u-statistic column"),
    Claim(_ustat_power, source="benchmarks/RESULTS.md, paired tests (issue 37): power row k = 1; defaults line"),
    Claim(_app_q_size_power, source="benchmarks/RESULTS.md, paired tests (issue 37): app-q column"),
    Claim(_grid_scope, source="benchmarks/paired_test_grid.json (problems, n) and RESULTS.md's k columns"),
    Claim(_grid_size, source="benchmarks/RESULTS.md, the default paired test at every edge (issue 45): size cells"),
    Claim(_grid_ustat_worst, source="benchmarks/RESULTS.md, issue 45 grid: the u-statistic column's largest size"),
    Claim(_grid_power, source="benchmarks/RESULTS.md, issue 45 grid: power row 30 problems, n = 8"),
    Claim(_subsampling_benchmark, source="benchmarks/RESULTS.md, paired m-out-of-n subsampling test: its setting line"),
    Claim(_worked_example, source="fgrpo_sim.core.group_success_rate / focal_weight on [[1,0,0,0],[1,1,1,0]]"),
    Claim(_log_ratio_clamp, source="fgrpo_sim.core.losses._MAX_LOG_RATIO"),
    Claim(lambda: "eps {:g} / {:g}".format(*clip_defaults("grpo")), source="fgrpo_sim.core.DEFAULT_CLIP['grpo']"),
    Claim(lambda: "`dapo`: {:g} / {:g}".format(*clip_defaults("dapo")), source="fgrpo_sim.core.DEFAULT_CLIP['dapo']"),
    Claim(lambda: "{:.1f} / {:.1f} (the paper's)".format(*clip_defaults("cispo")),
          source="fgrpo_sim.core.DEFAULT_CLIP['cispo']"),
]

GIVEN = [
    Given("(N + 2 alpha) with alpha = 0.5.", why="the smoothed estimate's formula and the alpha the write-ups use "
          "(issue 49), an example value"),
    Given("What alpha = 0.5 does to", why="the same example alpha, pointing to population.md's measured result"),
    Given("its recommended 5.0 caps at 5, not 6",
          why="TRL 1.16's GRPOConfig help text (epsilon_high for loss_type='cispo'; TRL is an optional extra, not "
              "read by the core tests): 5 is that value as TRL's cap, 6 the two-sided 1 + 5.0"),
    Given("p = min(1, 2 min(", why="the two-sided percentile p-value's formula (its 2: two tails), as "
          "fgrpo_sim/metrics/subsampling.py's docstring and code define it"),
]
