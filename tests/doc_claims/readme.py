"""README.md's numbers: each phrase computed from its source (tests/doc_census.py says the rule).

Sources: the README's own doc-test command (the one-line theory example), benchmarks/RESULTS.md's command
times (through benchmarks/timings.py, as tests/test_timings.py reads them), code defaults, the committed
group-size records (fgrpo_sim/results/population-group-size*.jsonl), the Maze record, and the paper's
Table 2 (fgrpo_sim/paper_tables/main_results.csv).
"""

from __future__ import annotations

import inspect
import json
import math
import re
import shlex
from functools import cache

from doc_census import ROOT, Claim, Given
from doc_claims.code_defaults import function_default, module_constant
from doc_claims.group_size_records import (EARLIER_DIPS, HELDOUT, STUDY, population_k, record, records,
                                          table2_flanks, table2_grpo)
from test_timings import _timings

RESULTS = ROOT / "fgrpo_sim" / "results"
_BOOTSTRAP = "fgrpo_sim/metrics/bootstrap.py"


# ---- the one-line theory example: the prose says what the doc-test command below it computes ----------


@cache
def _one_line_example() -> dict[str, float]:
    """--n, --mu and --tau of the README's first `fgrpo theory tail-miss` doc-test command."""
    command = re.search(r"^\$ (fgrpo theory tail-miss .*)$", (ROOT / "README.md").read_text(), re.M).group(1)
    words = shlex.split(command)
    return {flag[2:]: float(words[i + 1]) for i, flag in enumerate(words) if flag in ("--n", "--mu", "--tau")}


def _example_phrase() -> str:
    args = _one_line_example()
    return f"a group of N = {args['n']:g} is active"


def _example_rarity_phrase() -> str:
    args = _one_line_example()
    return f"holding {args['tau'] / args['mu']:.0%} of the correct mass, at success rate {args['mu']:g}"


# ---- command times: benchmarks/RESULTS.md through benchmarks/timings.py ------------------------------


@cache
def _ranges() -> dict[str, str]:
    return _timings().quoted_ranges()


def _cores() -> int:
    """The core count of the machine every counted "Command times" row names ("2-core VM")."""
    section = (ROOT / "benchmarks" / "RESULTS.md").read_text().split("## Command times", 1)[1].split("\n## ", 1)[0]
    machines = {cells[2] for line in section.splitlines()
                if len(cells := [c.strip() for c in line.strip().strip("|").split("|")]) >= 8
                and cells[0].startswith("`") and cells[6] == "yes"}
    cores = {int(m.group(1)) for machine in machines if (m := re.match(r"(\d+)-core", machine))}
    assert len(cores) == 1, f"one machine expected, got {machines}"
    return cores.pop()


# ---- code defaults ----------------------------------------------------------------------------------


def _paper_k() -> int:
    """The largest k of the paper's main tables (Tables 1-3: pass@1 and pass@256)."""
    from fgrpo_sim.paper_tables import read_table

    return max(int(row["metric"].split("@")[1]) for row in read_table("main_results.csv")
               if row["metric"].startswith("pass@"))


def _dpi() -> int:
    from fgrpo_sim.figures.registry import save_figure

    return inspect.signature(save_figure).parameters["dpi"].default


def _fig5_exponent() -> int:
    from fgrpo_sim.figures.registry import FigureOptions
    from fgrpo_sim.figures.theory_figures import compute_fig5

    return int(math.log2(compute_fig5(FigureOptions())["n"].max()))


def _notebooks() -> str:
    numbers = sorted(p.name.split("_")[0] for p in (ROOT / "notebooks").glob("[0-9]*_*.py"))
    return f"run notebooks {numbers[0]}-{numbers[-1]}"


# ---- the committed group-size records ----------------------------------------------------------------


# the setting the README quotes: rare_correct_prob 1 (each rare strategy solves every common-solvable prompt), rare mass 0.02
_MAIN = dict(rare_correct_prob=1.0, rare_mass=0.02)


def _lowest_n(verdict: str) -> int | None:
    match = re.fullmatch(r"dip at N = (\d+)", verdict)
    return int(match.group(1)) if match else None


def _adam_dip_phrase() -> str:
    mixed = record(STUDY, **_MAIN, optimizer="adam", parametrisation="orthogonal", lr=0.01)
    axis = record(STUDY, **_MAIN, optimizer="adam", parametrisation="axis", lr=0.01)
    axis_word = "none" if _lowest_n(axis["verdict"]) is None else f"one at N = {_lowest_n(axis['verdict'])}"
    return (f"under Adam, a dip (N = {_lowest_n(mixed['verdict'])}) only when parameters mix strategies "
            f"(orthogonal map), {axis_word} with one parameter per strategy")


