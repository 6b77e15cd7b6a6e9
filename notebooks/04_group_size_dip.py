# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04 · Table 2's dip in pass@256: the lemma's prediction and the population simulator
#
# The paper's Table 2 (Qwen2.5-7B, GRPO, equal steps): as N goes 2 → 32, math pass@256 goes
# 75.0, 71.1, **64.1**, 67.5, 70.1 and dNLL_rare 0.19, 0.44, **0.68**, 0.66, 0.52, while pass@1 rises.
# Lemma 3.1 explains a dip by the tail-miss probability Pr(B), which peaks at an intermediate N.
# This notebook (1) turns the lemma into a prediction of *where* pass@k should dip, (2) reads the
# group-size study of the shared-strategy population (committed per-setting report
# `fgrpo_sim/results/population-group-size.jsonl`; rerun with `fgrpo simulate group-size --out FILE --json`), and
# (3) says what the simulator does and does not reproduce, per optimizer and **parametrisation**.

# %%
# %matplotlib inline
import numpy as np
import pandas as pd
from IPython.display import display

from fgrpo_sim.figures.population_group_size import COMMITTED, compute, draw, draw_grid
from fgrpo_sim.figures.registry import FigureOptions
from fgrpo_sim.figures.style import new_figure
from fgrpo_sim.jsonl import read_json_objects
from fgrpo_sim.planner import beta_difficulty, predict_dip, rho_for_dip_at

# %% [markdown]
# ## 1. The prediction
#
# `planner.predict_dip` averages over prompts (a Beta law or a pilot's per-prompt rates, and the rare
# share rho = tau / mu as a number, a law, or per prompt) the expected *damage* of an active tail miss:
# Pr(active, no draw in E) weighted by the group's mean |GRPO advantage| 2 sqrt(m (1 - m)), m = X / N.
# Its peak over the candidate N is where pass@k should be lowest at equal steps. It is a first-order,
# one-group argument: no optimizer, no shared parameters.

# %%
sizes = (2, 4, 8, 16, 32, 64, 128, 256)
uniform = beta_difficulty(1, 1)
fig, ax = new_figure(width=5.5, height=3.2)
for rho in (0.2, 0.05, 0.01):
    p = predict_dip(uniform, rho, sizes)
    ax.plot(p.group_sizes, p.damage, "-o", ms=3, label=rf"$\rho$ = {rho:g}: dip at N = {p.n_star}")
ax.set_xscale("log", base=2)
ax.set_xlabel("group size N")
ax.set_ylabel("expected damage of active misses")
ax.set_title(r"$\mu \sim$ Beta(1, 1)")
ax.legend()
display(fig)
lo, hi = rho_for_dip_at(8, uniform, sizes)
print(f"A dip at N = 8 (Table 2) needs a rare share rho in [{lo:.3f}, {hi:.3f}] with mu ~ Beta(1, 1).")

# %% [markdown]
# ## 2. The study and its parametrisations
#
# Shared-strategy population: 256 training and 256 held-out prompts, 4 common, 4 rare and 8 wrong
# strategies whose logits s are shared by every prompt; a quarter of the prompts are solved only by one
# rare strategy. By default the rare strategies are correct on every common-solvable prompt, so they are
# exactly the lemma's subset E there (`rare_correct_prob` 1; a variant at 0.25 makes them worse than the
# common ones). The logits are a fixed linear map of the trained parameters, s = M theta:
#
# * **axis** (M = I): one parameter per strategy, so Adam's second moment of a rare strategy sees only
#   its own sparse gradients;
# * **orthogonal** (a random rotation): the same function class, initial policy and SGD trajectory as
#   axis (a test checks it), but every coordinate Adam normalises mixes all strategies, as in an LLM;
# * **dense** (a random map into 4K parameters, least-norm start): mixes too, and changes SGD's path.
#
# Each setting: 10 population draws (each with its own map) x 2 batch seeds, 200 steps of 32 prompts,
# N = 2 .. 1024, GRPO, F-GRPO (gamma 0.5, 1) and GRPO at lr x m_gamma. Intervals resample populations.

