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
# # 02 · Where the mass goes: Proposition 3.2 on concrete examples
#
# In the categorical abstraction (a softmax over a few actions, some correct), one update of the
# linear surrogate moves each logit by dz_i = (eta/N) p_i (R_i - S_R): sampled actions carry their
# reward R_i, unsampled ones 0, and S_R = R_c P_pos + R_w P_neg is the batch baseline.
# Proposition 3.2 splits the first-order change of the **unsampled-correct mass** Q_upos into
#
# $$\Delta Q_{upos} = \tfrac{\eta}{N}\Big[\underbrace{-S_R\,U_{pos2}}_{\text{direct drift}}
#   \;\underbrace{-\,Q_{upos}\big((R_c-S_R)A_2 + (R_w-S_R)B_2 - S_R U_2\big)}_{\text{normalisation coupling}}\Big].$$
#
# The story: on a reward-positive batch the correct answers the group did not sample lose mass, even
# while the total correct mass Q_pos grows.

# %%
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt
import torch
from IPython.display import display

from fgrpo_sim import theory
from fgrpo_sim.figures.style import new_figure
from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

# %% [markdown]
# ## A concrete prompt
# Eight actions: one common correct answer (index 0), two rare correct answers (1, 2) and five
# incorrect ones. Binary rewards (R_c = 1, R_w = 0, as in the paper's LLM runs). The group of N = 4
# hits the common answer twice and two incorrect answers: an active, reward-positive batch.

# %%
config = CategoricalConfig(num_actions=8, num_correct=3, anchor_logit=1.0, correct_logit=-1.0, incorrect_logit=0.0,
                           reward_correct=1.0, reward_wrong=0.0, surrogate="distinct", optimizer="sgd", lr=0.1,
                           group_sizes=(4,), gammas=(0.0,), seeds=(0,), dtype="float64", device="cpu",
                           sampler="torch")
p = CategoricalBatch(config, [4], [0.0], [0]).probs()[0].numpy()
correct = np.arange(8) < 3
counts = np.array([2, 0, 0, 1, 1, 0, 0, 0])
print("p =", np.round(p, 4), " Q_pos =", round(p[correct].sum(), 4))


def prop32_terms(p, correct, counts, r_c, r_w):
    """The two bracketed terms of Prop. 3.2 (per unit eta/N), from the aggregates defined with Prop. 3.2 (paper Sec. 3)
    (A2, B2, U_pos2, U2: sums of squared probabilities over the sampled and unsampled sets)."""
    sampled = counts > 0
    s_r = r_c * p[correct & sampled].sum() + r_w * p[~correct & sampled].sum()
    a2, b2 = (p[correct & sampled] ** 2).sum(), (p[~correct & sampled] ** 2).sum()
    u_pos2, u2 = (p[correct & ~sampled] ** 2).sum(), (p[~sampled] ** 2).sum()
    q_upos = p[correct & ~sampled].sum()
    return s_r, -s_r * u_pos2, -q_upos * ((r_c - s_r) * a2 + (r_w - s_r) * b2 - s_r * u2)


s_r, direct, coupling = prop32_terms(p, correct, counts, 1.0, 0.0)
eta, n = config.lr, counts.sum()
dq_pos, dq_upos = theory.first_order_mass_change(p, correct, counts, 1.0, 0.0, eta)
print(f"S_R = {s_r:.4f}; direct drift {direct:.2e}, coupling {coupling:.2e} (per unit eta/N)")
print(f"sum x eta/N = {(direct + coupling) * eta / n:.3e}  vs theory.first_order_mass_change: dQ_upos = {dq_upos:.3e}")
print(f"dQ_pos = {dq_pos:.3e} > 0 while dQ_upos < 0")

fig, ax = new_figure(width=5.5, height=3.2)
labels = ["direct drift\n-S_R U_pos2", "coupling\n-Q_upos(...)", "dQ_upos\n(total)", "dQ_pos"]
values = np.array([direct, coupling, direct + coupling, dq_pos * n / eta])
ax.bar(labels, values, color=["tab:red", "tab:orange", "tab:purple", "tab:green"])
ax.axhline(0, color="black", lw=0.8)
ax.set_ylabel("first-order change per unit eta/N")
ax.set_title("One reward-positive group: unsampled-correct mass falls, Q_pos rises")
display(fig)
plt.close(fig)

# %% [markdown]
# ## Closed form vs the simulator
# The categorical simulator (`fgrpo_sim.sim.categorical`, surrogate "distinct", plain SGD at lr = eta)
# applies the same update to real logits. Its one-step change should equal the exact closed form
# (`theory.exact_mass_change`) at every eta, and the first-order formula as eta -> 0.

