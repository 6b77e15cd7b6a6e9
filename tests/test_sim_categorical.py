"""Categorical simulator: batched step vs single-run autograd, exact sampling, seeds, table/resume, CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from fgrpo_sim.sim.categorical import CategoricalBatch, initial_logits
from fgrpo_sim.sim.categorical.config import CategoricalConfig
from fgrpo_sim.sim.categorical.run import run_grid
from fgrpo_sim.sim.categorical.sampling import native_available, run_keys, sample_counts_native, sample_counts_torch

K, C = 40, 7
BACKENDS = ["torch"] + (["native"] if native_available() else [])


def small_config(**kw) -> CategoricalConfig:
    base = dict(num_actions=K, num_correct=C, dtype="float64", device="cpu", lr=0.05, weight_decay=0.1,
                beta1=0.8, beta2=0.95, eps=1e-6)
    base.update(kw)
    return CategoricalConfig(**base)


def reference_run(config: CategoricalConfig, counts_per_step: list[np.ndarray], gamma: float) -> torch.Tensor:
    """One run, written the obvious way: explicit per-draw rewards, autograd, torch.optim."""
    z = initial_logits(config, torch.float64).clone().requires_grad_(True)
    opt_cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[config.optimizer]
    kwargs = dict(lr=config.lr, weight_decay=config.weight_decay)
    if config.optimizer != "sgd":
        kwargs.update(betas=(config.beta1, config.beta2), eps=config.eps)
    opt = opt_cls([z], **kwargs)
    reward = torch.where(torch.arange(K) < C, config.reward_correct, config.reward_wrong).to(torch.float64)
    for counts in counts_per_step:
        c = torch.as_tensor(counts, dtype=torch.float64)
        n = float(c.sum())
        draws = torch.repeat_interleave(torch.arange(K), torch.as_tensor(counts))  # the N actions drawn
        rewards = reward[draws]
        mu_hat = float((draws < C).double().mean())
        g = (1.0 - mu_hat) ** gamma
        adv = rewards - rewards.mean()
        p = torch.softmax(z, 0)
        if config.surrogate == "distinct":
            objective = (reward * (c > 0) * p).sum() / n
        elif config.surrogate == "draws":
            objective = (adv * p[draws]).sum() / n
        else:
            objective = (adv * torch.log(p[draws])).sum() / n
        opt.zero_grad()
        (-(g * objective)).backward()
        opt.step()
    return z.detach()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("optimizer", ["sgd", "adam", "adamw"])
@pytest.mark.parametrize("surrogate", ["distinct", "draws", "logprob"])
def test_batched_step_equals_single_run_autograd(surrogate, optimizer, backend):
    config = small_config(surrogate=surrogate, optimizer=optimizer, sampler=backend)
    sizes, gammas = [3, 16, 64], [0.0, 1.0, 0.5]
    batch = CategoricalBatch(config, sizes, gammas, [0, 1, 2])
    rng = np.random.default_rng(1)
    p0 = torch.softmax(initial_logits(config), 0).numpy()
    steps = [np.stack([rng.multinomial(n, p0) for n in sizes]) for _ in range(3)]
    for counts in steps:
        batch.step_with_counts(torch.as_tensor(counts))
    for r, (n, gamma) in enumerate(zip(sizes, gammas)):
        expected = reference_run(config, [s[r] for s in steps], gamma)
        assert torch.allclose(batch.logits[r], expected, atol=1e-6, rtol=0), (r, (batch.logits[r] - expected).abs().max())
    assert not torch.allclose(batch.logits[0], batch.logits[1])  # the runs really differ


def _chi_square_pvalue(observed: np.ndarray, expected: np.ndarray) -> float:
    keep = expected > 0
    assert observed[~keep].sum() == 0, "an action of probability 0 was drawn"
    return stats.chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum()).pvalue


WEIGHTS = np.array([5.0, 0.0, 1.0, 0.5, 0.25, 2e-3, 3.0, 1.0])


@pytest.mark.parametrize("sampler", ["torch"] + (["native"] if native_available() else []))
def test_count_sampler_matches_multinomial(sampler):
    n, trials = 6, 4000
    w = torch.as_tensor(WEIGHTS, dtype=torch.float64).expand(trials, -1).contiguous()
    draws = torch.full((trials,), n)
    if sampler == "native":
        counts, st = sample_counts_native(w, draws, run_keys(range(trials)), stream=3, num_correct=3)
        assert torch.equal(st[:, 2], counts[:, :3].sum(1).to(torch.float64))  # correct draws
    else:
        counts = sample_counts_torch(w, draws, run_keys(range(trials)), stream=3)
    counts = counts.numpy()
    assert (counts.sum(1) == n).all()
    p = WEIGHTS / WEIGHTS.sum()
    assert _chi_square_pvalue(counts.sum(0), p * n * trials) > 1e-3
    # the law of one action's count is Binomial(n, p_0), not only its mean
    hist = np.bincount(counts[:, 0].astype(int), minlength=n + 1)
    assert _chi_square_pvalue(hist, stats.binom.pmf(np.arange(n + 1), n, p[0]) * trials) > 1e-3


@pytest.mark.skipif(not native_available(), reason="no C compiler: the torch backend is used instead")
def test_engine_sparse_sampler_matches_multinomial():
    """The fused engine's own sampler (sparse counts over block sums) on a 100-action policy, N = 50."""
    config = small_config(num_actions=100, num_correct=10, sampler="native")
    batch = CategoricalBatch(config, [50] * 200, [0.0] * 200, list(range(200)))
    rng = np.random.default_rng(0)
    batch.logits[:] = torch.as_tensor(rng.normal(0, 2, 100))
    batch.native.refresh(batch.logits)
    p = torch.softmax(batch.logits[0], 0).numpy()
    total = np.zeros(100)
    for stream in range(10):
        st = batch.native.sample(batch._keys, stream)
        nat = batch.native
        for r in range(200):
            o, length = int(nat.offsets[r]), int(nat.touched_len[r])
            np.add.at(total, nat.touched_idx[o:o + length].numpy(), nat.touched_cnt[o:o + length].numpy())
        assert (st[:, 2] <= 50).all()
    assert total.sum() == 50 * 200 * 10
    assert _chi_square_pvalue(total, p * total.sum()) > 1e-3


