"""docs/maze.md: the presets (fgrpo_sim/maze/presets.py), the committed summaries (fgrpo_sim/results/maze-*.json)
and what the page concludes from them, per seed; the table itself is a generated region (`fgrpo maze table`)."""

from __future__ import annotations

import inspect
import re
from functools import cache

import numpy as np

from doc_census import ROOT, Claim, Given
from doc_claims.formats import sci

RESULTS = ROOT / "fgrpo_sim" / "results"
#: The large K the page's conclusions are about (the table's middle column); the claims compute what holds there.
K = "128"


@cache
def _summary(name: str = "maze-results.json") -> dict:
    from fgrpo_sim.jsonl import read_json_file

    return read_json_file(RESULTS / name, "maze summary")


def _preset(name: str):
    from fgrpo_sim.maze.presets import PRESETS

    return PRESETS[name]


def _values(summary: dict, n: int, gamma: float, k: str) -> np.ndarray:
    """Per-seed held-out pass@K of one cell, ordered by seed."""
    cell = next(c for c in summary["cells"] if c["N"] == n and c["gamma"] == gamma)
    return np.array([v for _, v in sorted(zip(cell["seeds"], cell["pass_at_k"][k]["values"]))])


def _ns(summary: dict) -> list[int]:
    return sorted({c["N"] for c in summary["cells"]})


def _focal_gammas(summary: dict) -> list[float]:
    return sorted({c["gamma"] for c in summary["cells"]} - {0.0})


def _words(items) -> str:
    items = [f"{i:g}" for i in items]
    return " and ".join(items) if len(items) <= 2 else ", ".join(items[:-1]) + " and " + items[-1]


# --- the run's time (benchmarks/RESULTS.md, "Command times", through the helpers tests/test_timings.py uses)

def _run_time() -> str:
    from test_timings import _timings

    timings = _timings()
    rows = [line.strip().strip("|").split("|") for line in timings.RESULTS.read_text().splitlines()
            if line.startswith("| `maze-cpu` |") and line.count("|") >= 9]
    machines = {re.fullmatch(r"\s*(\d+)-core VM\s*", cells[2]).group(1) for cells in rows if cells[6].strip() == "yes"}
    (cores,) = machines
    return f"takes {timings.quoted_ranges()['maze-cpu']} on {cores} CPU cores"


# --- the results' header: what the committed summary was run with

def _table_header() -> str:
    from fgrpo_sim.maze.experiment import _t_interval

    preset = _summary()["preset"]
    level = inspect.signature(_t_interval).parameters["level"].default
    return (f"({preset['eval_samples']} samples per maze, {preset['n_heldout']} mazes), mean ± {100 * level:g}% t "
            f"half-width over {len(_summary()['sft']['seeds'])} seeds")


# --- the conclusions, recomputed per seed from the summaries

def _same_lr_wins() -> str:
    """The N at which every F-GRPO gamma beats GRPO's pass@128 on every seed, at the same learning rate."""
    s = _summary()
    ns = [n for n in _ns(s) if all((_values(s, n, g, K) > _values(s, n, 0.0, K)).all() for g in _focal_gammas(s))]
    return f"wins pass@{K}** (at N = {_words(ns)} on every seed, for gamma {_words(_focal_gammas(s))})"


def _pass1_cost() -> str:
    """The paired pass@1 differences (F-GRPO - GRPO, t-interval over seeds): which exclude 0."""
    from fgrpo_sim.figures.maze import paired_differences

    below = [(r["N"], r["gamma"]) for r in paired_differences(_summary(), "1") if r["hi"] < 0]
    above = [(r["N"], r["gamma"]) for r in paired_differences(_summary(), "1") if r["lo"] > 0]
    assert not above, f"a pass@1 gain the page does not state: {above}"
    where = "; ".join(f"N = {n}, gamma {g:g}" for n, g in below)
    return "its pass@1 cost has intervals that include 0" + (f" except at {where}" if below else "")


@cache
def _controls() -> dict[float, dict]:
    """The learning-rate controls, each matched to the gamma whose App. N multiplier m_gamma its lr is."""
    from fgrpo_sim.theory.focal import lr_multiplier

    base = _summary()["preset"]["rl_lr"]
    controls = {}
    for path in sorted(RESULTS.glob("maze-lrcontrol-*-results.json")):
        control = _summary(path.name)
        assert control["sft"]["pass_at_k"]["1"]["values"] == _summary()["sft"]["pass_at_k"]["1"]["values"], \
            f"{path.name} should start from the same SFT checkpoints"
        ratio = control["preset"]["rl_lr"] / base
        gamma = min(_focal_gammas(_summary()), key=lambda g: abs(lr_multiplier(g) - ratio))
        assert abs(lr_multiplier(gamma) - ratio) < 0.01, f"{path.name}: lr x {ratio} is no m_gamma"
        controls[gamma] = control
    assert sorted(controls) == _focal_gammas(_summary())
    return controls