# %%
etas = np.geomspace(1e-3, 30, 15)
simulated, exact, first = [], [], []
for step_size in etas:
    batch = CategoricalBatch(config.with_(lr=float(step_size)), [4], [0.0], [0])
    before = batch.probs()[0].numpy()
    batch.step_with_counts(torch.as_tensor(counts, dtype=torch.float64)[None])
    after = batch.probs()[0].numpy()
    simulated.append((after - before)[correct & (counts == 0)].sum())
    exact.append(theory.exact_mass_change(p, correct, counts, 1.0, 0.0, step_size)[1])
    first.append(theory.first_order_mass_change(p, correct, counts, 1.0, 0.0, step_size)[1])
simulated, exact, first = map(np.asarray, (simulated, exact, first))
print("max |simulator - exact closed form| =", np.abs(simulated - exact).max())

fig, ax = new_figure(width=5.5, height=3.4)
ax.loglog(etas, -simulated, "o", label="simulator (one SGD step)")
ax.loglog(etas, -exact, "-", label="exact closed form")
ax.loglog(etas, -first, "--", label="first order (Prop. 3.2)")
ax.set_xlabel(r"step size $\eta$")
ax.set_ylabel(r"loss of unsampled-correct mass, $-dQ_{upos}$")
ax.set_title(r"First order is exact as $\eta \to 0$; the exact form at any $\eta$")
ax.legend()
display(fig)
plt.close(fig)

# %% [markdown]
# ## When does it happen?
# Sample many groups from policies of growing correct mass Q_pos (the common answer's logit runs from
# -2 to 4, the two rare answers stay at -1) and count the groups whose update raises Q_pos while
# shrinking Q_upos. Under both reward conventions the squeeze is absent while the "common" answer is
# no more likely than the rare ones (left edge: a sampled correct answer then lifts its unsampled
# peers through the normalisation), and it becomes nearly universal on easy prompts. The share is not
# monotone in N, like the tail miss of notebook 01: at middling Q_pos, N = 8 squeezes more often than
# N = 4 (squeeze shares 0.83 vs 0.68 at Q_pos = 0.26 with rewards 1 / 0, printed below the plot: more
# of N = 8's groups are active, 0.91 vs 0.69), while N = 32 squeezes least (0.32 there) because it
# samples the rare answers more often.

# %%
rng = np.random.default_rng(0)
anchor_logits = np.linspace(-2.0, 4.0, 13)
fig, axes = new_figure(1, 2, width=4.2, height=3.3, sharey=True)
shares = {}  # (reward of a wrong answer, N) -> (Q_pos, squeeze share) per anchor logit
for ax, (r_w, title) in zip(axes, ((0.0, "rewards 1 / 0"), (-1.0, "rewards +1 / -1"))):
    for size in (4, 8, 32):
        q_pos, fraction = [], []
        for a in anchor_logits:
            z = np.array([a, -1.0, -1.0, 0, 0, 0, 0, 0])
            probs = np.exp(z) / np.exp(z).sum()
            draws = rng.multinomial(size, probs, size=4000)
            dpos, dupos = theory.first_order_mass_change(probs[None], correct, draws, 1.0, r_w, 0.1)
            q_pos.append(probs[correct].sum())
            fraction.append(np.mean((dpos > 0) & (dupos < 0)))
        ax.plot(q_pos, fraction, marker="o", ms=3, label=f"N = {size}")
        shares[r_w, size] = (q_pos, fraction)
    ax.set_title(title)
    ax.set_xlabel(r"correct mass $Q_{pos}$ of the prompt")
axes[0].set_ylabel(r"share of groups: $Q_{pos}$ up, $Q_{upos}$ down")
axes[0].legend()
display(fig)
plt.close(fig)
at = int(np.argmin(np.abs(np.asarray(shares[0.0, 4][0]) - 0.26)))  # the middling Q_pos the text quotes
for size in (4, 8, 32):
    q, share = shares[0.0, size][0][at], shares[0.0, size][1][at]
    print(f"rewards 1 / 0, Q_pos = {q:.2f}, N = {size:2d}: squeeze share {share:.2f} of all groups, "
          f"active share {float(theory.activity_probability(size, q)):.2f}")

# %% [markdown]
# The squeeze is the mechanism behind the tail miss of notebook 01: every active group that misses a
# rare correct answer lowers it. Focal weighting (notebook 03) shrinks exactly these updates on
# high-success prompts, where the squeeze is most frequent.