@pytest.mark.parametrize("backend", BACKENDS)
def test_same_seed_same_results_different_seed_differs(backend):
    config = small_config(sampler=backend, dtype="float32")

    def run(seeds):
        b = CategoricalBatch(config, [8, 8], [0.0, 0.0], seeds)
        for _ in range(5):
            b.step()
        return b.logits.clone()

    a, b, c = run([0, 1]), run([0, 1]), run([2, 3])
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    assert not torch.equal(a[0], a[1])


def test_initial_metrics_match_the_paper_setup():
    config = CategoricalConfig(device="cpu")
    batch = CategoricalBatch(config, [4], [0.0], [0])
    m = {k: float(v[0]) for k, v in batch.metrics().items()}
    assert m["q_pos"] == pytest.approx(0.630, abs=1e-3)  # App. J: Q_pos ~ 0.63
    assert m["anchor_prob"] == pytest.approx(4.65e-4, rel=1e-2)
    assert m["m_ret"] == pytest.approx(1.0, abs=1e-6)
    assert m["frac_correct_above_start"] == 0.0
    assert m["worst_drop"] == pytest.approx(0.0, abs=1e-6)


def test_native_and_torch_backends_agree_on_a_whole_run():
    if not native_available():
        pytest.skip("no C compiler")
    cfg = small_config(num_actions=300, num_correct=30)
    counts_rng = np.random.default_rng(5)
    b_native = CategoricalBatch(cfg.with_(sampler="native"), [4, 512], [0.0, 1.0], [0, 0])
    b_torch = CategoricalBatch(cfg.with_(sampler="torch"), [4, 512], [0.0, 1.0], [0, 0])
    for _ in range(20):
        p = b_torch.probs().numpy()
        counts = torch.as_tensor(np.stack([counts_rng.multinomial(n, p[i]) for i, n in enumerate([4, 512])]))
        b_native.step_with_counts(counts)
        b_torch.step_with_counts(counts)
    assert torch.allclose(b_native.logits, b_torch.logits, atol=1e-10)
    mn, mt = b_native.metrics(), b_torch.metrics()
    for key in mn:
        assert torch.allclose(mn[key], mt[key], atol=1e-9, equal_nan=True), key