def _control_verdicts() -> str:
    """Per N, F-GRPO - its matched control's pass@K, paired by seed: where every t-interval includes 0 or
    favours the control, and where F-GRPO leads on every seed against every control."""
    from fgrpo_sim.metrics.t_interval import t_interval

    s, even, leads = _summary(), [], []
    for n in _ns(s):
        diffs = [_values(s, n, g, K) - _values(control, n, 0.0, K) for g, control in _controls().items()]
        if all(t_interval(d)[1] <= 0 for d in diffs):
            even.append(n)
        if all((d > 0).all() for d in diffs):
            leads.append(n)
    still = ", its intervals including 0" if set(leads) <= set(even) else ""
    return (f"on pass@{K} at N = {_words(sorted(set(even) - set(leads)))} (intervals include 0 or favour the "
            f"control); at N = {_words(leads)} F-GRPO leads on every seed{still}")


def _fig6() -> str:
    """The smallest of Fig 6's K from which on every focal mean is above GRPO's at every N (lower -log pass@K)."""
    from fgrpo_sim.figures.maze import FIG6_KS

    s = _summary()

    def above(k):
        return all(_values(s, n, g, k).mean() > _values(s, n, 0.0, k).mean() for n in _ns(s) for g in _focal_gammas(s))

    k_from = next(k for i, k in enumerate(FIG6_KS) if all(above(later) for later in FIG6_KS[i:]))
    assert not above(FIG6_KS[0]) and k_from == FIG6_KS[1]
    return f"for K >= {k_from} F-GRPO lies below GRPO at every N"


def _fig7() -> str:
    """Fig 7's largest pass@K over the RL steps (seed means): does it fall for every gamma, and whose most?"""
    from fgrpo_sim.figures.maze import fig7_group_size

    n = fig7_group_size(_summary())
    cells = [c for c in _summary()["cells"] if c["N"] == n]
    big = max(int(key[len("pass@"):]) for key in cells[0]["curve"][0] if re.fullmatch(r"pass@\d+", key))
    drop = {c["gamma"]: c["curve"][0][f"pass@{big}"] - c["curve"][-1][f"pass@{big}"] for c in cells}
    falls = "falls for all" if min(drop.values()) > 0 else "does not fall for all"
    fastest = "GRPO's fastest" if max(drop, key=drop.get) == 0.0 else "GRPO's not fastest"
    return f"(N = {n}): pass@{big} {falls}, {fastest}"


def _caveats() -> str:
    seeds = len(_summary()["sft"]["seeds"])
    return f"{seeds} seeds (t-intervals with {seeds - 1} degrees of freedom"


def _not_run() -> str:
    missing = sorted(set(_preset("paper").group_sizes) - set(_ns(_summary())))
    return f"the paper's {_preset('paper').rl_steps:,} steps, one lr per method, N = {missing[0]}-{missing[-1]} not run"


def _cells(size: int) -> int:
    return (size - 1) // 2  # squares per side = 2 cells + 1 (walls between cells and the border)


def _smallest_n() -> str:
    return f"few active groups at N = {min(_ns(_summary()))}"


# --- the presets table, column by column: paper (App. K), cpu, tiny

def _grid_row() -> str:
    paper, cpu, tiny = (_preset(p) for p in ("paper", "cpu", "tiny"))
    return (f"|{paper.size} x {paper.size} ({_cells(paper.size)} x {_cells(paper.size)} cells)|{cpu.size} x {cpu.size} "
            f"({_cells(cpu.size)} x {_cells(cpu.size)} cells)|{tiny.size} x {tiny.size}|")


def _mazes_row() -> str:
    return "|".join(f"{_preset(p).n_train:,} / {_preset(p).n_heldout:,}" for p in ("paper", "cpu", "tiny"))


def qwen2_parameters(spec, vocab_size: int) -> int:
    """Parameters of `maze.model.build_model(spec)` (Qwen2, tied embeddings): embeddings, per layer q/k/v with
    biases, o, the gated MLP and two RMSNorms, and the final norm. Checked below against the count the cpu
    run measured on the built model, so it cannot drift from transformers' Qwen2 unnoticed."""
    d, layer = spec.hidden_size, 4 * spec.hidden_size ** 2 + 3 * spec.hidden_size  # q, k, v (+ bias), o
    layer += 3 * d * spec.intermediate_size + 2 * d  # gate, up, down; input and post-attention norms
    return vocab_size * d + spec.num_layers * layer + d