def _sgd_and_larger_lr_phrase() -> str:
    sgd = record(STUDY, **_MAIN, optimizer="sgd", parametrisation="orthogonal", lr=2.0)
    main = [r for r in records(STUDY) if all(r[k] == v for k, v in _MAIN.items())]
    # each optimizer's two learning rates: the larger one is the same multiple of the smaller for both
    ratios = set()
    larger_dips = []
    for optimizer in ("adam", "sgd"):
        lrs = sorted({r["lr"] for r in main if r["optimizer"] == optimizer})
        ratios.add(round(lrs[-1] / lrs[0], 6))
        larger_dips += [r["verdict"] for r in main if r["optimizer"] == optimizer and r["lr"] == lrs[-1]
                        and _lowest_n(r["verdict"]) is not None]
    assert len(ratios) == 1, ratios
    word = "none" if not larger_dips else "; ".join(larger_dips)
    sgd_n = _lowest_n(sgd["verdict"])
    sgd_word = f"SGD dips at N = {sgd_n}" if sgd_n is not None else "SGD does not dip"
    return f"{sgd_word}; {word} at {ratios.pop():g}x the lr"


def _dip_size_phrase() -> str:
    ours = record(STUDY, **_MAIN, optimizer="adam", parametrisation="orthogonal", lr=0.01)
    first, last = 100 * ours["first_minus_lowest"][0], 100 * ours["last_minus_lowest"][0]
    paper_first, paper_last = table2_flanks()
    return (f"{first:.1f} and {last:.1f} points of pass@{population_k()} on its flanks, against "
            f"{paper_first:.1f} and {paper_last:.1f} in the paper's Table 2")


def _headline_moved_phrase() -> str:
    """The headline setting's dip under the earlier record's seeding and now (group_size_records.EARLIER_DIPS)."""
    now = record(STUDY, **_MAIN, optimizer="adam", parametrisation="orthogonal", lr=0.01)
    before = EARLIER_DIPS[(now["rare_correct_prob"], "adam", "orthogonal", now["rare_mass"], now["base_lr"])]
    return f"changing only the seeding moved it from N = {before} to N = {_lowest_n(now['verdict'])}"


def _sign(interval: list[float]) -> str:
    """The sign of a difference whose 95% interval excludes 0; 'unclear' when it includes 0."""
    return "positive" if interval[1] > 0 else "negative" if interval[2] < 0 else "unclear"


def _control_sign_phrase() -> str:
    """F-GRPO (gamma 0.5) minus its lr x m_gamma control at the observed lowest N, held-out setting."""
    settings = sorted((r for r in records(HELDOUT)
                       if r["optimizer"] == "adam" and r["parametrisation"] == "orthogonal" and r["rare_mass"] == 0.01),
                      key=lambda r: r["lr"])
    signs = [(r["lr"], _sign(next(f for f in r["fgrpo_at_lowest"] if f["gamma"] == 0.5)["minus_control"]))
             for r in settings]
    (low_lr, low_sign), (high_lr, high_sign) = signs[0], signs[-1]
    return f"({low_sign} at Adam lr {low_lr:g}, {high_sign} at {high_lr:g})"


# ---- Table 2's depth: the committed record (fgrpo_sim/results/table2-depth.json) -------------------------------


@cache
def _depth_record() -> dict:
    """The record through the figure's checked reader (every field typed, every interval ordered)."""
    from fgrpo_sim.figures.table2_depth import read_record

    return read_record(RESULTS / "table2-depth.json")


def _interval_text(value: float, low: float, high: float) -> str:
    """The mean and its interval rounded outward, as the figure and docs/population.md print them."""
    from fgrpo_sim.figures.table2_depth import interval_text

    return f"{value:.1f} {interval_text(low, high)}"


def _depth_fit_phrase() -> str:
    """The fitted GRPO row's dip and its pass@1 error, and whether it reaches the paper's depth and place."""
    record = _depth_record()
    ns = sorted({t["N"] for t in record["fit_targets"]})
    dip = record["grpo_dip_points"]
    left, right = (_interval_text(f["points"], f["ci_low"], f["ci_high"]) for f in (dip["left"], dip["right"]))
    paper_first, paper_last = table2_flanks()
    paper_n = min(table2_grpo(), key=table2_grpo().get)
    reaches = dip["dip_N"] == paper_n and dip["left"]["points"] >= paper_first and dip["right"]["points"] >= paper_last
    return (f"Fitted to the paper's GRPO row alone (pass@1, pass@256 and dNLL_rare at N = {ns[0]} to {ns[-1]}), a "
            f"population dips at N = {dip['dip_N']} by {left} and {right} points, with pass@1 off by "
            f"{record['fitted']['rms']['pass@1']:.1f} points RMS: the fit "
            f"{'reaches' if reaches else 'does not reach'} the paper's depth or place")