# %%
reports = [obj for _, obj in read_json_objects(COMMITTED)]
rows = []
for r in reports:
    f05 = next((e for e in r["fgrpo_at_lowest"] if e["gamma"] == 0.5), {})
    rows.append({
        "rare p": r["rare_correct_prob"], "optimizer": r["optimizer"], "map": r["parametrisation"],
        "rare mass": r["rare_mass"], "median rho": r["rare_share_median"], "lr": r["lr"],
        "predicted N": r["predicted_N"], "lowest N": r["observed_lowest_N"], "share": r["lowest_share"],
        "verdict": r["verdict"], "first minus lowest": r["first_minus_lowest"][0],
        "first low": r["first_minus_lowest"][1], "last minus lowest": r["last_minus_lowest"][0],
        "last low": r["last_minus_lowest"][1],
        "dNLL_rare at lowest": r["dnll_rare"][r["N"].index(r["observed_lowest_N"])],
        "F0.5 minus GRPO": f05.get("minus_grpo", [np.nan])[0],
        "F0.5 minus control": f05.get("minus_control", [np.nan])[0],
        "best-ckpt lowest N": r["best_checkpoint"]["observed_lowest_N"],
    })
table = pd.DataFrame(rows)
display(table[table["rare p"] == 1.0].drop(columns="rare p").round(4))
display(table[table["rare p"] != 1.0].round(4))

# %% [markdown]
# Where the lowest N is, and how sure: the share of bootstrap resamples (over the 10 populations) in which
# each N is GRPO's lowest, per setting at rare mass 0.02 (the figure's bars). A dip needs an interior lowest
# N *and* both flank intervals (95% t over populations) above 0; otherwise the verdict says "no dip".

# %%
shares = pd.DataFrame([{"optimizer": r["optimizer"], "map": r["parametrisation"], "lr": r["lr"],
                        "verdict": r["verdict"], **dict(zip(map(str, r["N"]), r["argmin_share"] or []))}
                       for r in reports if r["rare_mass"] == 0.02 and r["rare_correct_prob"] == 1.0])
display(shares)

# %% [markdown]
# dNLL_rare (App. M.2: the NLL increase of the base model's rare-correct rollouts) against N, GRPO, rare
# mass 0.02, the smaller learning rate: the sign says whether the toy forgets its rare modes at all.

