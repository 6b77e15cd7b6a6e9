"""`python -m fgrpo_sim.sim.categorical.claims`: Fig 2's claims with bootstrap intervals over seeds, on a small grid."""

from __future__ import annotations

import pytest

from fgrpo_sim.sim.categorical.claims import claims, final_by_seed, main, report
from fgrpo_sim.sim.categorical.config import CategoricalConfig
from fgrpo_sim.sim.categorical.run import run_grid

SMALL = CategoricalConfig(num_actions=64, num_correct=8, group_sizes=(2, 16, 256), steps=30, stride=10,
                          seeds=(0, 1, 2))


@pytest.fixture(scope="module")
def table():
    return run_grid(SMALL, None, progress=False)


def test_claims_pair_by_seed_and_cover_every_n(table):
    result = claims(table)
    assert result["seeds"] == 3 and [r["N"] for r in result["rows"]] == [2, 16, 256]
    m0, m1 = final_by_seed(table, "m_ret", 0.0), final_by_seed(table, "m_ret", 1.0)
    for r in result["rows"]:
        diff = r["m_ret_g1_minus_g0"]
        assert diff.estimate == pytest.approx(float((m1[r["N"]] - m0[r["N"]]).mean()))
        assert diff.low <= diff.estimate <= diff.high and diff.runs == 3
    assert result["lowest_n"] == int(m0.mean().idxmin()) and set(result["ends_minus_lowest"]) == {2, 256}


def test_report_states_each_claim(table):
    text = report(claims(table))
    assert "3 seeds" in text and all(f"claim {k}" in text for k in (1, 2, 3))


def test_bad_seed_count_is_one_line(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["--seeds", "1", "--out", str(tmp_path / "x.parquet")])
    assert exit_info.value.code == 2 and "--seeds must be" in capsys.readouterr().err