def _depth_prediction(method: str, metric: str) -> dict:
    (prediction,) = [p for p in _depth_record()["predictions"]
                     if (p["cell"]["method"], p["cell"]["metric"]) == (method, metric)]
    return prediction


def _depth_predictions_phrase() -> str:
    """F-GRPO's predicted pass@256 contrast to the simulated GRPO (paired interval) beside the paper's, and how many
    predictions hit under the strict rule (v2) and under the first, widened one (v1)."""
    focal = _depth_prediction("F-GRPO", "pass@256")
    c, predictions = focal["contrast"], _depth_record()["predictions"]
    return (f"Predicted without refitting, as contrasts to the simulated GRPO at N = {focal['cell']['N']} with paired "
            f"95% intervals, F-GRPO gains {_interval_text(c['predicted'], c['ci_low'], c['ci_high'])} points of "
            f"pass@256 (the paper: {c['paper']:.1f}); {sum(p['contrast']['hit'] for p in predictions)} of "
            f"{len(predictions)} predictions hit ({sum(p['hit'] for p in predictions)} under the first, widened rule)")


def _depth_gaps_phrase() -> str:
    """The controls' predicted pass@256 gains over the simulated GRPO at N = 8 beside the paper's."""
    cells = [_depth_prediction(m, "pass@256")["contrast"] for m in ("GRPO low-LR", "GRPO-H", "GRPO-KL")]
    ours, paper = (", ".join(f"{c[k]:.1f}" for c in cells[:-1]) + f" and {cells[-1][k]:.1f}" for k in ("predicted", "paper"))
    return f"the low-LR, entropy and KL controls gain {ours} points where the paper's gain {paper}"


def _depth_robustness_phrase() -> str:
    """benchmarks/table2_depth_robustness.py's record: over the alternatives (not the committed run), F-GRPO's
    pass@256 contrast keeps its sign (interval above 0) and spans this range; the v2 hits' range."""
    from fgrpo_sim.sim.table2_depth_robustness import read_robustness

    runs = read_robustness(RESULTS / "table2-depth-robustness.json")["alternatives"]
    focal = [next(c for c in a["summary"]["contrasts"] if (c["method"], c["metric"]) == ("F-GRPO", "pass@256"))
             for a in runs]
    assert all(c["ci_low"] > 0 for c in focal), "the README says the gain keeps its sign"
    gains, hits = [c["predicted"] for c in focal], [a["summary"]["hits_v2"] for a in runs]
    return (f"F-GRPO's gain keeps its sign, not its size ({min(gains):.1f} to {max(gains):.1f} points), and "
            f"{min(hits)} to {max(hits)} predictions hit")


# ---- the Maze record --------------------------------------------------------------------------------


@cache
def _maze() -> dict:
    return json.loads((RESULTS / "maze-results.json").read_text())


def _maze_seeds_phrase() -> str:
    seeds = {len(cell["seeds"]) for cell in _maze()["cells"]}  # the seeds each cell ran, not only the preset's
    assert len(seeds) == 1 and seeds == {_maze()["preset"]["seeds"]}, seeds
    return f"Table 4 analogue ({_maze()['preset']['name']} preset, {seeds.pop()} seeds)"


def _maze_k_phrase() -> str:
    """Whether every F-GRPO gamma beats GRPO (gamma 0, same lr) in mean held-out pass@k at every N, at the Maze
    table's first k above 1 (fgrpo_sim.maze.experiment.TABLE_KS, Table 4's columns)."""
    from fgrpo_sim.maze.experiment import TABLE_KS

    k = str(TABLE_KS[1])
    mean = {(c["N"], c["gamma"]): c["pass_at_k"][k]["mean"] for c in _maze()["cells"]}
    wins = all(value > mean[(n, 0.0)] for (n, gamma), value in mean.items() if gamma > 0)
    return f"F-GRPO {'wins' if wins else 'does not win'} held-out pass@{k} at the same lr"


def _fig7_n() -> int:
    """The N that fig7-maze draws from the committed Maze record (draw_fig7's default)."""
    from fgrpo_sim.figures.maze import fig7_group_size

    return fig7_group_size(_maze())