def _model_row() -> str:
    from fgrpo_sim.maze.tokenizer import VOCAB

    paper, cpu, tiny = (_preset(p).model for p in ("paper", "cpu", "tiny"))
    measured = _summary()["sft"]["parameters"]
    assert qwen2_parameters(cpu, len(VOCAB)) == measured, "the count formula no longer matches the built model"

    def shape(m):
        return f"d={m.hidden_size}, {m.num_layers} layers, {m.num_heads} heads, MLP {m.intermediate_size}"

    return (f"|{shape(paper)}: {qwen2_parameters(paper, len(VOCAB)) / 1e6:.2f}M params|{shape(cpu)}: {measured:,}|"
            f"d={tiny.hidden_size}, {tiny.num_layers} layer|")


def _warmup(steps: int) -> str:
    return f" ({steps} warmup)" if steps else ""


def _sft_row() -> str:
    paper, cpu, tiny = (_preset(p) for p in ("paper", "cpu", "tiny"))
    return "|".join([*(f"{p.sft_steps:,} steps, batch {p.sft_batch}, lr {sci(p.sft_lr)}{_warmup(p.sft_warmup)}"
                       for p in (paper, cpu)), f"{tiny.sft_steps} steps"])


def _rl_row() -> str:
    paper, cpu, tiny = (_preset(p) for p in ("paper", "cpu", "tiny"))
    return "|".join([*(f"{p.rl_steps:,} steps x {p.rl_prompts_per_step} prompts, lr {sci(p.rl_lr)}"
                       f"{_warmup(p.rl_warmup)}" for p in (paper, cpu)),
                     f"{tiny.rl_steps} x {tiny.rl_prompts_per_step}"])


def _n_row() -> str:
    return "|N|" + "|".join(", ".join(map(str, _preset(p).group_sizes)) for p in ("paper", "cpu", "tiny")) + "|"


def _eval_row() -> str:
    paper, cpu, tiny = (_preset(p) for p in ("paper", "cpu", "tiny"))
    return f"|{paper.eval_samples} samples / maze|{cpu.eval_samples}, curve every {cpu.eval_every} steps|{tiny.eval_samples}|"


def _rl_settings() -> str:
    from fgrpo_sim.core.losses import DEFAULT_CLIP  # the repo's GRPO clip, = TRL's default epsilon (method "grpo")

    low, high = DEFAULT_CLIP["grpo"]
    assert low == high
    return f"token-mean clipped loss, eps {low:g}, no KL"


def _one_pass() -> str:
    return f"so n = {_summary()['preset']['eval_samples']} costs one forward pass"




CLAIMS = [
    Claim(_run_time, source="benchmarks/RESULTS.md, Command times: the maze-cpu rows (benchmarks/timings.py)"),
    Claim(_table_header, source="maze-results.json's preset and seeds; maze.experiment._t_interval's level"),
    Claim(_same_lr_wins, source="maze-results.json: pass@128 per seed, each gamma against gamma 0"),
    Claim(_pass1_cost, source="maze-results.json: paired pass@1 t-intervals (figures.maze.paired_differences)"),
    Claim(_control_verdicts, source="maze-results.json against maze-lrcontrol-*-results.json, paired by seed"),
    Claim(_fig6, source="maze-results.json: seed means at Fig 6's K (figures.maze.FIG6_KS)"),
    Claim(_fig7, source="maze-results.json: Fig 7's curves at figures.maze.FIG7_N, first and last step"),
    Claim(_caveats, source="maze-results.json: seeds"),
    Claim(_not_run, source="maze presets: paper's RL steps and N against the committed summary's N"),
    Claim(lambda: f"not new mazes: {_cells(_summary()['preset']['size'])} x {_cells(_summary()['preset']['size'])} "
                  f"cells", source="maze-results.json's preset size"),
    Claim(_smallest_n, source="maze-results.json: its smallest N"),
    Claim(_grid_row, source="maze.presets.PRESETS: size"),
    Claim(_mazes_row, source="maze.presets.PRESETS: n_train / n_heldout"),
    Claim(_model_row, source="maze.presets.PRESETS: model specs; counts from maze-results.json (cpu, measured) "
                             "and the Qwen2 count checked against it (paper)"),
    Claim(_sft_row, source="maze.presets.PRESETS: SFT settings"),
    Claim(_rl_row, source="maze.presets.PRESETS: RL settings"),
    Claim(_n_row, source="maze.presets.PRESETS: group sizes"),
    Claim(_eval_row, source="maze.presets.PRESETS: evaluation samples and curve interval"),
    Claim(_rl_settings, source="core.losses.DEFAULT_CLIP['grpo'] (TRL's default clip, what method grpo keeps)"),
    Claim(_one_pass, source="maze-results.json's preset: eval_samples"),
]

GIVEN = [
    Given("9 x 9 was too hard", why="a maze size tried and abandoned before the cpu preset (an input; its record "
                                    "is the cpu preset's notes)"),
]
