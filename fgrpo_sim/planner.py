"""Group-size planner: what a candidate group size N buys on a population of prompts.

Given the distribution of per-prompt success rates mu (a pilot run's measured rates, or a Beta(a, b)),
a rare share rho (tau = rho * mu is the mass of the rare-correct subset, paper Sec. 3), candidate N
values and focal exponents gamma, the planner averages over prompts:

* the fraction of active groups, E[1 - mu^N - (1 - mu)^N] (only those carry a gradient);
* the tail-miss probability of Lemma 3.1, E[Pr(B)], Pr(B) = (1 - tau)^N - (mu - tau)^N - (1 - mu)^N;
* the mean focal weight g = (1 - X/N)^gamma over active groups, X ~ Binomial(N, mu), i.e. how much
  F-GRPO shrinks an average update (compare the paper's low-LR control lr * m_gamma).

Every quantity is a polynomial of degree <= N in mu, so for a Beta(a, b) the average is computed by
Gauss-Jacobi quadrature with about N/2 nodes, which is exact up to rounding (capped at
`MAX_QUADRATURE_NODES` for very large N, where the integrand is smooth on the node scale anyway).
A pilot run's rates are averaged as they are (each prompt counts once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from fgrpo_sim.validation import BETA_SHAPE_MAX, check_beta_shapes, check_integer, check_range

MAX_GROUP_SIZE = 16384  # the focal-weight expectation sums N + 1 binomial terms per prompt
MAX_QUADRATURE_NODES = 4096
DEFAULT_GROUP_SIZES = (2, 4, 8, 16, 32, 64, 128, 256)
DEFAULT_GAMMAS = (0.0, 0.5, 1.0)
DEFAULT_RHOS = (0.1,)


@dataclass(frozen=True)
class Difficulty:
    """A distribution of per-prompt success rates as quadrature nodes and weights (weights sum to 1)."""

    nodes: np.ndarray
    weights: np.ndarray
    label: str
    beta: tuple[float, float] | None = None  # (a, b) when the nodes are Gauss-Jacobi nodes of a Beta

    def mean(self, values: np.ndarray) -> float:
        return float(np.dot(self.weights, values))


#: Smallest Beta shape the quadrature can take: the Jacobi exponent A - 1 must stay above -1 in float64.
QUADRATURE_SHAPE_MIN = 1e-15


def beta_difficulty(a: float, b: float, max_group_size: int = 256) -> Difficulty:
    """Gauss-Jacobi nodes for mu ~ Beta(a, b), exact for polynomials of degree <= max_group_size."""
    from scipy.special import roots_jacobi

    a, b = check_beta_shapes("--beta", a, b)
    if min(a, b) < QUADRATURE_SHAPE_MIN:  # scipy would say "alpha and beta must be greater than -1"
        name, value = ("--beta A", a) if a < QUADRATURE_SHAPE_MIN else ("--beta B", b)
        raise ValueError(f"{name} must be in [{QUADRATURE_SHAPE_MIN:g}, {BETA_SHAPE_MAX:g}] for the Gauss-Jacobi "
                         f"quadrature (below, A - 1 rounds to -1), got {value:g}")
    max_group_size = int(check_integer("max_group_size", max_group_size, 1))
    nodes_count = int(min(max(max_group_size // 2 + 8, 32), MAX_QUADRATURE_NODES))
    # Jacobi weight (1 - x)^alpha (1 + x)^beta on [-1, 1]; mu = (1 + x) / 2 gives mu^(a-1) (1-mu)^(b-1).
    with np.errstate(all="ignore"):  # scipy's overflow is detected below and reported as one line
        x, w = roots_jacobi(nodes_count, b - 1.0, a - 1.0)
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(w)) and w.sum() > 0):
        raise ValueError(f"--beta A,B: Beta({a:g}, {b:g}) is too concentrated for the {nodes_count}-node Gauss-Jacobi "
                         "quadrature (A, B up to about 100 work at every N); give a pilot file of success rates instead")
    mu = np.clip((1.0 + x) / 2.0, 0.0, 1.0)
    w = w / w.sum()  # normalising replaces the Beta function B(a, b) and its 2^(a+b-1) factor
    return Difficulty(mu, w, f"Beta({a:g}, {b:g})", beta=(a, b))


def empirical_difficulty(success_rates: Sequence[float], label: str = "pilot run") -> Difficulty:
    """Each measured per-prompt success rate counts once."""
    rates = check_range("success_rate", np.asarray(success_rates, dtype=float).ravel(), 0.0, 1.0)
    if rates.size == 0:
        raise ValueError("success_rate must hold at least one prompt, got none")
    return Difficulty(rates, np.full(rates.size, 1.0 / rates.size), f"{label} ({rates.size} prompts)")


def _binom_pmf(k, n, p):
    """scipy's Binomial pmf (boost's). Its ufunc lives in scipy.special since 1.15; `scipy.stats.binom` wraps the
    same ufunc but importing scipy.stats costs ~0.6 s of every `fgrpo plan` start, so that is only the fallback."""
    try:
        from scipy.special._ufuncs import _binom_pmf as pmf
    except ImportError:
        from scipy.stats import binom

        pmf = binom.pmf
    return pmf(k, n, p)


def _focal_weight_on_active(n: int, mu: np.ndarray, gammas: Sequence[float],
                            focal_smoothing: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """E[(1 - X/N)^gamma * 1{0 < X < N}] per prompt (one row per gamma) and Pr(active) per prompt; with
    `focal_smoothing` alpha the weight's estimate is (X + alpha) / (N + 2 alpha) (alpha 0: X / N exactly)."""
    from fgrpo_sim.theory import focal_weight

    k = np.arange(1, n)  # active groups only: 0 < X < N
    out = np.zeros((len(gammas), mu.size))
    active = np.zeros(mu.size)
    chunk = max(1, 4_000_000 // max(n, 1))
    for start in range(0, mu.size, chunk):
        m = mu[start:start + chunk, None]
        pmf = _binom_pmf(k[None, :], n, m)  # [prompts, N - 1]
        active[start:start + chunk] = pmf.sum(axis=1)
        for gi, gamma in enumerate(gammas):
            estimate = (k + focal_smoothing) / (n + 2.0 * focal_smoothing)
            out[gi, start:start + chunk] = pmf @ np.atleast_1d(focal_weight(estimate, gamma))
    return out, active


@dataclass
class Plan:
    """The planner's table (one row per rho and N) and its plain-language recommendation."""

    rows: list[dict] = field(default_factory=list)
    recommendation: str = ""
    difficulty: str = ""
    settings: dict = field(default_factory=dict)

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(self.rows)

    def to_json(self) -> str:
        from fgrpo_sim.jsonl import dumps

        return dumps({"difficulty": self.difficulty, "settings": self.settings,
                           "rows": self.rows, "recommendation": self.recommendation}, indent=2)


def plan_group_size(
    difficulty: Difficulty,
    rhos: Sequence[float] = DEFAULT_RHOS,
    group_sizes: Sequence[int] = DEFAULT_GROUP_SIZES,
    gammas: Sequence[float] = DEFAULT_GAMMAS,
    max_tail_miss: float = 0.1,
    min_active: float = 0.5,
    focal_smoothing: float = 0.0,
) -> Plan:
    """Average activity, Lemma 3.1's tail-miss and focal weights over `difficulty` for each (rho, N).

    rho in (0, 1) is the rare subset's share of a prompt's correct mass; N integers in [1, 16384];
    gamma >= 0. `max_tail_miss` and `min_active` (both in [0, 1]) only shape the recommendation.
    `focal_smoothing` alpha >= 0: the weights' estimate (X + alpha) / (N + 2 alpha) (0: the paper's X / N).
    """
    from fgrpo_sim import theory

    for name, values in (("rhos", rhos), ("group_sizes", group_sizes), ("gammas", gammas)):
        if np.size(values) == 0:
            raise ValueError(f"{name} must list at least one value, got none")
    rhos = [float(r) for r in check_range("rho", np.atleast_1d(rhos), 0.0, 1.0, low_open=True, high_open=True)]
    group_sizes = sorted({int(n) for n in check_integer("N", np.atleast_1d(group_sizes), 1, MAX_GROUP_SIZE)})
    gammas = [float(g) for g in check_range("gamma", np.atleast_1d(gammas), 0.0, np.inf, high_open=True)]
    max_tail_miss = float(check_range("max_tail_miss", max_tail_miss, 0.0, 1.0))
    min_active = float(check_range("min_active", min_active, 0.0, 1.0))
    focal_smoothing = float(check_range("focal_smoothing", focal_smoothing, 0.0, np.inf, high_open=True))
    if difficulty.beta is not None:  # enough nodes for exactness at the largest candidate N
        difficulty = beta_difficulty(*difficulty.beta, max_group_size=max(group_sizes))
    mu = difficulty.nodes

    plan = Plan(difficulty=difficulty.label,
                settings={"rho": rhos, "N": group_sizes, "gamma": gammas,
                          "max_tail_miss": max_tail_miss, "min_active": min_active,
                          **({"focal_smoothing": focal_smoothing} if focal_smoothing else {})})
    focal_by_n = {n: _focal_weight_on_active(n, mu, gammas, focal_smoothing) for n in group_sizes}
    for rho in rhos:
        for n in group_sizes:
            active_fraction = difficulty.mean(np.asarray(theory.activity_probability(n, mu), dtype=float))
            tail_miss = difficulty.mean(np.asarray(theory.tail_miss_probability(n, mu, rho * mu), dtype=float))
            weighted, _ = focal_by_n[n]
            row = {
                "rho": rho,
                "N": n,
                "active_fraction": active_fraction,
                "tail_miss": tail_miss,
                # Pr(B | active): how often a group that does produce a gradient misses the rare mode
                "tail_miss_given_active": tail_miss / active_fraction if active_fraction > 0 else 0.0,
                "rollouts_per_prompt": n,
                "rollouts_per_active_group": n / active_fraction if active_fraction > 0 else math.inf,
            }
            for gi, gamma in enumerate(gammas):
                mean_weight = difficulty.mean(weighted[gi]) / active_fraction if active_fraction > 0 else 0.0
                row[f"focal_weight_gamma_{gamma:g}"] = mean_weight
            plan.rows.append(row)
    plan.recommendation = _recommend(plan, gammas, max_tail_miss, min_active)
    return plan


def _recommend(plan: Plan, gammas: list[float], max_tail_miss: float, min_active: float) -> str:
    from fgrpo_sim import theory

    lines = []
    for rho in plan.settings["rho"]:
        rows = [r for r in plan.rows if r["rho"] == rho]
        worst = max(rows, key=lambda r: r["tail_miss"])
        lines.append(
            f"rho = {rho:g}: the tail-miss risk peaks at N = {worst['N']} among your candidates "
            f"(average Pr(B) = {worst['tail_miss']:.3f}: in that share of groups the update is active "
            f"but never sees the rare-correct mode, which it then pushes down)."
        )
        good = [r for r in rows if r["tail_miss"] <= max_tail_miss and r["active_fraction"] >= min_active]
        if good:
            best = min(good, key=lambda r: r["N"])
            lines.append(
                f"  Smallest safe choice: N = {best['N']} (Pr(B) = {best['tail_miss']:.3f} <= {max_tail_miss:g}, "
                f"{best['active_fraction']:.0%} of groups active, {best['rollouts_per_active_group']:.1f} "
                f"rollouts per active group)."
            )
        else:
            usable = [r for r in rows if r["active_fraction"] >= min_active] or rows
            best = min(usable, key=lambda r: r["tail_miss"])
            lines.append(
                f"  No candidate keeps Pr(B) <= {max_tail_miss:g} with >= {min_active:.0%} active groups; "
                f"the lowest is N = {best['N']} (Pr(B) = {best['tail_miss']:.3f}, "
                f"{best['active_fraction']:.0%} active). At an affordable N, focal weighting (F-GRPO) is the "
                f"cheaper remedy: it shrinks the updates of high-success groups, where the miss does damage."
            )
    focal = [g for g in gammas if g > 0]
    if focal:
        pick = min(focal, key=lambda g: abs(g - 0.5))  # the paper's most frequent choice is gamma = 0.5
        typical = min(plan.rows, key=lambda r: (abs(r["N"] - 8), r["rho"]))
        weight = typical[f"focal_weight_gamma_{pick:g}"]
        lines.append(
            f"Focal weighting: with gamma = {pick:g} an active group at N = {typical['N']} is scaled by "
            f"{weight:.3f} on average here; the paper's learning-rate control for gamma = {pick:g} is "
            f"lr x {float(theory.lr_multiplier(pick)):.3g}. Try gamma = {pick:g} first (the paper's usual pick)."
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- where pass@k should dip (issue 21)

DIP_WEIGHTS = ("advantage", "count")


@dataclass(frozen=True)
class DipPrediction:
    """Expected damage of active tail misses per candidate N, and the N where it peaks."""

    group_sizes: np.ndarray  # candidates, increasing
    damage: np.ndarray  # E[1{active, miss} * w(X, N)] per candidate
    n_star: int  # argmax of damage over the candidates
    weight: str
    gamma: float
    label: str

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame({"N": self.group_sizes, "damage": self.damage})


def _miss_weights(n: int, gamma: float, weight: str) -> np.ndarray:
    """w(k, N) for k = 0..N: how much an active group with k correct rollouts removes from a missed mode.

    "advantage": the group's mean |GRPO advantage| 2 sqrt(m (1 - m)), m = k/N, times the focal weight
    (1 - m)^gamma. At ratio 1 the advantages of a group sum to zero, so the logits of unsampled actions do
    not move and a missed mode loses mass only through the softmax normalisation:
    d log tau = -(eta / N) sum_j A_j p(a_j) = -(eta / N) sqrt(m (1 - m)) (mean p of sampled correct - mean p
    of sampled incorrect), i.e. proportional to 2 sqrt(m (1 - m)) up to a factor set by the policy's shape,
    not by N. "count": every active miss counts 1 (the plain Lemma 3.1 probability).
    """
    from fgrpo_sim import theory

    k = np.arange(n + 1)
    m = k / n
    inside = (k > 0) & (k < n)
    w = np.zeros(n + 1)
    if weight == "count":
        w[inside] = 1.0
    else:
        a_pos, a_neg = theory.focal_advantage_magnitudes(m[inside], 0.0)
        w[inside] = m[inside] * a_pos + (1 - m[inside]) * a_neg  # = 2 sqrt(m (1 - m))
    return w * np.asarray(theory.focal_weight(m, gamma), dtype=float)


def expected_miss_damage(n: int, mu: np.ndarray, tau: np.ndarray, gamma: float = 0.0,
                         weight: str = "advantage") -> np.ndarray:
    """E[1{0 < X < N, no draw in E} * w(X, N)] per (mu, tau) (arrays of one shape).

    Given no draw in E (probability (1 - tau)^N) the group is Binomial(N, (mu - tau) / (1 - tau)) in its
    correct count; with weight "count" this is Lemma 3.1's Pr(B) (a test checks it against
    theory.tail_miss_probability).
    """
    mu, tau = np.broadcast_arrays(np.asarray(mu, dtype=float), np.asarray(tau, dtype=float))
    w = _miss_weights(n, gamma, weight)
    keep = 1.0 - tau
    x = np.clip(np.where(keep > 0, (mu - tau) / np.where(keep > 0, keep, 1.0), 0.0), 0.0, 1.0)
    k = np.arange(n + 1)
    out = np.empty(mu.shape)
    flat_x, flat_out = x.ravel(), out.reshape(-1)
    chunk = max(1, 2_000_000 // (n + 1))
    for start in range(0, flat_x.size, chunk):
        pmf = _binom_pmf(k[None, :], n, flat_x[start:start + chunk, None])
        flat_out[start:start + chunk] = pmf @ w
    with np.errstate(under="ignore", divide="ignore"):  # tau = 1: no draw can miss E, the factor is 0
        return out * np.exp(n * np.log1p(-tau))


def predict_dip(difficulty: Difficulty, rho, group_sizes: Sequence[int] = DEFAULT_GROUP_SIZES,
                gamma: float = 0.0, weight: str = "advantage") -> DipPrediction:
    """The N at which pass@k should be lowest at equal steps: the peak of the expected damage of active
    tail misses (Lemma 3.1's event B, each weighted by w(X, N) of `_miss_weights`).

    A first-order argument about one group: it knows no optimizer and no shared parameters. In the
    group-size study (docs/population.md) the observed dip sits between half and 8x this N, and under Adam
    shows only when each parameter mixes solution modes or the rare modes are not the globally best ones.

    rho (the rare share tau / mu): a number in (0, 1); a `Difficulty` (a Beta law from `beta_difficulty`
    or measured shares from `empirical_difficulty`), averaged independently of mu; or an array with one
    share per node of an empirical `difficulty` (paired: a pilot's per-prompt (mu, rho)).
    """
    from fgrpo_sim.validation import check_choice

    check_choice("weight", weight, DIP_WEIGHTS)
    gamma = float(check_range("gamma", gamma, 0.0, np.inf, high_open=True))
    if np.size(group_sizes) == 0:
        raise ValueError("group_sizes must list at least one value, got none")
    sizes = np.array(sorted({int(n) for n in check_integer("N", np.atleast_1d(group_sizes), 1, MAX_GROUP_SIZE)}))
    if difficulty.beta is not None:  # exact quadrature at the largest candidate (the damage has degree N in mu)
        difficulty = beta_difficulty(*difficulty.beta, max_group_size=int(sizes.max()))
    if isinstance(rho, Difficulty):
        if rho.beta is not None:
            rho = beta_difficulty(*rho.beta, max_group_size=int(sizes.max()))
        rho_nodes, rho_w = check_range("rho", rho.nodes, 0.0, 1.0), rho.weights
        mu = difficulty.nodes[:, None] * np.ones_like(rho_nodes)[None, :]
        tau = difficulty.nodes[:, None] * rho_nodes[None, :]
        joint = difficulty.weights[:, None] * rho_w[None, :]
        label = f"{difficulty.label}, rho ~ {rho.label}"
    else:
        rho_arr = check_range("rho", np.asarray(rho, dtype=float), 0.0, 1.0)
        if rho_arr.ndim and rho_arr.size != difficulty.nodes.size:
            raise ValueError(f"rho must be one number or one share per prompt ({difficulty.nodes.size}), "
                             f"got {rho_arr.size} values")
        if rho_arr.ndim and difficulty.beta is not None:
            raise ValueError("rho must be one number or a Difficulty when the difficulty is a Beta law; "
                             "per-prompt shares pair only with empirical_difficulty")
        mu, tau, joint = difficulty.nodes, difficulty.nodes * rho_arr, difficulty.weights
        label = f"{difficulty.label}, rho = {float(rho_arr):g}" if not rho_arr.ndim else \
            f"{difficulty.label}, per-prompt rho (mean {float(np.dot(joint, rho_arr)):.3g})"
    damage = np.array([float(np.sum(joint * expected_miss_damage(int(n), mu, tau, gamma, weight))) for n in sizes])
    return DipPrediction(sizes, damage, int(sizes[int(np.argmax(damage))]), weight, gamma, label)


def rho_for_dip_at(n_target: int, difficulty: Difficulty, group_sizes: Sequence[int] = DEFAULT_GROUP_SIZES,
                   weight: str = "advantage", grid: Sequence[float] | None = None) -> tuple[float, float]:
    """The range [lo, hi] of constant rare shares rho whose predicted dip (over `group_sizes`) is `n_target`.

    Scans a log grid of rho (default 200 points on [1e-3, 0.9]); (nan, nan) when no rho puts the peak there.
    """
    grid = np.geomspace(1e-3, 0.9, 200) if grid is None else np.asarray(grid, dtype=float)
    hits = [r for r in grid if predict_dip(difficulty, float(r), group_sizes, 0.0, weight).n_star == n_target]
    return (float(min(hits)), float(max(hits))) if hits else (math.nan, math.nan)


# ---------------------------------------------------------------- reading a pilot run's success rates

def read_success_rates(path: str | Path, column: str = "success_rate") -> np.ndarray:
    """Per-prompt success rates from a CSV file (header row naming `column`) or JSON lines.

    The format follows the suffix (.csv, .jsonl / .json / .ndjson); otherwise a first non-blank
    character '{' means JSON lines. JSON lines without `column` but with `problem_id` and `correct` (one
    line per sample, as `fgrpo llm eval` writes) or `n` and `c` (one per problem) are an eval output: the
    rate of a problem is c / n (`metrics.results_io.read_results_jsonl`, the reader of `fgrpo passk`).
    A malformed row raises ValueError naming its line.
    """
    path = Path(path)
    from fgrpo_sim.jsonl import first_json_object, read_text_file

    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson") or (suffix != ".csv" and _starts_with_brace(path)):
        first = first_json_object(path, "success-rate file")  # an eval file is told by its first line alone
        if first is not None and column not in first and "problem_id" in first and ("correct" in first or "n" in first):
            from fgrpo_sim.metrics.results_io import read_results_jsonl

            counts = read_results_jsonl(path)
            return counts.c / counts.n
        rates = _read_jsonl(path, read_text_file(path, "success-rate file"), column)
    else:
        rates = _read_csv(path, read_text_file(path, "success-rate file"), column)
    if not rates:
        raise ValueError(f"{path}: no rows with a {column} value")
    return np.asarray(rates, dtype=float)


def _starts_with_brace(path: Path) -> bool:
    """The file's first non-blank character is '{' (JSON lines without a telling suffix); its first 64 KiB."""
    from fgrpo_sim.jsonl import read_text_file

    if not path.is_file():
        read_text_file(path, "success-rate file")  # its error: missing, a folder
    with open(path, "rb") as fh:
        head = fh.read(1 << 16)
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")


def _parse_rate(path: Path, line_no: int, raw, column: str = "success_rate") -> float:
    from fgrpo_sim.validation import file_number

    return file_number(raw, f"{path} line {line_no}", column, 0.0, 1.0, text=True)  # a CSV field or a JSON value


#: words in a column name that say it may hold success rates (a pilot file's own name for them)
_RATE_WORDS = ("rate", "success", "acc", "pass", "mu", "solve", "score", "correct")


def _column_hint(column: str, names) -> str:
    """"; pass --column NAME ..." naming the file's column that most likely holds the rates, else ""."""
    import difflib

    names = [str(n) for n in names if str(n) != column]
    close = difflib.get_close_matches(column, names, n=1, cutoff=0.5)
    likely = close or [n for n in names if any(w in n.lower() for w in _RATE_WORDS)]
    return f"; if '{likely[0]}' holds them, pass --column {likely[0]}" if likely else ""


def _read_csv(path: Path, text: str, column: str) -> list[float]:
    from fgrpo_sim.csv_rows import parse_csv_rows

    header, rows = parse_csv_rows(path, text)
    if column not in header:
        raise ValueError(f"{path} line 1: header must name a '{column}' column, got {','.join(header)}"
                         + _column_hint(column, header))
    index = header.index(column)
    return [_parse_rate(path, line_no, fields[index].strip(), column) for line_no, fields in rows]


def _read_jsonl(path: Path, text: str, column: str) -> list[float]:
    from fgrpo_sim.jsonl import parse_json_objects

    rates = []
    for line_no, record in parse_json_objects(path, text):
        if column not in record:
            raise ValueError(f"{path} line {line_no}: expected a JSON object with a '{column}' field"
                             + (_column_hint(column, record) if isinstance(record, dict) else ""))
        rates.append(_parse_rate(path, line_no, record[column], column))
    return rates


#: The text table's short headers for the row keys it shows; `--json` holds every key, full names
#: (rollouts_per_prompt, which is N, only there). Short, so the default table fits 100 columns.
TABLE_COLUMNS = {"rho": "rho", "N": "N", "active_fraction": "active", "tail_miss": "tail_miss",
                 "tail_miss_given_active": "miss|active", "rollouts_per_active_group": "rollouts/active"}


def format_table(plan: Plan) -> str:
    """The plan's rows as an aligned text table: the columns of TABLE_COLUMNS, then one `g(gamma)` column
    per gamma (mean focal weight over active groups). Written out rather than through pandas, whose import
    alone was a sixth of `fgrpo plan`'s start."""
    keys = [*TABLE_COLUMNS, *(k for k in (plan.rows[0] if plan.rows else {}) if k.startswith("focal_weight_gamma_"))]
    headers = [TABLE_COLUMNS.get(k) or f"g({k.removeprefix('focal_weight_gamma_')})" for k in keys]
    cells = [[_cell(row[k]) for k in keys] for row in plan.rows]
    widths = [max(len(text) for text in column) for column in zip(headers, *cells)]
    return "\n".join(" ".join(text.rjust(width) for text, width in zip(line, widths)) for line in [headers, *cells])


def _cell(value) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


__all__ = ["DipPrediction", "predict_dip", "expected_miss_damage", "rho_for_dip_at", "Difficulty", "Plan", "beta_difficulty", "empirical_difficulty", "plan_group_size",
           "read_success_rates", "format_table", "MAX_GROUP_SIZE"]
