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
# # 05 · Table 2's depth: what makes a group-size dip deep, and a prediction that was not fitted
#
# The paper's GRPO row of Table 2 (Qwen2.5-7B, math average) dips in pass@256 at N = 8 by ten and six points
# against its flanks. Notebook 04 found the mechanism in the shared-strategy population, but a dip of one or two
# points. This notebook reads what the depth study committed:
#
# 1. the **search** (`fgrpo_sim/results/table2-depth-search.json`, `benchmarks/table2_depth_search.py`): each
#    property a user can estimate about their own task and training, moved one at a time around the fitted
#    setting, with the dip's place, both flanks and dNLL_rare against N;
# 2. the **record** (`fgrpo_sim/results/table2-depth.json`, `fgrpo simulate table2-depth`): a population fitted to
#    the GRPO row only, and F-GRPO and the low-LR control at N = 8 predicted without refitting;
# 3. one **live run** of a few seconds that moves one property and shows its effect.
#
# Every number below is printed from those files or computed here, never typed.

# %%
# %matplotlib inline
from dataclasses import fields, replace

import pandas as pd
from IPython.display import display

from fgrpo_sim.figures.style import new_figure
from fgrpo_sim.figures.table2_depth import COMMITTED, draw, figure_data, paper_dip, read_record
from fgrpo_sim.jsonl import read_json_file
from fgrpo_sim.packaged import committed_result
from fgrpo_sim.sim import table2_depth as t2

record = read_record(COMMITTED)
data = figure_data(record, f"fgrpo_sim/results/{COMMITTED.name}")
search = read_json_file(committed_result("table2-depth-search.json"), "table2-depth search")
low_n, first, last = paper_dip(data["paper"])
print("paper, GRPO pass@256 by N:", dict(data["paper"]["GRPO"]["pass@256"]))
print(f"paper's dip: N = {low_n}, {first:.1f} and {last:.1f} points below N = 2 and N = 32")
print(f"a dip counts as deep here when both flanks are at least {search['deep_points']:g} points")

# %% [markdown]
# ## 1. One property at a time
#
# Around the fitted setting, each property moves alone (the others at the fit's values). For each value: where
# GRPO's held-out pass@256 is lowest, both flanks (pass@256 at the smallest and the largest N minus the lowest,
# 95% t intervals over populations), the depth (the smaller flank) and dNLL_rare at the lowest N.

# %%
def flank(d: dict) -> str:
    return f"{d['points']:+.1f} [{d['ci_low']:+.1f}, {d['ci_high']:+.1f}]"


def dnll_at(result: dict, n: int) -> float:
    return next(r["dnll_rare"]["mean"] for r in result["grpo"] if r["N"] == n)


ofat = pd.DataFrame([{"property": r["property"], "value": r["value"], "lowest N": r["dip"]["dip_N"],
                      "left flank": flank(r["dip"]["left"]), "right flank": flank(r["dip"]["right"]),
                      "depth": min(r["dip"]["left"]["points"], r["dip"]["right"]["points"]),
                      "dNLL_rare at lowest N": dnll_at(r, r["dip"]["dip_N"])} for r in search["ofat"]])
fit = search["fit"]
print("fit:", fit["setting"], f"lowest N {fit['dip']['dip_N']}, flanks", flank(fit["dip"]["left"]),
      flank(fit["dip"]["right"]))
display(ofat.round(3))

# %% [markdown]
# The same as pictures: the depth of the dip against each property's value (the fit's value dotted), and where
# the lowest N falls. Above the dashed line a dip is deep on both flanks.