# %%
fig, axes = new_figure(1, 2, width=4.6, height=3.0)
for ax, opt in zip(axes, ("adam", "sgd")):
    for r in reports:
        if (r["optimizer"], r["rare_mass"], r["rare_correct_prob"]) == (opt, 0.02, 1.0) and r["lr"] == min(
                x["lr"] for x in reports if x["optimizer"] == opt):
            ax.plot(r["N"], r["dnll_rare"], "-o", ms=3, label=r["parametrisation"])
    ax.axhline(0, color="0.5", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("group size N")
    ax.set_ylabel(r"$\Delta$NLL$_{rare}$ (train)")
    ax.set_title(f"{opt}, rare mass 0.02")
    ax.legend()
display(fig)

# %% [markdown]
# ## 3. The figure

# %%
import tempfile
from pathlib import Path

with tempfile.TemporaryDirectory() as empty:  # no cached run: the committed report
    data = compute(FigureOptions(data_dir=Path(empty), progress=False))
display(draw(data))  # the headline: Adam, orthogonal map, beside the paper's Table 2
display(draw_grid(data))  # every optimizer x map, with F-GRPO and the lr x m_gamma control

# %% [markdown]
# ## 4. What the simulator does, and where it differs from the paper
#
# Intervals: 95% t over the 10 populations, paired; "share": bootstrap resamples of the populations in which an
# N is GRPO's lowest. Each row draws from its own key, so its numbers do not depend on the other settings of the
# run. The numbers are printed from the record (not typed here), so they follow it when it is regenerated.

# %%
def setting(optimizer, kind, rare_mass=0.02, rare_p=1.0, larger_lr=False):
    """One setting's report; the optimizer's smaller learning rate unless larger_lr."""
    lrs = sorted({x["lr"] for x in reports if x["optimizer"] == optimizer})
    (found,) = [x for x in reports if (x["optimizer"], x["parametrisation"], x["rare_mass"], x["rare_correct_prob"],
                                       x["lr"]) == (optimizer, kind, rare_mass, rare_p, lrs[-1 if larger_lr else 0])]
    return found


def ci(v):
    return f"{v[0]:+.3f} [{v[1]:+.3f}, {v[2]:+.3f}]"


def where(r):
    held = ", ".join(f"{n}: {s:.2f}" for n, s in zip(r["N"], r["argmin_share"] or []) if s >= 0.01)
    return f"{r['verdict']} (predicted {r['predicted_N']}; shares {held})"


default = [r for r in reports if r["rare_correct_prob"] == 1.0]
axis = [r for r in default if (r["optimizer"], r["parametrisation"]) == ("adam", "axis")]
edge = sum(r["observed_lowest_N"] == min(r["N"]) and r["lowest_share"] == 1 for r in axis)
print(f"Adam axis: lowest at N = 2 in every resample in {edge} of {len(axis)} settings; dNLL_rare at rare mass 0.02:",
      f"{min(setting('adam', 'axis')['dnll_rare']):+.2f} .. {max(setting('adam', 'axis')['dnll_rare']):+.2f}")
head = setting("adam", "orthogonal")
print(f"Adam orthogonal, rare mass 0.02 (median rho {head['rare_share_median']}): {where(head)}; flanks",
      f"{ci(head['first_minus_lowest'])} and {ci(head['last_minus_lowest'])}")
for mass in (0.005, 0.1):
    print(f"Adam orthogonal, rare mass {mass}: {where(setting('adam', 'orthogonal', mass))}")
print(f"Adam dense, rare mass 0.02: lowest N {setting('adam', 'dense')['observed_lowest_N']}:",
      where(setting("adam", "dense")))
print("dips at the larger learning rate:", [r["verdict"] for r in default if r["dip"] and r["lr"] == max(
    x["lr"] for x in default if x["optimizer"] == r["optimizer"])] or "none")
for larger in (False, True):
    r = setting("sgd", "orthogonal", larger_lr=larger)
    print(f"SGD (axis = orthogonal), rare mass 0.02, lr {r['lr']:g}: {where(r)}")
print("SGD's spread between populations over Adam orthogonal's: "
      f"{setting('sgd', 'orthogonal')['sd_between_populations'] / head['sd_between_populations']:.1f}x")
f05 = next(e for e in head["fgrpo_at_lowest"] if e["gamma"] == 0.5)
print(f"F-GRPO 0.5 at Adam orthogonal's lowest N: minus GRPO {ci(f05['minus_grpo'])}, minus its lr x m_0.5 control",
      f"{ci(f05['minus_control'])}, at equal pass@1 {ci(f05['equal_pass1_minus_control'])}")
for kind in ("axis", "orthogonal", "dense"):
    print(f"rare-worse (rare_correct_prob 0.25), Adam {kind}: {where(setting('adam', kind, rare_p=0.25))}")
ratios = [r["observed_lowest_N"] / r["predicted_N"] for r in reports if r["dip"]]
print(f"every dip's lowest N over predict_dip's: {min(ratios):g} .. {max(ratios):g}")

# %% [markdown]
# * **One Adam coordinate per strategy (axis): no dip.** GRPO's held-out pass@256 is lowest at N = 2 in
#   every bootstrap resample (all axis settings but a flat one), and dNLL_rare is negative: Adam's
#   per-coordinate normalisation inflates a rare strategy's own sparse, positive gradients, so GRPO *gains*
#   rare-correct mass. A toy that never forgets cannot show Table 2's dip.
# * **Coordinates that mix strategies (orthogonal): the dip comes back under Adam** at the
#   Table-2-comparable rare share (mass 0.02) and at the rarer one (mass 0.005, at a larger N, as the lemma
#   orders them), both flank intervals above 0, dNLL_rare positive and highest near the dip, as in Table 2. The
#   orthogonal map changes nothing SGD sees (same trajectory), so this is Adam's coordinate system alone. At the
#   most common rare mode (mass 0.1) pass@256 falls with N: no dip. The dense map's lowest N at 0.02 is
#   uncertain (shares spread) and its N = 2 flank includes 0: no dip there.
# * **Shallow:** a point or two of pass@256 on each flank, against 10.9 and 6.0 in the paper's Table 2; no
#   setting dips at the larger learning rate.
# * **SGD does not dip here:** its lowest N moves with the learning rate, its flank intervals include 0,
#   and its spread over population draws is several times Adam-orthogonal's.
# * **F-GRPO at the dip** beats GRPO at equal steps, but as a smaller step would: minus its lr x m_0.5
#   control the interval holds 0; and that difference changes sign with the learning rate (docs/population.md,
#   held-out settings: negative at lr 0.003, positive at lr 0.03, rare mass 0.01).
# * **Rare strategies that are not the best** (correct on a quarter of the prompts, below the common ones'
#   half): even the axis map dips under Adam, so one parameter per strategy hides the dip only together with
#   rare strategies that GRPO would eventually prefer anyway.
# * **Where a dip falls is not robust to the random draws:** changing only the seeding (issue 44: each row's
#   counts from its own key; same settings, other draws) moved this dip from N = 16 to N = 8 and the rarer
#   mode's from 64 to 32, and removed SGD's dip at mass 0.02 (docs/population.md lists every change). Read
#   the lowest N as a region (the shares), and `predict_dip`'s N, a first-order one-group estimate, as within a
#   factor of about 2 of it.
