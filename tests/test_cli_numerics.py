"""Numerical honesty and one-line errors (issue 14): each bad input ends as one stderr line naming the
right option and the real value, exit 2, and no NaN/inf is ever written as a result."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fgrpo_sim.validation import check_integer, check_range

POP = ("simulate", "population", "--no-progress", "--prompts", "16", "--prompt-batch", "4", "--steps", "2",
       "--runs", "1", "--n", "4", "--eval-every", "1")


def one_line_error(result, *needles: str) -> None:
    assert result.exit_code == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fgrpo: error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_messages_print_the_real_value():
    with pytest.raises(ValueError, match=r"got 1\.0000001$"):
        check_range("mu", 1.0000001, 0.0, 1.0)
    with pytest.raises(ValueError, match=r"got 1e\+17$"):  # short form where it is exact
        check_range("x", 1e17, 0.0, 1.0)
    big = 10**19  # between 2^63 and 2^64: numpy makes it uint64, which used to wrap to -8446744073709551616
    with pytest.raises(ValueError, match=rf"got {big}$"):
        check_integer("seed", big, 0, 2**63 - 1)
    with pytest.raises(ValueError, match=rf"got {big + 1}$"):  # in a list numpy would round it to 1e+19
        check_integer("seeds", [0, big + 1], 0, 2**62)


def test_cli_prints_unwrapped_integers_and_enough_digits(run_cli, tmp_path):
    one_line_error(run_cli("theory", "tail-miss", "--mu", "1.0000001", "--n", "4"), "got 1.0000001")
    one_line_error(run_cli("simulate", "categorical", "--out", tmp_path / "c.csv", "--steps", "10000000000000000000"),
                   "steps must be in [0, 10000000], got 10000000000000000000")


def test_lr_multiplier_cli_is_right_at_huge_gamma(run_cli):
    result = run_cli("theory", "lr-multiplier", "--gamma", "1e17", "--json")
    assert result.exit_code == 0 and result.stderr == ""
    import json

    assert json.loads(result.stdout)["multiplier"] == pytest.approx(7.1365e-26, rel=1e-4)
    assert run_cli("theory", "lr-multiplier", "--gamma", "1e308").stderr == ""  # no RuntimeWarning, no NaN


@pytest.mark.parametrize("args, needles", [
    (("--beta", "1e308,1e308"), ["beta A must be in (0, 1e+15], got 1e+308"]),
    (("--beta", "inf,1"), ["beta A must be in (0, 1e+15], got inf"]),
    (("--lr", "inf"), ["lr must be in (0, 1e+06], got inf"]),
    (("--gamma", "1e308"), ["gamma must be small enough", "--no-low-lr"]),  # used to blame --lr with "got nan"
    (("--rho", "0.2", "--rho-max", "0.2"), ["--rho-max must be in (0.2, 1), got 0.2"]),
])
def test_population_refuses_ranges_where_it_is_not_exact(run_cli, tmp_path, args, needles):
    out = tmp_path / "p.csv"
    one_line_error(run_cli(*POP, "--out", out, *args), *needles)
    assert not out.exists()


def test_population_never_writes_nan_results(run_cli, tmp_path):
    """All prompts easy (Beta(100, 1)): the empty difficulty buckets get no rows instead of NaN pass@k."""
    out = tmp_path / "p.csv"
    result = run_cli(*POP, "--out", out, "--beta", "100,1", "--gamma", "0")
    assert result.exit_code == 0, result.stderr
    table = pd.read_csv(out)
    results = table[[c for c in table.columns if c.startswith("pass@")] + ["correct_mass", "rare_mass"]]
    assert np.isfinite(results.to_numpy()).all()
    assert set(table["bucket"]) == {"mu0 0.8-1", "all"}


def test_population_stops_on_non_finite_logits():
    import torch

    from fgrpo_sim.sim.population import TrainSpec, check_finite_logits, mark_non_finite

    param = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    opt, first_bad = torch.optim.SGD([param], lr=5.0), torch.zeros((), dtype=torch.long)
    mark_non_finite(opt, 2, first_bad)
    check_finite_logits(first_bad, TrainSpec(lr=5.0))  # finite: goes on
    with torch.no_grad():
        param[1] = math.inf
    mark_non_finite(opt, 3, first_bad)
    mark_non_finite(opt, 4, first_bad)  # the first bad step is the one named
    with pytest.raises(ValueError, match=r"lr = 5 made the logits non-finite at step 3 .*use a smaller --lr"):
        check_finite_logits(first_bad, TrainSpec(lr=5.0))


def test_plan_extreme_beta_is_one_clean_line(run_cli):
    one_line_error(run_cli("plan", "--beta", "1e308,1e308"), "--beta A must be in (0, 1e+15], got 1e+308")
    one_line_error(run_cli("plan", "--beta", "1e4,1e4"), "too concentrated", "pilot file")
    ok = run_cli("plan", "--beta", "1,1", "--gamma", "1e17")
    assert ok.exit_code == 0 and ok.stderr == "" and "lr x 7.14e-26" in ok.stdout


@pytest.mark.parametrize("device", ["mps", "meta", "xpu", "nonsense"])
@pytest.mark.parametrize("command", [("simulate", "categorical", "--out", "{tmp}/c.csv", "--steps", "1"),
                                     ("check", "--quick"), ("figures", "fig2", "--out", "{tmp}/figs")])
def test_unsupported_devices_are_one_line(run_cli, tmp_path, device, command):
    args = [a.format(tmp=tmp_path) for a in command]
    one_line_error(run_cli(*args, "--device", device, "--no-progress"), f"device must be auto, cpu, cuda or cuda:K, got '{device}'")


def test_categorical_refuses_rewards_its_dtype_cannot_update_with():
    from fgrpo_sim.sim.categorical.config import CategoricalConfig

    with pytest.raises(ValueError, match=r"reward_correct must be in \[-1e\+18, 1e\+18\], got 1e\+30"):
        CategoricalConfig(reward_correct=1e30, reward_wrong=-1e30)  # float32: Adam's squared gradient -> inf
    with pytest.raises(ValueError, match="use --dtype float64"):
        CategoricalConfig(reward_correct=1e-20, reward_wrong=-1e-20)
    CategoricalConfig(reward_correct=1e30, reward_wrong=-1e30, dtype="float64")  # representable there


def test_large_rewards_still_learn_in_float64():
    from fgrpo_sim.sim.categorical import CategoricalBatch
    from fgrpo_sim.sim.categorical.config import CategoricalConfig

    def final_q(reward, dtype):
        cfg = CategoricalConfig(num_actions=200, num_correct=20, dtype=dtype, device="cpu", sampler="torch",
                                reward_correct=reward, reward_wrong=-reward)
        batch = CategoricalBatch(cfg, [64], [0.0], [0])
        for _ in range(10):
            batch.step()
        return float(batch.metrics()["q_pos"][0])

    assert final_q(1e30, "float64") == pytest.approx(final_q(1.0, "float64"), rel=1e-6)  # Adam: scale-free
    assert final_q(1e18, "float32") == pytest.approx(final_q(1.0, "float32"), rel=1e-4)


ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent
ARITH = ROOT / "recipes" / "tiny" / "arith.jsonl"


@pytest.mark.parametrize("meta", ["[1, 2", "[1, 2]", "\xff"])
def test_eval_resume_with_a_damaged_meta_file_names_it(run_cli, tmp_path, meta):
    out = tmp_path / "samples.jsonl"
    out.write_text('{"problem_id": "x", "sample_index": 0}\n')
    (tmp_path / "samples.jsonl.meta.json").write_text(meta)
    one_line_error(run_cli("llm", "eval", "--model", "tiny", "--data", ARITH, "--out", out, "--samples", "2"),
                   f"cannot resume {out}", "samples.jsonl.meta.json is not a JSON object")


def test_eval_vllm_backend_without_vllm_says_how_to_install(run_cli, tmp_path):
    pytest.importorskip("torch")
    try:
        import vllm  # noqa: F401
        pytest.skip("vLLM is installed here")
    except ImportError:
        pass
    out = tmp_path / "s.jsonl"
    one_line_error(run_cli("llm", "eval", "--model", "tiny", "--data", ARITH, "--out", out, "--samples", "2",
                           "--backend", "vllm"), "needs vLLM", 'pip install -e ".[vllm]"')
    assert not out.exists()


def test_passk_on_deeply_nested_json_names_file_and_line(run_cli, tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"problem_id": "a", "correct": true}\n' + "[" * 100_000 + "]" * 100_000 + "\n")
    one_line_error(run_cli("passk", path), f"{path} line 2", "nested too deeply")


def test_figures_cache_errors_do_not_advise_a_missing_option(run_cli, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "fig2-quick.parquet").write_text("not a table")
    result = run_cli("figures", "fig2", "--out", tmp_path / "figs", "--data-dir", data, "--no-progress")
    one_line_error(result, "fig2-quick.parquet", "--data-dir")
    assert "--no-resume" not in result.stderr


def test_maze_results_files_are_named_when_damaged(tmp_path):
    from fgrpo_sim.maze.experiment import read_json, summarize

    (tmp_path / "config.json").write_text("{broken")
    with pytest.raises(ValueError, match=r"cannot read .*config\.json"):
        summarize(tmp_path)
    with pytest.raises(ValueError, match=r"nothing\.json not found"):
        read_json(tmp_path / "nothing.json")


def test_hub_ids_fail_at_once_offline_or_unreachable(monkeypatch, tmp_path):
    from fgrpo_sim.llm.hub import require_loadable

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match=r"model 'org/no-such-model' .* HF_HUB_OFFLINE is set"):
        require_loadable("org/no-such-model")
    require_loadable(tmp_path)  # a folder is always fine
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: refused at once
    with pytest.raises(ValueError, match=r"dataset 'org/no-such-data' .* http://127\.0\.0\.1:9 cannot be reached"):
        require_loadable("org/no-such-data", "dataset")


def test_eval_with_an_uncached_hub_id_is_one_line(run_cli, tmp_path):
    result = run_cli("llm", "eval", "--model", "org/no-such-model", "--data", ARITH, "--out", tmp_path / "s.jsonl",
                     "--samples", "2")  # no --no-progress: it would switch transformers' bars off for later tests
    one_line_error(result, "org/no-such-model", "HF_HUB_OFFLINE is set")  # tests run offline (conftest)


def test_categorical_table_never_records_a_diverged_policy(monkeypatch):
    import torch

    from fgrpo_sim.sim.categorical import run as categorical_run
    from fgrpo_sim.sim.categorical import CategoricalBatch
    from fgrpo_sim.sim.categorical.config import CategoricalConfig

    real = CategoricalBatch.metrics

    def diverged_second_run(self):
        m = real(self)
        if self.step_count == 2:
            m["entropy"] = m["entropy"].clone()
            m["entropy"][1] = torch.nan
        return m

    monkeypatch.setattr(CategoricalBatch, "metrics", diverged_second_run)
    cfg = CategoricalConfig(num_actions=50, num_correct=5, steps=3, stride=1, device="cpu", sampler="torch")
    with pytest.raises(ValueError, match=r"run \(N = 16, gamma = 1, seed = 4\) diverged at step 2"):
        categorical_run.simulate_chunk(cfg, [(8, 0.0, 0), (16, 1.0, 4)])
