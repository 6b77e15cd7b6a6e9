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
# # 01 · The tail miss is non-monotone in the group size
#
# GRPO only learns from *active* groups (some rollouts right, some wrong). Pick a rare subset E of the
# correct answers with mass tau = rho * mu (rho: its share of the correct mass mu). The **tail-miss**
# event B is "the group is active but never samples E": the update then raises the sampled correct
# answers and, through the softmax normalisation, pushes the rare ones down. Lemma 3.1 of the paper:
#
# $$\Pr(B) = (1-\tau)^N - (\mu-\tau)^N - (1-\mu)^N .$$
#
# This notebook shows that Pr(B) is small at both ends of N, peaks in between, and where the peak sits.

# %%
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt
from IPython.display import display

from fgrpo_sim import theory
from fgrpo_sim.figures.style import new_figure

# %% [markdown]
# ## Pr(B) against N (the paper's Fig. 3)
# Three prompt difficulties, four rare shares; the star marks the peak N* (exact integer argmax).

# %%
n = np.unique(np.round(np.geomspace(1, 512, 200)).astype(int))
fig, axes = new_figure(1, 3, width=3.6, height=3.0, sharey=True)
for ax, mu in zip(axes, (0.8, 0.5, 0.2)):
    for rho in (0.01, 0.05, 0.1, 0.2):
        line, = ax.plot(n, theory.tail_miss_probability(n, mu, rho * mu), label=rf"$\rho$ = {rho:g}")
        peak = theory.peak_group_size(mu, rho * mu)
        ax.plot(peak.n_star, peak.probability, "*", color=line.get_color(), ms=10)
    ax.set_xscale("log", base=2)
    ax.set_title(rf"$\mu$ = {mu:g}")
    ax.set_xlabel("group size N")
axes[0].set_ylabel("tail-miss probability Pr(B)")
fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right center")  # beside the panels, over no curve
display(fig)
plt.close(fig)

# %% [markdown]
# ## Why both ends are safe: inactivity at small N, coverage at large N
# Pr(B) = Pr(no rollout in E) minus the two inactive outcomes inside it. At small N most groups are
# all-right or all-wrong, so there is no gradient to do damage; at large N some rollout almost surely
# lands in E. The miss lives in between.

# %%
mu, rho = 0.5, 0.05
tau = rho * mu
n = np.arange(1, 257)
fig, ax = new_figure(width=6, height=3.4)
ax.plot(n, theory.activity_probability(n, mu), label=r"Pr(active) = $1 - \mu^N - (1-\mu)^N$")
ax.plot(n, (1 - tau) ** n, label=r"Pr(no rollout in E) = $(1-\tau)^N$")
ax.plot(n, theory.tail_miss_probability(n, mu, tau), lw=2.5, color="black", label="Pr(B): active and E missed")
ax.set_xscale("log", base=2)
ax.set_xlabel("group size N")
ax.set_ylabel("probability")
ax.set_title(rf"$\mu$ = {mu}, $\rho$ = {rho}")
ax.legend(fontsize=8)
display(fig)
plt.close(fig)
print("peak:", theory.peak_group_size(mu, tau))

# %% [markdown]
# ## A Monte Carlo check of the lemma
# Draw groups from the three regions (E, correct-not-E, incorrect) and count the tail misses.

# %%
rng = np.random.default_rng(0)
groups = 200_000
rows = []
for size in (2, 8, 32, 128):
    draws = rng.multinomial(size, [tau, mu - tau, 1 - mu], size=groups)
    correct = draws[:, 0] + draws[:, 1]
    observed = np.mean((correct > 0) & (correct < size) & (draws[:, 0] == 0))
    rows.append((size, observed, float(theory.tail_miss_probability(size, mu, tau))))
    print(f"N = {size:4d}: observed {observed:.4f}  Lemma 3.1 {rows[-1][2]:.4f}  "
          f"(binomial sd {np.sqrt(rows[-1][2] * (1 - rows[-1][2]) / groups):.4f})")

# %% [markdown]
# ## The peak map N*(mu, rho)
# Rarer modes (small rho) push the peak to larger N and make it higher; so do extreme success rates,
# where activity needs many rollouts. Read panel (a) with the training N in mind, say the typical
# N = 8 of LLM training: along the contour labelled 8 (middling mu, rho above about 0.01) N = 8 is the
# peak itself; in the dark region above it (N* < 8: rare modes that are not very rare) N = 8 is already
# past the peak; everywhere else (rarer modes, mu near 0 or 1) N = 8 is on the rising side, where a
# larger group first makes the tail miss likelier. Panel (b): at the peak, Pr(B) is at least 0.5 on
# most of the plotted plane (the share is printed below the map), not everywhere: it drops below 0.5 on
# easy prompts (mu near 1) once rho reaches a few percent, and at every mu once the "rare" share is
# large (rho >= 0.3, where E is hardly rare: 0.27 at mu = 0.2, rho = 0.5).

# %%
from fgrpo_sim.figures.population import compute_peak_map, draw_peak_map
from fgrpo_sim.figures.registry import FigureOptions

peak_map = compute_peak_map(FigureOptions())
fig = draw_peak_map(peak_map)
display(fig)
plt.close(fig)
print(f"Pr(B) at N* >= 0.5 on {np.mean(peak_map['probability'] >= 0.5):.0%} of the plotted (mu, rho) grid; "
      f"at mu = 0.2, rho = 0.5 it is {theory.peak_group_size(0.2, 0.1).probability:.2f}")

# %% [markdown]
# ## From one prompt to a data set: the planner
# `fgrpo plan` averages these quantities over a distribution of prompt difficulties (here uniform,
# Beta(1, 1)) so a practitioner can choose N, and reports the mean focal weight F-GRPO would apply.

# %%
from fgrpo_sim.planner import beta_difficulty, format_table, plan_group_size

plan = plan_group_size(beta_difficulty(1, 1), rhos=[0.05], group_sizes=[2, 4, 8, 16, 64, 256], gammas=[0.5, 1.0])
print(format_table(plan))
print()
print(plan.recommendation)