def test_run_grid_saves_and_resumes(tmp_path, monkeypatch):
    import fgrpo_sim.sim.categorical.run as run_mod

    cfg = small_config(dtype="float32", group_sizes=(2, 8), gammas=(0.0, 1.0), seeds=(0,), steps=7, stride=3,
                       chunk_runs=2)
    out = tmp_path / "res.parquet"
    table = run_grid(cfg, out, progress=False)
    assert sorted(table["step"].unique()) == [0, 3, 6, 7]
    assert len(table) == 4 * 4 and out.exists()
    assert {"q_pos", "m_ret", "unsampled_correct_mass", "entropy", "anchor_prob", "frac_correct_above_start",
            "worst_drop", "config_id", "surrogate", "optimizer"} <= set(table.columns)
    monkeypatch.setattr(run_mod, "simulate_chunk", lambda *a, **k: pytest.fail("finished runs were recomputed"))
    again = run_grid(cfg, out, progress=False)
    pd.testing.assert_frame_equal(table, again)
    monkeypatch.undo()
    other = run_grid(cfg.with_(lr=0.02), out, progress=False)  # another setting is appended, not mixed
    assert other["config_id"].nunique() == 1 and other["config_id"].iloc[0] != table["config_id"].iloc[0]
    assert pd.read_parquet(out)["config_id"].nunique() == 2


def test_cli_simulate_categorical(run_cli, tmp_path):
    out = tmp_path / "r.csv"
    res = run_cli("simulate", "categorical", "--out", out, "--num-actions", 200, "--num-correct", 20,
                  "--n", "2,32", "--seeds", "0", "--steps", 4, "--stride", 2, "--no-progress")
    assert res.exit_code == 0, res.stderr
    table = pd.read_csv(out)
    assert len(table) == 2 * 2 * 3 and "wrote" in res.stdout
    for args, needle in ((["--optimizer", "rmsprop"], "optimizer must be one of"),
                         (["--n", "2,x"], "--n must be"),
                         (["--lr", "-1"], "lr must be in"),
                         (["--gamma", "-1"], "--gamma must be in")):
        bad = run_cli("simulate", "categorical", "--out", out, "--steps", 1, "--no-progress", *args)
        assert bad.exit_code == 2 and needle in bad.stderr, (args, bad.stderr)
    bad = run_cli("simulate", "categorical", "--out", tmp_path / "r.txt", "--steps", 1)
    assert bad.exit_code == 2 and "out must end in .parquet or .csv" in bad.stderr


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="surrogate must be one of"):
        CategoricalConfig(surrogate="nope")
    with pytest.raises(ValueError, match="num_correct must be in"):
        CategoricalConfig(num_actions=10, num_correct=10)
    with pytest.raises(ValueError, match="eps must be > 0 with dtype float32"):
        CategoricalConfig(eps=0.0)


def test_cli_categorical_refuses_foreign_out_and_bad_paths_before_simulating(run_cli, tmp_path, monkeypatch):
    import fgrpo_sim.sim.categorical.run as run_mod

    monkeypatch.setattr(run_mod, "simulate_chunk", lambda *a, **k: pytest.fail("simulated despite bad input"))
    foreign = tmp_path / "notes.csv"
    foreign.write_text("a,b\n1,2\n")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    small = ("--num-actions", 100, "--num-correct", 10, "--n", 2, "--seeds", 0, "--steps", 2)
    for out, needle in ((foreign, "is not a categorical result table (no column 'config_id'); pass --no-resume"),
                        (empty, "is not a readable result table"),
                        (blocker / "r.csv", "file is a file, not a folder")):
        res = run_cli("simulate", "categorical", "--out", out, *small)
        assert res.exit_code == 2 and needle in res.stderr, res.stderr
        assert "Traceback" not in res.stderr and res.stderr.strip().count("\n") == 0
    assert foreign.read_text() == "a,b\n1,2\n"  # never overwritten behind the user's back
    res = run_cli("simulate", "categorical", "--out", tmp_path / "r.csv", "--device", "nope", *small)
    assert res.exit_code == 2 and res.stderr.startswith("fgrpo: error: device must be")  # no progress bar first


def test_study_checks_out_before_its_progress_bar(run_cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = run_cli("simulate", "categorical", "--study", "--out", blocker / "s.csv", "--steps", 2)
    assert res.exit_code == 2 and res.stderr.startswith("fgrpo: error: --out ") and "is a file" in res.stderr