# %%
properties = list(dict.fromkeys(r["property"] for r in search["ofat"]))
columns = min(4, len(properties))
rows = -(-len(properties) // columns)
fig, axes = new_figure(rows, columns, width=3.4, height=2.6, squeeze=False)
for ax, name in zip(axes.flat, properties):
    part = [r for r in search["ofat"] if r["property"] == name]
    part.append({"value": fit["setting"][name], "dip": fit["dip"]})
    part.sort(key=lambda r: r["value"])
    for side, colour in (("left", "tab:blue"), ("right", "tab:red")):
        points = [r["dip"][side] for r in part]
        ax.errorbar([r["value"] for r in part], [p["points"] for p in points],
                    yerr=[[p["points"] - p["ci_low"] for p in points], [p["ci_high"] - p["points"] for p in points]],
                    fmt="-o", ms=3, capsize=2, color=colour, label=f"{side} flank (N = {points[0]['N']})")
    for r in part:
        ax.annotate(f"N={r['dip']['dip_N']}", (r["value"], max(r["dip"]["left"]["points"], r["dip"]["right"]["points"])),
                    textcoords="offset points", xytext=(0, 5), ha="center", fontsize=8)
    ax.axhline(search["deep_points"], color="0.4", ls="--", lw=0.9)
    ax.axvline(fit["setting"][name], color="0.4", ls=":", lw=0.9)
    ax.set_xlabel(name, fontsize=9)
    ax.set_ylabel("flank (points)", fontsize=9)
for ax in list(axes.flat)[len(properties):]:
    ax.set_axis_off()
axes.flat[0].legend(fontsize=8)
display(fig)

# %% [markdown]
# dNLL_rare against N for each property's smallest and largest value: whether the rare-correct trajectories
# are forgotten most where pass@256 is lowest, as in the paper (0.68 at N = 8).

# %%
fig, axes = new_figure(rows, columns, width=3.4, height=2.6, squeeze=False)
for ax, name in zip(axes.flat, properties):
    part = sorted((r for r in search["ofat"] if r["property"] == name), key=lambda r: r["value"])
    for r, ls in ((part[0], "-"), (part[-1], "--")):
        ax.plot([g["N"] for g in r["grpo"]], [g["dnll_rare"]["mean"] for g in r["grpo"]], ls, marker="o", ms=3,
                label=f"{name} = {r['value']:g}")
    paper = data["paper"]["GRPO"]["dnll_rare"]
    ax.plot([n for n, _ in paper], [v for _, v in paper], color="k", lw=1, label="paper")
    ax.set_xscale("log", base=2)
    ax.set_xticks([n for n, _ in paper], [str(n) for n, _ in paper])
    ax.set_xlabel("group size N", fontsize=9)
    ax.set_ylabel(r"$\Delta$NLL$_{rare}$", fontsize=9)
    ax.legend(fontsize=7)
for ax in list(axes.flat)[len(properties):]:
    ax.set_axis_off()
display(fig)

# %% [markdown]
# ## 2. Which properties a deep dip needs, and which move it to N = 8
#
# The coarse grid of the search (every combination of the pre-registered free parameters, fewer populations
# than the sweeps above, so single settings are noisy): per value of each property, the share of settings that
# dip deep on both flanks and the share whose lowest N is 8. A property matters where its values' shares differ.

# %%
summary = pd.DataFrame([{"property": name, "value": r["value"], "settings": r["settings"],
                         "deep (%)": 100 * r["deep"] / r["settings"], "lowest at N = 8 (%)": 100 * r["lowest_at_8"] / r["settings"]}
                        for name, rows_ in search["summary"].items() for r in rows_])
display(summary.round(1))
print(f"{len(search['deep_settings'])} of {len(search['grid'])} grid settings dip deep on both flanks.")
ranges = summary.groupby("property")[["deep (%)", "lowest at N = 8 (%)"]].agg(lambda s: s.max() - s.min())
print("spread of each share across a property's values (points of %):")
display(ranges.round(1).sort_values("deep (%)", ascending=False))
never = summary[(summary["deep (%)"] == 0)]
for r in never.itertuples():
    print(f"no deep dip in the grid at {r.property} = {r.value:g}")

# %% [markdown]
# ## 3. The fit, and the predictions it was not fitted to
#
# The GRPO row was fitted (pass@1, pass@256, dNLL_rare at every N); F-GRPO (gamma 0.5) and GRPO at lr x m_0.5
# (Table 3's low-LR control) at N = 8 were not. A prediction hits when the paper's value lies inside its 95%
# interval widened on each side by the fit's RMS error on that metric (pre-registered in docs/population.md).

# %%
grpo = pd.DataFrame([{"N": n, "metric": m, "simulated": s[1], "ci_low": s[2], "ci_high": s[3],
                      "paper": dict(data["paper"]["GRPO"][m]).get(n)}
                     for m, points in data["sim"]["GRPO"].items() for n, *_ in points
                     for s in [next(p for p in points if p[0] == n)]])
display(grpo.pivot(index="N", columns="metric", values=["simulated", "paper"]).round(2))
display(pd.DataFrame(data["predictions"]).drop(columns=["method"]).round(3))
print("fitted setting:", {k: v for k, v in record["fitted"].items() if k not in ("rms",)})
display(draw(data))

# %% [markdown]
# ## 4. A live run: one property's effect, in seconds
#
# The property whose one-at-a-time sweep bent the curve most (the largest spread of its larger flank), at its
# smallest and largest swept value, trained here at the fitted setting with a few populations (the record's run
# uses more). Only that property changes; the paper's GRPO row is drawn for scale.

# %%
ofat["larger flank"] = [max(r["dip"]["left"]["points"], r["dip"]["right"]["points"]) for r in search["ofat"]]
spread = ofat.groupby("property")["larger flank"].agg(lambda d: d.max() - d.min())
name = spread.idxmax()
values = sorted(ofat.loc[ofat["property"] == name, "value"])
# (a record drawn from seeds 0.. leaves seed_offset out: the field's default, 0)
fitted = t2.DepthSetting(**{f.name: record["fitted"][f.name] for f in fields(t2.DepthSetting) if f.name in record["fitted"]})
fig, (ax_pass, ax_nll) = new_figure(1, 2, width=4.4, height=3.0)
for value, ls in ((values[0], "-"), (values[-1], "--")):
    live = t2.run_setting(replace(fitted, **{name: value}), 3, controls=False)
    live = live[live["method"] == "GRPO"].groupby("N")[["heldout_pass@256", "train_dnll_rare"]].mean()
    ax_pass.plot(live.index, 100 * live["heldout_pass@256"], ls, marker="o", ms=3, label=f"{name} = {value:g}")
    ax_nll.plot(live.index, live["train_dnll_rare"], ls, marker="o", ms=3, label=f"{name} = {value:g}")
    print(f"{name} = {value:g}: pass@256 by N", (100 * live["heldout_pass@256"]).round(1).to_dict())
for ax, metric in ((ax_pass, "pass@256"), (ax_nll, "dnll_rare")):
    paper = data["paper"]["GRPO"][metric]
    ax.plot([n for n, _ in paper], [v for _, v in paper], color="k", lw=1, label="paper")
    ax.set_xscale("log", base=2)
    ax.set_xticks([n for n, _ in paper], [str(n) for n, _ in paper])
    ax.set_xlabel("group size N")
    ax.legend(fontsize=8)
ax_pass.set_ylabel("held-out pass@256 (%)")
ax_nll.set_ylabel(r"$\Delta$NLL$_{rare}$ (train)")
display(fig)

# %% [markdown]
# ## 5. What to take from it
#
# The record's outcome, printed from it: the fitted GRPO dip against the paper's, and each prediction beside the
# paper's number. docs/population.md ("Table 2's depth") says how to read it.

# %%
dip = record["grpo_dip_points"]
print(f"simulated GRPO dip at N = {dip['dip_N']}: {flank(dip['left'])} points at N = {dip['left']['N']}, "
      f"{flank(dip['right'])} at N = {dip['right']['N']} (the paper's: {first:.1f} and {last:.1f} at N = {low_n})")
for p in data["predictions"]:
    print(f"{p['paper_method']:12s} N = {p['N']} {p['metric']:9s} predicted {p['predicted']:7.2f} "
          f"[{p['ci_low']:.2f}, {p['ci_high']:.2f}] +/- {p['tolerance']:.2f}, paper {p['paper']:.2f}: "
          f"{'hit' if p['hit'] else 'miss'}")
