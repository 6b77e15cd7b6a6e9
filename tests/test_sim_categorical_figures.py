"""Fig 2 and sensitivity figure functions on tiny data (the real grids are far too slow for tests)."""

from __future__ import annotations

import pandas as pd

from fgrpo_sim.figures.categorical import draw_fig2, draw_sensitivity, final_summary, regimes
from fgrpo_sim.sim.categorical.config import CategoricalConfig
from fgrpo_sim.sim.categorical.run import run_grid
from fgrpo_sim.sim.categorical.study import claims_table, final_means, score_claims


def test_regimes_split_around_the_low_retention_zone():
    final = pd.DataFrame({"group_size": [2, 8, 32, 128, 512], "m_ret": [0.99, 0.3, 0.1, 0.4, 0.97]})
    spans = regimes(final)
    assert [s[0] for s in spans] == ["I", "II", "III"]
    assert spans[1][1] < 8 < 128 < spans[1][2] < 512
    assert regimes(pd.DataFrame({"group_size": [2, 8], "m_ret": [0.96, 0.99]})) == []


def test_regimes_follow_the_rule_the_docs_state():
    """docs/categorical.md: regime I is N <= 32, regime II runs from N = 64 to its edge at 65536, III is
    131072 (final M_ret at gamma = 0 of the full grid, from the table there)."""
    ns = [2, 8, 32, 64, 128, 512, 2048, 8192, 16384, 32768, 65536, 131072]
    m_ret = [0.995, 0.966, 0.962, 0.894, 0.110, 0.033, 0.034, 0.041, 0.051, 0.112, 0.654, 0.995]
    spans = {label: (lo, hi) for label, lo, hi in regimes(pd.DataFrame({"group_size": ns, "m_ret": m_ret}))}
    assert spans["I"][0] < 2 and 32 < spans["I"][1] < 64
    assert spans["II"][0] < 64 and 65536 < spans["II"][1] < 131072
    assert spans["III"][0] < 131072 < spans["III"][1]


def test_score_claims_on_a_hand_made_table():
    rows = []
    for n, m0, m1, q in ((2, 0.9, 0.95, 0.7), (64, 0.1, 0.4, 0.9), (1024, 0.2, 0.3, 0.9), (131072, 0.97, 1.0, 0.8)):
        rows += [dict(group_size=n, gamma=0.0, m_ret=m0, q_pos=q, q_pos_start=0.63),
                 dict(group_size=n, gamma=1.0, m_ret=m1, q_pos=q, q_pos_start=0.63)]
    verdict = score_claims(pd.DataFrame(rows))
    assert verdict["claim1_qpos_rises"] and verdict["claim2_mret_nonmonotonic"] and verdict["claim3_gamma_helps_in_zone"]
    assert verdict["claims_shown"] == 3 and abs(verdict["zone_mret_gain"] - 0.2) < 1e-12


def test_flat_q_pos_and_untrained_largest_n_do_not_score():
    """A flat line (gain +0.0000) is not "Q_pos rises"; an untrained largest N does not make regime III."""
    rows = []
    for n, m0, m1, q in ((2, 0.9, 0.95, 0.63003), (64, 0.1, 0.4, 0.9), (1024, 0.2, 0.3, 0.9), (131072, 0.99, 1.0, 0.6306)):
        rows += [dict(group_size=n, gamma=0.0, m_ret=m0, q_pos=q, q_pos_start=0.63),
                 dict(group_size=n, gamma=1.0, m_ret=m1, q_pos=q, q_pos_start=0.63)]
    verdict = score_claims(pd.DataFrame(rows))
    assert not verdict["claim1_qpos_rises"]  # +0.00003 at N = 2
    assert not verdict["claim2_mret_nonmonotonic"]  # M_ret 0.99 at N = 131072 only because Q_pos barely moved
    assert verdict["claim3_gamma_helps_in_zone"] and abs(verdict["qpos_gain_largest_n"] - 0.0006) < 1e-9


def test_figures_draw_from_a_small_simulation(tmp_path):
    cfg = CategoricalConfig(num_actions=300, num_correct=30, group_sizes=(2, 16, 256), seeds=(0,), steps=20,
                            stride=5, device="cpu", metadata={"setting": "distinct/adamw/eps=1e-08/wd=0"})
    table = run_grid(cfg, tmp_path / "t.parquet", progress=False)
    mean = table.groupby(["group_size", "gamma", "step"])[["q_pos", "m_ret"]].mean().reset_index()
    fig = draw_fig2({"mean": mean, "final": final_summary(table), "seeds": 1, "preset": "test",
                     "start_entropy": float(table[table["step"] == 0]["entropy"].mean()),
                     "setting": {k: cfg.setting()[k] for k in ("surrogate", "optimizer", "lr", "eps", "weight_decay")}})
    # three final-state panels (Q_pos, M_ret, entropy) plus one small-multiple panel per N (3 used of 3)
    assert len(fig.axes) == 3 + 3 and "1 seed," in fig._suptitle.get_text()
    assert {ax.get_title() for ax in fig.axes[3:]} == {"N = 2", "N = 16", "N = 256"}
    final = final_means(table)
    assert set(final.columns) >= {"setting", "group_size", "gamma", "q_pos", "m_ret", "q_pos_start"}
    claims = claims_table(table)
    assert len(claims) == 1 and claims["claims_shown"].iloc[0] in (0, 1, 2, 3)
    fig = draw_sensitivity({"final": final})
    assert len(fig.axes) >= 3