# the words around each quoted command time, {} standing for its range in RESULTS.md
_TIMES = {"make-figures": "into build/figures/ ({})", "make-test": "runs the tests ({})",
          "rehearsal": "in miniature on CPU ({})", "fresh-make-test": "both installs included, took {}",
          "fig2-full": "Fig 2 grid; {})", "study": "--study`, {})", "maze-cpu": "--preset cpu ...` ({})"}


def _time_claim(name: str, words: str) -> Claim:
    return Claim(lambda: words.format(_ranges()[name]), source=f"benchmarks/RESULTS.md, Command times: {name}")


CLAIMS = [
    *(_time_claim(name, words) for name, words in _TIMES.items()),
    Claim(lambda: f"pass@1 rises, pass@{_paper_k()} falls", source="paper_tables/main_results.csv: largest k"),
    Claim(_example_phrase, source="README's `fgrpo theory tail-miss --n 8 ...` doc-test command"),
    Claim(_example_rarity_phrase, source="README's doc-test command: rho = tau / mu"),
    Claim(lambda: f"Times are ranges on {_cores()} CPU cores", source="benchmarks/RESULTS.md machine column"),
    Claim(lambda: f"PNG ({_dpi()} dpi)", source="fgrpo_sim.figures.registry.save_figure's dpi default"),
    Claim(lambda: f"at the categorical start, N up to 2^{_fig5_exponent()}", source="theory_figures.compute_fig5 grid"),
    Claim(lambda: f"pass@1 against pass@{population_k()}, and rare mass",
          source="fgrpo_sim.sim.population.TrainSpec.pass_k"),
    Claim(lambda: f"training curves at N = {_fig7_n()}", source="fig7-maze drawn from fgrpo_sim/results/maze-results.json"),
    Claim(_notebooks, source="notebooks/NN_*.py"),
    Claim(lambda: f"Intervals are {function_default(_BOOTSTRAP, 'bootstrap_mean_ci', 'confidence'):.0%} bootstrap",
          source="fgrpo_sim.metrics.bootstrap.bootstrap_mean_ci's confidence default"),
    Claim(lambda: f"AdamW; {module_constant('fgrpo_sim/sim/categorical/claims.py', 'DEFAULT_SEEDS')} seeds",
          source="python -m fgrpo_sim.sim.categorical.claims --seeds default"),
    Claim(lambda: f"population, per-prompt ({_population_runs()} runs)",
          source="fgrpo_sim.sim.population_claims.RUNS"),
    Claim(lambda: f"F-GRPO keeps more at equal pass@1; pass@{population_k()} does not move",
          source="fgrpo_sim.sim.population.TrainSpec.pass_k"),
    Claim(lambda: f"pass@{population_k()} falls under GRPO", source="fgrpo_sim.sim.population.TrainSpec.pass_k"),
    Claim(_adam_dip_phrase, source="fgrpo_sim/results/population-group-size.jsonl, Adam lr 0.01, rare mass 0.02"),
    Claim(_sgd_and_larger_lr_phrase, source="fgrpo_sim/results/population-group-size.jsonl, rare mass 0.02"),
    Claim(_maze_seeds_phrase, source="fgrpo_sim/results/maze-results.json preset"),
    Claim(_maze_k_phrase, source="fgrpo_sim.maze.experiment.TABLE_KS"),
    Claim(_dip_size_phrase, source="population-group-size.jsonl (orthogonal, Adam lr 0.01, rare mass 0.02) and "
                                   "the paper's Table 2 (GRPO, math Avg. pass@256)"),
    Claim(_headline_moved_phrase, source="population-group-size.jsonl (Adam, orthogonal, rare mass 0.02) and "
          "group_size_records.EARLIER_DIPS"),
    Claim(_control_sign_phrase, source="fgrpo_sim/results/population-group-size-heldout.jsonl, rare mass 0.01, "
                                       "gamma 0.5 minus_control"),
    Claim(_depth_fit_phrase, source="fgrpo_sim/results/table2-depth.json: fit_targets' N, grpo_dip_points"),
    Claim(_depth_robustness_phrase, source="fgrpo_sim/results/table2-depth-robustness.json: alternatives' summaries"),
    Claim(_depth_predictions_phrase, source="fgrpo_sim/results/table2-depth.json: predictions (pass@256 cells, hits)"),
    Claim(_depth_gaps_phrase, source="fgrpo_sim/results/table2-depth.json (F-GRPO and low-LR predictions, the GRPO "
                                     "row) and the paper's Tables 2 and 3"),
]


def _population_runs() -> int:
    from fgrpo_sim.sim.population_claims import RUNS

    return RUNS


GIVEN: list[Given] = []
