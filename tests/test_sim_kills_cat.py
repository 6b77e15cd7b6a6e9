"""Tests written for the mutants of fgrpo_sim/sim/categorical/ (issue 44, stratum simcat; benchmarks/RESULTS.md
"Mutation testing", "sim/ stratum simcat"). Each pins behaviour a user relies on: every bad setting refused with a
message naming the parameter and its range, each bound at its edge, values against a hand-worked case. Tiny
hand-made data throughout; the CPU is named where a test assumes it (the native kernel, exact floats)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

# --- config.py: every setting's range, named in its message, and each edge accepted -----------------------------------

BIG32 = 1e18  # config.REWARD_LIMITS["float32"], written out: a wrong limit must fail here

REFUSED = [
    (dict(num_actions=1, num_correct=1), "num_actions must be in [2, 2^31 - 1], got 1"),
    (dict(num_actions=2**31), "num_actions must be in [2, 2^31 - 1], got 2147483648"),
    (dict(num_actions=4, num_correct=0), "num_correct must be in [1, 3], got 0"),
    (dict(num_actions=4, num_correct=4), "num_correct must be in [1, 3], got 4"),
    (dict(anchor_logit=-50.5), "anchor_logit must be in [-50, 50], got -50.5"),
    (dict(correct_logit=50.5), "correct_logit must be in [-50, 50], got 50.5"),
    (dict(incorrect_logit=float("nan")), "incorrect_logit must be in [-50, 50], got nan"),
    (dict(dtype="float16"), "dtype must be one of float32, float64, got 'float16'"),
    (dict(reward_correct=1.5e18), "reward_correct must be in [-1e+18, 1e+18], got 1.5e+18"),
    (dict(reward_correct=-2e18), "reward_correct must be in [-1e+18, 1e+18], got -2e+18"),
    (dict(reward_wrong=1.0), "reward_wrong must be in [-1e+18, 1), got 1"),
    (dict(reward_wrong=-2e18), "reward_wrong must be in [-1e+18, 1), got -2e+18"),
    (dict(reward_correct=1e-20, reward_wrong=0.0),
     "reward_correct - reward_wrong must be >= 1e-18 in float32 (its square underflows below), got 1e-20; "
     "use --dtype float64"),
    (dict(reward_correct=1e-160, reward_wrong=0.0, dtype="float64"),
     "reward_correct - reward_wrong must be >= 1e-152 in float64 (its square underflows below), got 1e-160"),
    (dict(steps=-1), "steps must be in [0, 10000000], got -1"),
    (dict(steps=10**7 + 1), "steps must be in [0, 10000000], got 10000001"),
    (dict(group_sizes=()), "group_sizes, gammas and seeds must each hold at least one value"),
    (dict(gammas=()), "group_sizes, gammas and seeds must each hold at least one value"),
    (dict(seeds=()), "group_sizes, gammas and seeds must each hold at least one value"),
    (dict(group_sizes=(4, 0)), "group_sizes must be in [1, 2^31 - 1], got 0"),
    (dict(group_sizes=(2**31,)), "group_sizes must be in [1, 2^31 - 1], got 2147483648"),
    (dict(gammas=(-0.1,)), "gammas must be in [0, 100], got -0.1"),
    (dict(gammas=(100.5,)), "gammas must be in [0, 100], got 100.5"),
    (dict(focal_smoothing=-0.1), "focal_smoothing must be in [0, inf), got -0.1"),
    (dict(focal_smoothing=math.inf), "focal_smoothing must be in [0, inf), got inf"),
    (dict(seeds=(-1,)), "seeds must be in [0, 2^62], got -1"),
    (dict(seeds=(2**62 + 1,)), "seeds must be in [0, 2^62], got 4611686018427387905"),
    (dict(surrogate="linear"), "surrogate must be one of distinct, draws, logprob, got 'linear'"),
    (dict(optimizer="rmsprop"), "optimizer must be one of sgd, adam, adamw, got 'rmsprop'"),
    (dict(lr=0.0), "lr must be in (0, 1000], got 0"),
    (dict(lr=1001.0), "lr must be in (0, 1000], got 1001"),
    (dict(beta1=1.0), "beta1 must be in [0, 1), got 1"),
    (dict(beta1=-0.1), "beta1 must be in [0, 1), got -0.1"),
    (dict(beta2=1.0), "beta2 must be in [0, 1), got 1"),
    (dict(beta2=-0.1), "beta2 must be in [0, 1), got -0.1"),
    (dict(eps=-1e-9), "eps must be in [0, 1], got -1e-09"),
    (dict(eps=1.5), "eps must be in [0, 1], got 1.5"),
    (dict(weight_decay=-0.5), "weight_decay must be in [0, 100], got -0.5"),
    (dict(weight_decay=101.0), "weight_decay must be in [0, 100], got 101"),  # 1 / lr at the default lr 1e-2
    (dict(stride=0), "stride must be in [1, 10000000], got 0"),
    (dict(stride=10**7 + 1), "stride must be in [1, 10000000], got 10000001"),
    (dict(sampler="c"), "sampler must be one of auto, native, torch, got 'c'"),
    (dict(chunk_runs=0), "chunk_runs must be in [1, 1000000], got 0"),
    (dict(chunk_runs=10**6 + 1), "chunk_runs must be in [1, 1000000], got 1000001"),
    (dict(optimizer="adam", eps=0.0), "eps must be > 0 with dtype float32 (use dtype float64 for eps = 0)"),
    (dict(optimizer="adamw", eps=0.0), "eps must be > 0 with dtype float32 (use dtype float64 for eps = 0)"),
]


@pytest.mark.parametrize("kwargs, message", REFUSED)
def test_config_refuses_each_bad_setting_with_its_whole_message(kwargs, message):
    from fgrpo_sim.sim.categorical import CategoricalConfig

    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        CategoricalConfig(**kwargs)


ACCEPTED = [
    dict(num_actions=2, num_correct=1),
    dict(num_actions=2**31 - 1, num_correct=2**31 - 2),
    dict(anchor_logit=-50.0, correct_logit=50.0, incorrect_logit=-50.0),
    dict(reward_correct=BIG32, reward_wrong=-BIG32),
    dict(reward_correct=1e-18, reward_wrong=0.0),  # the span at its float32 floor
    dict(reward_correct=1e152, reward_wrong=-1e152, dtype="float64"),
    dict(steps=0), dict(steps=10**7),
    dict(group_sizes=(1, 2**31 - 1)),
    dict(gammas=(0.0, 100.0)),
    dict(seeds=(0, 2**62)),
    dict(lr=1e3, weight_decay=1e-3),  # weight decay up to 1 / lr
    dict(lr=0.5, weight_decay=2.0),
    dict(beta1=0.0, beta2=0.0),
    dict(eps=1.0),
    dict(optimizer="sgd", eps=0.0),  # eps = 0 is refused only where Adam divides by it in float32
    dict(optimizer="adam", eps=0.0, dtype="float64"),
    dict(stride=1), dict(stride=10**7),
    dict(chunk_runs=1), dict(chunk_runs=10**6),
]


@pytest.mark.parametrize("kwargs", ACCEPTED)
def test_config_accepts_each_bound_at_its_edge(kwargs):
    from fgrpo_sim.sim.categorical import CategoricalConfig

    config = CategoricalConfig(**kwargs)
    assert {name: getattr(config, name) for name in kwargs} == {
        name: (tuple(value) if isinstance(value, tuple) else value) for name, value in kwargs.items()}


def test_config_lists_become_tuples_of_python_numbers():
    from fgrpo_sim.sim.categorical import CategoricalConfig

    config = CategoricalConfig(group_sizes=[np.int64(4), 8.0], gammas=[1, np.float32(0.5)], seeds=[np.int32(2)])
    assert config.group_sizes == (4, 8) and all(type(n) is int for n in config.group_sizes)
    assert config.gammas == (1.0, 0.5) and all(type(g) is float for g in config.gammas)
    assert config.seeds == (2,) and type(config.seeds[0]) is int


def test_config_defaults_are_the_papers_and_ours():
    from fgrpo_sim.sim.categorical import CategoricalConfig

    config = CategoricalConfig()
    assert (config.num_actions, config.num_correct) == (128_000, 10_000)
    assert (config.anchor_logit, config.correct_logit, config.incorrect_logit) == (5.0, 3.0, 0.0)
    assert (config.reward_correct, config.reward_wrong, config.steps) == (1.0, -1.0, 1000)
    assert config.group_sizes == tuple(2**k for k in range(1, 18)) and config.gammas == (0.0, 1.0)
    assert config.seeds == (0, 1, 2, 3) and config.focal_smoothing == 0.0
    assert (config.surrogate, config.optimizer, config.lr) == ("logprob", "adamw", 1e-2)
    assert (config.beta1, config.beta2, config.eps, config.weight_decay) == (0.9, 0.999, 1e-8, 0.0)
    assert (config.stride, config.dtype, config.device, config.sampler, config.chunk_runs) == (
        10, "float32", "auto", "auto", 68)
    assert config.metadata == {} and CategoricalConfig().metadata is not config.metadata


def test_config_runs_are_seed_major_then_gamma_then_n():
    from fgrpo_sim.sim.categorical import CategoricalConfig

    config = CategoricalConfig(group_sizes=(2, 8), gammas=(0.0, 1.0), seeds=(5, 3))
    assert config.runs() == [(2, 0.0, 5), (8, 0.0, 5), (2, 1.0, 5), (8, 1.0, 5),
                             (2, 0.0, 3), (8, 0.0, 3), (2, 1.0, 3), (8, 1.0, 3)]


def test_config_setting_leaves_out_the_run_grid_and_execution_and_the_papers_smoothing():
    from fgrpo_sim.sim.categorical import CategoricalConfig

    config = CategoricalConfig(metadata={"setting": "x"})
    setting = config.setting()
    for name in ("group_sizes", "gammas", "seeds", "device", "sampler", "chunk_runs", "metadata", "focal_smoothing"):
        assert name not in setting
    assert setting["num_actions"] == 128_000 and setting["lr"] == 1e-2 and setting["dtype"] == "float32"
    assert len(setting) == 17
    assert config.with_(focal_smoothing=0.5).setting()["focal_smoothing"] == 0.5


def test_config_id_hashes_the_setting_and_the_torch_backend():
    import hashlib
    import json

    from fgrpo_sim.sim.categorical import CategoricalConfig

    config = CategoricalConfig(num_actions=8, num_correct=2, device="cpu", sampler="torch")
    want = dict(config.setting(), backend="torch")
    assert config.config_id() == hashlib.sha256(json.dumps(want, sort_keys=True).encode()).hexdigest()[:12]
    # what runs where does not change the id; what changes results does
    assert config.with_(seeds=(7,), chunk_runs=3).config_id() == config.config_id()
    assert config.with_(lr=0.02).config_id() != config.config_id()
    assert config.with_(sampler="native").config_id() != config.config_id()


def test_config_with_and_to_dict():
    from fgrpo_sim.sim.categorical import CategoricalConfig

    config = CategoricalConfig(num_actions=8, num_correct=2)
    other = config.with_(steps=3)
    assert other.steps == 3 and config.steps == 1000 and other.num_actions == 8
    as_dict = config.to_dict()
    assert as_dict["num_actions"] == 8 and as_dict["group_sizes"] == config.group_sizes and "metadata" in as_dict


def test_initial_masses_by_hand():
    from fgrpo_sim.sim.categorical import CategoricalConfig

    # 4 actions: anchor logit 2, one more correct at 1, two incorrect at 0
    masses = CategoricalConfig(num_actions=4, num_correct=2, anchor_logit=2.0, correct_logit=1.0,
                               incorrect_logit=0.0).initial_masses()
    total = math.e**2 + math.e + 2.0
    assert masses["q_pos"] == pytest.approx((math.e**2 + math.e) / total, rel=1e-12)
    assert masses["p_anchor"] == pytest.approx(math.e**2 / total, rel=1e-12)
    assert masses["tau"] == pytest.approx(math.e / total, rel=1e-12)
    # the largest logit may be any of the three, and none overflows
    wide = CategoricalConfig(num_actions=4, num_correct=2, anchor_logit=-50.0, correct_logit=-50.0,
                             incorrect_logit=50.0).initial_masses()
    assert wide["q_pos"] == pytest.approx(2 * math.exp(-100.0) / 2, rel=1e-9)
    wide = CategoricalConfig(num_actions=4, num_correct=2, anchor_logit=-50.0, correct_logit=50.0,
                             incorrect_logit=-50.0).initial_masses()
    assert wide["tau"] == pytest.approx(1.0, rel=1e-9) and wide["p_anchor"] == pytest.approx(math.exp(-100.0), rel=1e-6)


@pytest.mark.parametrize("device, message", [
    ("mps", "device must be auto, cpu, cuda or cuda:K, got 'mps'"),
    ("gpu", "device must be auto, cpu, cuda or cuda:K, got 'gpu'"),
])
def test_resolve_device_names_the_devices_it_takes(device, message):
    from fgrpo_sim.sim.categorical import resolve_device

    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        resolve_device(device)


def test_resolve_device_without_cuda(monkeypatch):
    from fgrpo_sim.sim.categorical import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match=r"^device must be auto or cpu on this machine \(no CUDA\), got 'cuda:0'$"):
        resolve_device("cuda:0")


def test_resolve_device_names_the_cuda_devices_there_are(monkeypatch):
    from fgrpo_sim.sim.categorical import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("auto") == torch.device("cuda")
    assert resolve_device("cuda:1") == torch.device("cuda:1") and resolve_device("cuda") == torch.device("cuda")
    with pytest.raises(ValueError, match=re.escape("device must name one of the 2 CUDA devices here "
                                                   "(cuda:0 .. cuda:1), got 'cuda:2'")):
        resolve_device("cuda:2")


# --- engine.py: every metric of a step from given counts, against numpy by hand, on both backends --------------------

def _backends():
    from fgrpo_sim.sim.categorical.sampling import native_available

    return ["torch"] + (["native"] if native_available() else [])


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


def _metrics_by_hand(z, z0, z_before, counts, c, gamma, alpha, above):
    """The METRICS of one run from its logits now (z), at start (z0), before its latest step (z_before) and the
    counts that step used: the definitions in engine.METRICS, written out in numpy."""
    p, p0, p_before = _softmax(z), _softmax(z0), _softmax(z_before)
    n = counts.sum()
    x = counts[:c].sum()
    mu_hat = x / n
    return {
        "q_pos": p[:c].sum(),
        "m_ret": 1.0 - np.clip(p0[:c] - p[:c], 0.0, None).sum() / p0[:c].sum(),
        "unsampled_correct_mass": p_before[:c][counts[:c] == 0].sum(),
        "entropy": -(p * np.log(p)).sum(),
        "anchor_prob": p[0],
        "frac_correct_above_start": np.mean(p[:c] > p0[:c] * above),
        "worst_drop": max(0.0, 1.0 - (p[:c] / p0[:c]).min()),
        "mu_hat": mu_hat,
        "focal_weight": (1.0 - (x + alpha) / (n + 2 * alpha)) ** gamma,
    }


@pytest.mark.parametrize("backend", _backends())
@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_every_metric_after_given_counts_matches_numpy(backend, alpha):
    from fgrpo_sim.sim.categorical import METRICS, CategoricalBatch, CategoricalConfig

    # float64 on the CPU: the comparison is to 1e-9 (the native kernel runs on the CPU only)
    config = CategoricalConfig(num_actions=6, num_correct=3, anchor_logit=1.0, correct_logit=0.5, incorrect_logit=0.0,
                               surrogate="logprob", optimizer="sgd", lr=3.0, weight_decay=0.0, dtype="float64",
                               device="cpu", sampler=backend, focal_smoothing=alpha, reward_wrong=-0.5)
    batch = CategoricalBatch(config, [5, 8], [1.0, 2.0], [0, 1])
    start = batch.metrics()
    for name in ("mu_hat", "focal_weight", "unsampled_correct_mass"):  # no batch drawn yet
        assert torch.isnan(start[name]).all(), name
    assert torch.allclose(start["m_ret"], torch.ones(2, dtype=torch.float64)) and (start["worst_drop"] == 0).all()
    z0 = batch.logits[0].numpy().copy()
    steps = [np.array([[2, 0, 1, 0, 2, 0], [0, 0, 3, 4, 0, 1]]), np.array([[0, 3, 0, 1, 0, 1], [6, 0, 0, 0, 1, 1]])]
    for counts in steps:
        before = batch.logits.numpy().copy()
        batch.step_with_counts(torch.as_tensor(counts))
    got = batch.metrics()
    assert sorted(got) == sorted(METRICS)
    for r, gamma in enumerate([1.0, 2.0]):
        want = _metrics_by_hand(batch.logits[r].numpy(), z0, before[r], steps[-1][r], 3, gamma, alpha, 1 + 1e-12)
        for name in METRICS:
            assert float(got[name][r]) == pytest.approx(want[name], rel=1e-9, abs=1e-12), (name, r)
    # the steps moved the policy: the metrics above are not their start values
    assert float(got["worst_drop"].max()) > 0.05 and float(got["frac_correct_above_start"].max()) > 0


@pytest.mark.parametrize("backend", _backends())
@pytest.mark.parametrize("dtype, rise, counted", [("float32", 3e-7, 0.0), ("float32", 2e-5, 0.5),
                                                  ("float64", 1e-9, 0.5)])
def test_above_start_means_beyond_the_rounding_of_the_dtype(backend, dtype, rise, counted):
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    config = CategoricalConfig(num_actions=4, num_correct=2, dtype=dtype, device="cpu", sampler=backend)
    batch = CategoricalBatch(config, [4], [0.0], [0])
    batch.logits[0, 1] += rise  # correct action 1 rises by about `rise` (relative), the anchor falls a little
    if batch.native is not None:
        batch.native.refresh(batch.logits)
    assert float(batch.metrics()["frac_correct_above_start"][0]) == counted


# --- sampling.py: the torch sampler's integers, written again in plain Python -----------------------------------------

M64 = (1 << 64) - 1


def _uniform53(key: int, stream: int, j: int) -> int:
    """Draw j of a run with `key` at `stream`, as sampling.stream_uniforms's docstring defines it: splitmix64's
    finaliser of seed + (j + 1) * golden, seed = key ^ (0xD1B54A32D192ED03 * (stream + 1)), top 53 bits."""
    seed = (key & M64) ^ ((0xD1B54A32D192ED03 * (stream + 1)) & M64)
    z = (seed + (j + 1) * 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    z ^= z >> 31
    return z >> 11


def _counts_by_hand(weights: list[int], n: int, key: int, stream: int) -> list[int]:
    """Integer inverse CDF: q_i = trunc(2^53 cumsum_i / total) (exact here: integer weights summing to a power of 2);
    a draw m lands on the first action with q_i > m."""
    total, cum, q = sum(weights), 0, []
    for w in weights:
        cum += w
        q.append(cum * 2**53 // total)
    counts = [0] * len(weights)
    for j in range(n):
        m = _uniform53(key, stream, j)
        counts[next(i for i, qi in enumerate(q) if qi > m)] += 1
    return counts


def test_run_keys_are_blake2b_of_seed_and_salt():
    import hashlib

    from fgrpo_sim.sim.categorical.sampling import run_keys

    def key(seed, salt):
        digest = hashlib.blake2b(f"{seed}:{salt}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "little") & (2**63 - 1)

    keys = run_keys([0, 7, 2**62], salt=3)
    assert keys.dtype == torch.int64 and keys.tolist() == [key(0, 3), key(7, 3), key(2**62, 3)]
    assert run_keys(torch.tensor([[5]])).tolist() == [key(5, 0)]


def test_stream_uniforms_are_splitmix64_by_hand():
    from fgrpo_sim.sim.categorical.sampling import UNIFORM_BITS, run_keys, stream_uniforms

    assert UNIFORM_BITS == 53
    keys = run_keys([1, 2])
    u = stream_uniforms(keys, 5, 4)
    assert u.shape == (2, 4) and u.dtype == torch.float64
    want = [[_uniform53(int(k), 5, j) / 2**53 for j in range(4)] for k in keys.tolist()]
    assert u.tolist() == want  # exact: integers scaled by a power of two
    assert stream_uniforms(keys, 0, 2)[0, 0] == _uniform53(int(keys[0]), 0, 0) / 2**53


@pytest.mark.parametrize("sizes", [[5, 5, 5], [3, 0, 9]])
def test_torch_counts_are_the_integer_inverse_cdf_by_hand(sizes):
    from fgrpo_sim.sim.categorical.sampling import run_keys, sample_counts_torch

    rows = [[1, 3, 0, 4], [2, 2, 2, 2], [7, 0, 0, 1]]  # each sums to 8: the CDF's integers are exact
    keys = run_keys([4, 5, 6])
    got = sample_counts_torch(torch.tensor(rows, dtype=torch.float64), sizes, keys, stream=9)
    want = [_counts_by_hand(w, n, int(k), 9) for w, n, k in zip(rows, sizes, keys.tolist())]
    assert got.dtype == torch.int64 and got.tolist() == want
    assert got.sum(1).tolist() == sizes and (got[:, [2]] == torch.tensor([[0], [want[1][2]], [0]])).all()
    out = torch.full((3, 4), -1, dtype=torch.int64)
    assert sample_counts_torch(torch.tensor(rows, dtype=torch.float32), sizes, keys, 9, out=out) is out
    assert out.tolist() == want  # float32 weights: the same integers (the running sum is float64)


def test_draw_plan_searches_batches_beyond_1023_rows_block_by_block():
    from fgrpo_sim.sim.categorical.sampling import MAX_SEARCH_ROWS, run_keys, sample_counts_torch

    assert MAX_SEARCH_ROWS == 1023
    runs = MAX_SEARCH_ROWS + 2
    sizes = [1 + r % 3 for r in range(runs)]  # mixed N: the DrawPlan path
    weights = torch.tensor([[1.0, 1.0, 2.0, 4.0]]).expand(runs, 4).contiguous()
    keys = run_keys(range(runs))
    got = sample_counts_torch(weights, sizes, keys, stream=2)
    assert got.sum(1).tolist() == sizes
    for r in (0, 1022, 1023, 1024):  # the last rows of block one and the rows of block two
        assert got[r].tolist() == _counts_by_hand([1, 1, 2, 4], sizes[r], int(keys[r]), 2), r


@pytest.mark.parametrize("call, message", [
    ("sample_counts_torch(torch.ones(4), [2], run_keys([0]), 0)", "weights must be a 2-D float32/float64 tensor"),
    ("sample_counts_torch(torch.ones(1, 4, dtype=torch.int64), [2], run_keys([0]), 0)",
     "weights must be a 2-D float32/float64 tensor"),
    ("sample_counts_torch(torch.ones(1, 4), [2], run_keys([0]), 0, out=torch.zeros(1, 4, dtype=torch.int32))",
     "out must be an int64 tensor shaped (1, 4)"),
    ("sample_counts_torch(torch.ones(1, 4), [2], run_keys([0]), 0, out=torch.zeros(2, 4, dtype=torch.int64))",
     "out must be an int64 tensor shaped (1, 4)"),
    ("sample_counts_torch(torch.zeros(1, 4), [2], run_keys([0]), 0)",
     "weights must have a positive finite sum in every run"),
    ("sample_counts_torch(torch.tensor([[1.0, float('inf')]]), [2], run_keys([0]), 0)",
     "weights must have a positive finite sum in every run"),
    ("sample_counts_torch(torch.ones(2, 4), [2, 3, 4], run_keys([0, 1, 2]), 0)", "n_draws and keys must be shaped [2]"),
    ("sample_counts_torch(torch.ones(2, 4), [2, 2], run_keys([0, 1, 2]), 0)", "n_draws and keys must be shaped [2]"),
    ("sample_counts_torch(torch.ones(1, 4), [-1], run_keys([0]), 0)", "n_draws must be in [0, 2147483647]"),
    ("DrawPlan([2], run_keys([0]), 4, 'cpu', torch.float32)", "dtype (of the counts) must be int32 or int64, got torch.float32"),
    ("DrawPlan([2], run_keys([0]), 4, 'cpu', torch.int16)", "dtype (of the counts) must be int32 or int64, got torch.int16"),
    ("DrawPlan([2, 3], run_keys([0]), 4, 'cpu')", "n_draws and keys must be shaped [1]"),
    # far beyond the bound: a mutant that drops the check must fail at once (an impossible allocation), never fill
    # the shared machine's memory, as 2^31 draws (16 GB of indices) would
    ("DrawPlan([2**36], run_keys([0]), 4, 'cpu')", "n_draws must be in [0, 2147483647]"),
])
def test_torch_sampler_refuses_bad_input_by_name(call, message):
    from fgrpo_sim.sim.categorical.sampling import DrawPlan, run_keys, sample_counts_torch  # noqa: F401

    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        eval(call)


def test_draw_plan_counts_in_int32_when_asked():
    from fgrpo_sim.sim.categorical.sampling import DrawPlan, run_keys

    assert DrawPlan([0, 2], run_keys([0, 1]), 4, "cpu", torch.int32).blocks[0]["ones"].dtype == torch.int32


# --- study.py: the claims' scores by hand, each threshold at its edge; settings and labels ---------------------------

def _final(rows):
    import pandas as pd

    return pd.DataFrame([dict(group_size=n, gamma=g, m_ret=m, q_pos=q, q_pos_start=s) for n, g, m, q, s in rows])


def test_score_claims_every_number_by_hand_with_thresholds_at_their_edges():
    from fgrpo_sim.sim.categorical.study import score_claims

    # gamma 0: M_ret 0.5, 0.3, 0.6, 0.9 over N = 2 .. 128 (the dip: min(0.5, 0.9) - 0.3 = 0.2 exactly; the last N keeps
    # exactly 0.9; 0.5 is not below the zone's 0.5, so the zone is N = 8 alone); Q_pos gains 1e-3 (exactly, from 0)
    # and 0.05 at the largest N
    final = _final([(128, 0.0, 0.9, 0.05, 0.0), (2, 0.0, 0.5, 1e-3, 0.0), (8, 0.0, 0.3, 0.5, 0.25),
                    (32, 0.0, 0.6, 0.5, 0.25),
                    (2, 1.0, 0.5, 0.5, 0.25), (8, 1.0, 0.4, 0.5, 0.25), (32, 1.0, 0.75, 0.5, 0.25),
                    (128, 1.0, 0.9, 0.5, 0.25)])
    got = score_claims(final)
    assert got == {"claim1_qpos_rises": True, "claim2_mret_nonmonotonic": True, "claim3_gamma_helps_in_zone": True,
                   "claims_shown": 3, "min_qpos_gain": pytest.approx(1e-3, rel=1e-12), "mret_dip": 0.2,
                   "mret_largest_n": 0.9, "qpos_gain_largest_n": pytest.approx(0.05, rel=1e-12), "zone_size": 1,
                   "zone_mret_gain": pytest.approx(0.1, rel=1e-9)}
    assert type(got["claims_shown"]) is int and type(got["zone_size"]) is int
    assert all(type(got[k]) is bool for k in ("claim1_qpos_rises", "claim2_mret_nonmonotonic",
                                              "claim3_gamma_helps_in_zone"))
    # just below each edge, each claim fails on its own
    below = final.copy()
    below.loc[1, "q_pos"] = 0.999e-3
    assert score_claims(below)["claim1_qpos_rises"] is False and score_claims(below)["claims_shown"] == 2
    below = final.copy()
    below.loc[0, "m_ret"] = 0.8999
    assert score_claims(below)["claim2_mret_nonmonotonic"] is False
    below = final.copy()
    below.loc[0, "q_pos"] = 0.0499
    assert score_claims(below)["claim2_mret_nonmonotonic"] is False
    below = final.copy()
    below.loc[2, "m_ret"] = 0.3001  # the dip falls below 0.2
    assert score_claims(below)["claim2_mret_nonmonotonic"] is False
    below = final.copy()
    below.loc[5, "m_ret"] = 0.34  # gamma 1 keeps less than 0.05 more in the zone
    assert score_claims(below)["claim3_gamma_helps_in_zone"] is False


def test_score_claims_with_too_few_n_or_other_gammas():
    import math

    from fgrpo_sim.sim.categorical.study import score_claims

    two = score_claims(_final([(2, 0.0, 0.1, 0.5, 0.25), (8, 0.0, 0.95, 0.5, 0.25),
                               (2, 1.0, 0.9, 0.5, 0.25), (8, 1.0, 0.95, 0.5, 0.25)]))
    assert math.isnan(two["mret_dip"]) and two["claim2_mret_nonmonotonic"] is False and two["mret_largest_n"] == 0.95
    assert two["zone_size"] == 1 and two["zone_mret_gain"] == pytest.approx(0.8) and two["claims_shown"] == 2
    # neither gamma 0 nor 1 (a table of gamma 0.5 runs): nothing to judge claims 2 and 3 on
    none = score_claims(_final([(2, 0.5, 0.9, 0.5, 0.25), (8, 0.5, 0.95, 0.5, 0.25)]))
    for key in ("mret_dip", "mret_largest_n", "qpos_gain_largest_n", "zone_mret_gain"):
        assert math.isnan(none[key]), key
    assert none["zone_size"] == 0 and none["claims_shown"] == 1 and none["claim3_gamma_helps_in_zone"] is False


def test_claim_codes_state_the_thresholds():
    from fgrpo_sim.sim.categorical.study import CLAIM_CODES

    assert CLAIM_CODES == (
        "(1) Q_pos rises at every N (by >= 0.001)",
        "(2) M_ret dips by >= 0.2 at intermediate N, is >= 0.9 at the largest N, and the largest N trained "
        "(Q_pos up >= 0.05)",
        "(3) gamma = 1 keeps >= 0.05 more M_ret where gamma = 0 ends below 0.5")


def test_study_settings_and_their_labels():
    from fgrpo_sim.sim.categorical import CategoricalConfig
    from fgrpo_sim.sim.categorical.study import setting_label, study_settings

    assert setting_label("draws", "sgd", 1e-8, 0.0) == "draws/sgd"
    assert setting_label("draws", "sgd", 1e-8, 0.5) == "draws/sgd/wd=0.5"
    assert setting_label("logprob", "adamw", 1e-12, 0.01) == "logprob/adamw/eps=1e-12/wd=0.01"
    settings = study_settings(CategoricalConfig(num_actions=8, num_correct=2), steps=30)
    assert len(settings) == 24
    labels = [c.metadata["setting"] for c in settings]
    assert labels[:4] == ["distinct/adamw/eps=1e-08/wd=0", "draws/adamw/eps=1e-08/wd=0",
                          "logprob/adamw/eps=1e-08/wd=0", "distinct/adamw/eps=1e-12/wd=0"]
    assert labels[-3:] == ["distinct/sgd", "draws/sgd", "logprob/sgd"] and len(set(labels)) == 24
    first = settings[0]
    assert (first.steps, first.stride, first.seeds, first.gammas, first.num_actions) == (30, 100, (0,), (0.0, 1.0), 8)
    assert first.group_sizes == (2, 8, 32, 128, 512, 2048, 8192, 32768, 131072)
    assert [(c.optimizer, c.eps, c.weight_decay) for c in settings[::3]] == [
        ("adamw", 1e-8, 0.0), ("adamw", 1e-12, 0.0), ("adamw", 1e-8, 0.01), ("adamw", 1e-12, 0.01),
        ("adamw", 1e-6, 0.0), ("adamw", 1e-8, 0.1), ("adam", 1e-8, 0.01), ("sgd", 1e-8, 0.0)]
    assert study_settings(steps=5)[0].num_actions == 128_000  # the paper's policy by default


def test_final_means_and_claims_table_by_hand():
    import pandas as pd

    from fgrpo_sim.sim.categorical.study import claims_table, final_means

    rows = []
    for setting, cid, last in (("b/sgd", "id-b", 4), ("a/sgd", "id-a", 2)):
        for seed, shift in ((0, 0.0), (1, 0.25)):
            for step in (0, last):
                for n in (2, 8, 32):
                    for gamma in (0.0, 1.0):
                        q = 0.25 + shift + (0.25 if step else 0.0)
                        dipped = 0.25 if setting == "b/sgd" else 0.5
                        m = 1.0 if step == 0 else {2: 0.75, 8: dipped, 32: 1.0}[n] - shift * (n == 8)
                        rows.append(dict(setting=setting, config_id=cid, surrogate=setting[0], optimizer="sgd",
                                         eps=1e-8, weight_decay=0.0, group_size=n, gamma=gamma, seed=seed, step=step,
                                         q_pos=q, m_ret=m))
    table = pd.DataFrame(rows)
    final = final_means(table)
    assert list(final.columns) == ["setting", "group_size", "gamma", "q_pos", "m_ret", "q_pos_start", "m_ret_start"]
    row = final[(final["setting"] == "b/sgd") & (final["group_size"] == 8) & (final["gamma"] == 0.0)].iloc[0]
    assert (row["q_pos"], row["m_ret"], row["q_pos_start"], row["m_ret_start"]) == (0.625, 0.125, 0.375, 1.0)
    assert len(final) == 12
    claims = claims_table(table)
    assert list(claims["setting"]) == ["b/sgd", "a/sgd"]  # equal claims shown: the deeper dip first
    assert list(claims["surrogate"]) == ["b", "a"] and list(claims["optimizer"]) == ["sgd", "sgd"]
    assert claims["claims_shown"].tolist() == [2, 2] and claims["mret_dip"].tolist() == [0.625, 0.375]


def test_score_claims_measures_the_dip_from_three_n_on():
    from fgrpo_sim.sim.categorical.study import score_claims

    three = score_claims(_final([(2, 0.0, 0.5, 0.5, 0.25), (8, 0.0, 0.25, 0.5, 0.25), (32, 0.0, 0.95, 0.5, 0.25),
                                 (2, 1.0, 0.5, 0.5, 0.25), (8, 1.0, 0.5, 0.5, 0.25), (32, 1.0, 0.95, 0.5, 0.25)]))
    assert three["mret_dip"] == 0.25 and three["claim2_mret_nonmonotonic"] is True and three["claims_shown"] == 3


# --- torch_step.py: the reference Adam of an old torch (no fused kernel), the step counter, a CUDA graph's replays ----

@pytest.mark.parametrize("optimizer, weight_decay", [("adam", 0.0), ("adam", 0.1), ("adamw", 0.0), ("adamw", 0.1)])
def test_reference_adam_without_the_fused_kernel_equals_torch_optim(monkeypatch, optimizer, weight_decay):
    """What an old torch (no torch._fused_adam_) runs: the same update as torch.optim's, step by step."""
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig
    from fgrpo_sim.sim.categorical.engine import initial_logits

    config = CategoricalConfig(num_actions=5, num_correct=2, surrogate="logprob", optimizer=optimizer, lr=0.05,
                               beta1=0.7, beta2=0.9, eps=1e-3, weight_decay=weight_decay, dtype="float64",
                               device="cpu", sampler="torch")
    batch = CategoricalBatch(config, [4], [1.0], [0])
    batch.torch_step.fused_adam = None
    steps = [[[2, 0, 1, 1, 0]], [[0, 1, 0, 3, 0]], [[1, 1, 1, 0, 1]]]
    z = initial_logits(config).clone().requires_grad_(True)
    cls = torch.optim.AdamW if optimizer == "adamw" else torch.optim.Adam
    opt = cls([z], lr=0.05, betas=(0.7, 0.9), eps=1e-3, weight_decay=weight_decay)
    span = config.reward_correct - config.reward_wrong
    for counts in steps:
        batch.step_with_counts(torch.tensor(counts))
        c = torch.tensor(counts[0], dtype=torch.float64)
        mu = float(c[:2].sum() / c.sum())
        adv = torch.where(torch.arange(5) < 2, span * (1 - mu), -span * mu).to(torch.float64)
        opt.zero_grad()
        (-((1 - mu) * (c * adv * torch.log_softmax(z, 0)).sum() / c.sum())).backward()
        opt.step()
        assert torch.allclose(batch.logits[0], z.detach(), rtol=0, atol=1e-12)
    assert float((z.detach() - initial_logits(config)).abs().max()) > 0.05
    assert float(batch.torch_step.adam_step) == 3.0


@pytest.mark.parametrize("backend", _backends())
def test_the_batch_counts_its_steps_on_both_backends(backend):
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    config = CategoricalConfig(num_actions=6, num_correct=2, device="cpu", sampler=backend, optimizer="sgd")
    batch = CategoricalBatch(config, [3, 5], [0.0, 1.0], [0, 1])
    for _ in range(3):
        batch.step()
    batch.step_with_counts(torch.tensor([[1, 1, 1, 0, 0, 0], [0, 0, 0, 0, 0, 5]]))
    assert batch.step_count == 4


def test_a_cuda_graph_step_warms_up_captures_once_then_replays(monkeypatch):
    """torch.cuda's stream and graph API stood in for (no GPU needed): call 1 runs eagerly on a side stream, call 2
    captures (recording, not running, the step) and replays it once, later calls replay; after each replay the
    step's outputs are the graph's own tensors."""
    import contextlib

    from fgrpo_sim.sim.categorical.torch_step import CudaGraphStep

    log = []

    class Graph:
        recorded = None

        def replay(self):
            log.append("replay")
            self.recorded()

    capturing = []

    @contextlib.contextmanager
    def graph_context(graph):
        capturing.append(graph)
        yield
        capturing.pop()

    class Inner:
        p = mu_hat = focal = None
        runs = 0

        def step(self):
            if capturing:  # under capture the step is recorded, not run
                log.append("capture")
                capturing[-1].recorded = self.run
                self.p, self.mu_hat, self.focal = "p-graph", "mu-graph", "focal-graph"
            else:
                self.run()

        def run(self):
            self.runs += 1
            log.append("run")

    class Stream:
        def __init__(self, name="side"):
            self.name = name

        def wait_stream(self, other):
            log.append(f"{self.name} waits for {other.name}")

    current = Stream("current")

    @contextlib.contextmanager
    def on_stream(stream):
        log.append(f"on {stream.name}")
        yield

    monkeypatch.setattr(torch.cuda, "Stream", Stream)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: current)
    monkeypatch.setattr(torch.cuda, "stream", on_stream)
    monkeypatch.setattr(torch.cuda, "CUDAGraph", Graph)
    monkeypatch.setattr(torch.cuda, "graph", graph_context)
    inner = Inner()
    step = CudaGraphStep(inner)
    step()
    assert log == ["side waits for current", "on side", "run", "current waits for side"] and step.graph is None
    log.clear()
    step()
    assert log == ["capture", "replay", "run"] and isinstance(step.graph, Graph) and not step.eager_only
    assert step.outputs == ("p-graph", "mu-graph", "focal-graph")
    log.clear()
    inner.p = inner.mu_hat = inner.focal = None
    step()
    step()
    assert log == ["replay", "run", "replay", "run"] and inner.runs == 4 and step.calls == 4
    assert (inner.p, inner.mu_hat, inner.focal) == ("p-graph", "mu-graph", "focal-graph")


def test_a_cpu_batch_steps_eagerly_whatever_cuda_graph_says(monkeypatch):
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig
    from fgrpo_sim.sim.categorical.torch_step import CudaGraphStep

    config = CategoricalConfig(num_actions=4, num_correct=2, device="cpu", sampler="torch")
    batch = CategoricalBatch(config, [2], [0.0], [0], cuda_graph=True)
    assert not isinstance(batch._run_step, CudaGraphStep)  # a graph is CUDA's: the CPU steps eagerly
    monkeypatch.setenv("FGRPO_CUDA_GRAPH", "0")
    assert not isinstance(CategoricalBatch(config, [2], [0.0], [0])._run_step, CudaGraphStep)


def test_read_final_means_reads_a_record_and_refuses_a_damaged_one_naming_the_fix(tmp_path):
    from fgrpo_sim.sim.categorical.study import read_final_means

    head = "setting,group_size,gamma,q_pos,m_ret,q_pos_start,m_ret_start\n"
    good = tmp_path / "final.csv"
    good.write_text(head + "a/sgd,2,0,0.75,0.5,0.625,1\na/sgd,8,1,0.5,0.25,0.625,1\n")
    table = read_final_means(good)
    assert table["group_size"].tolist() == [2, 8] and table["q_pos"].tolist() == [0.75, 0.5]
    bad = tmp_path / "bad.csv"
    bad.write_text(head + "a/sgd,2,0,1.5,0.5,0.625,1\n")
    with pytest.raises(ValueError, match=f"^cannot read {re.escape(str(bad))} line 2: q_pos = 1.5 is not in \\[0, 1\\]"
                                         r".*reinstall fgrpo-sim \(a committed record\)$"):
        read_final_means(bad)


# --- native.py: Adam's moments refused when missing (the kernel would write through NULL and crash the process) -------

@pytest.mark.parametrize("missing", ["exp_avg", "exp_avg_sq"])
@pytest.mark.parametrize("optimizer", ["adam", "adamw"])
def test_native_adam_step_refuses_missing_moments(missing, optimizer):
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig
    from fgrpo_sim.sim.categorical.sampling import native_available

    if not native_available():
        pytest.skip("no C compiler: no native kernel")
    config = CategoricalConfig(num_actions=4, num_correct=2, device="cpu", sampler="native", optimizer=optimizer)
    batch = CategoricalBatch(config, [4], [0.0], [0])
    moments = {"exp_avg": batch.exp_avg, "exp_avg_sq": batch.exp_avg_sq, missing: None}
    coef = batch.update_coefficients(batch.native.set_counts(torch.tensor([[2, 0, 1, 1]])))
    before = batch.logits.clone()
    with pytest.raises(ValueError, match=f"^exp_avg and exp_avg_sq must be tensors for optimizer {optimizer}, got None$"):
        batch.native.fused_step(batch.logits, moments["exp_avg"], moments["exp_avg_sq"], coef, "logprob", optimizer,
                                lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.0, step=1)
    assert torch.equal(batch.logits, before)
    batch.native.fused_step(batch.logits, batch.exp_avg, batch.exp_avg_sq, coef, "logprob", optimizer, lr=0.1,
                            beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.0, step=1)
    assert not torch.equal(batch.logits, before)
    sgd = CategoricalBatch(config.with_(optimizer="sgd"), [4], [0.0], [0])  # SGD has no moments and needs none
    assert sgd.exp_avg is None and sgd.exp_avg_sq is None
    sgd.step()
    assert sgd.step_count == 1


# --- run.py: recorded steps, the table's layout, resume's refusals by message -----------------------------------------

def test_recorded_steps_include_the_last_once():
    from fgrpo_sim.sim.categorical.run import recorded_steps

    assert recorded_steps(7, 3) == [0, 3, 6, 7]
    assert recorded_steps(6, 3) == [0, 3, 6]
    assert recorded_steps(0, 5) == [0]
    assert recorded_steps(2, 10) == [0, 2]


def test_write_table_by_suffix_in_any_case(tmp_path):
    import pandas as pd

    from fgrpo_sim.sim.categorical.run import write_table

    table = pd.DataFrame({"a": [1, 2]})
    assert write_table(table, tmp_path / "t.CSV").read_text() == "a\n1\n2\n"
    assert pd.read_parquet(write_table(table, tmp_path / "t.Parquet"))["a"].tolist() == [1, 2]
    with pytest.raises(ValueError, match=r"^out must end in \.parquet or \.csv, got 't\.txt'$"):
        write_table(table, tmp_path / "t.txt")
    assert not (tmp_path / "t.txt").exists()


def _tiny(**kw):
    from fgrpo_sim.sim.categorical import CategoricalConfig

    base = dict(num_actions=6, num_correct=2, group_sizes=(2, 4), gammas=(0.0,), seeds=(0,), steps=3, stride=2,
                device="cpu", dtype="float64", chunk_runs=1)
    base.update(kw)
    return CategoricalConfig(**base)


def test_simulate_chunk_table_layout_by_hand():
    from fgrpo_sim.sim.categorical import METRICS
    from fgrpo_sim.sim.categorical.run import simulate_chunk

    config = _tiny(metadata={"setting": "mine", "tag": 3})
    table = simulate_chunk(config, [(2, 0.0, 0), (4, 0.0, 0)])
    assert list(table.columns) == ["config_id", "surrogate", "optimizer", "lr", "beta1", "beta2", "eps",
                                   "weight_decay", "group_size", "gamma", "seed", "step", *METRICS, "setting", "tag"]
    assert table["step"].tolist() == [0, 0, 2, 2, 3, 3] and table["group_size"].tolist() == [2, 4] * 3
    assert set(table["config_id"]) == {config.config_id()} and set(table["setting"]) == {"mine"}
    assert set(table["lr"]) == {0.01} and set(table["optimizer"]) == {"adamw"} and set(table["tag"]) == {3}


def test_a_diverged_run_is_named_with_its_step(monkeypatch):
    from fgrpo_sim.sim.categorical import engine
    from fgrpo_sim.sim.categorical.run import simulate_chunk

    real = engine.CategoricalBatch.metrics

    def diverged_after_two(self):
        m = real(self)
        if self.step_count >= 2:
            m["entropy"] = m["entropy"].clone()
            m["entropy"][1] = float("nan")
        return m

    monkeypatch.setattr(engine.CategoricalBatch, "metrics", diverged_after_two)
    with pytest.raises(ValueError, match=r"^run \(N = 4, gamma = 0.5, seed = 7\) diverged at step 2 \(non-finite "
                                         r"policy\); use a smaller --lr or --dtype float64$"):
        simulate_chunk(_tiny(), [(2, 0.0, 0), (4, 0.5, 7)])


def test_finished_runs_need_every_recorded_step():
    import pandas as pd

    from fgrpo_sim.sim.categorical.run import finished_runs

    config = _tiny()
    cid = config.config_id()
    rows = [dict(config_id=cid, group_size=2, gamma=0.0, seed=0, step=s) for s in (0, 2, 3)]
    rows += [dict(config_id=cid, group_size=4, gamma=0.0, seed=0, step=s) for s in (0, 2)]  # cut short
    rows += [dict(config_id="other", group_size=8, gamma=0.0, seed=0, step=s) for s in (0, 2, 3)]
    assert finished_runs(pd.DataFrame(rows), config) == {(2, 0.0, 0)}
    assert finished_runs(pd.DataFrame(), config) == set()
    assert finished_runs(pd.DataFrame({"step": [0]}), config) == set()


def test_resume_refuses_a_row_that_contradicts_this_runs_setting(tmp_path):
    import pandas as pd

    from fgrpo_sim.sim.categorical.run import run_grid

    config = _tiny()
    out = tmp_path / "r.csv"
    run_grid(config, out, progress=False)
    table = pd.read_csv(out)
    table["lr"] = 0.5  # every row of this config_id edited alike: one setting, but not this run's
    table.to_csv(out, index=False)
    with pytest.raises(ValueError, match=re.escape(f"lr = 0.5 contradicts config_id {config.config_id()}, this run's "
                                                   "setting (which has lr = 0.01)")):
        run_grid(config, out, progress=False)
    table["lr"] = [0.01] * (len(table) - 1) + [0.5]  # one row unlike its config_id's first
    table.to_csv(out, index=False)
    with pytest.raises(ValueError, match=re.escape(f"lr = 0.5 contradicts config_id {config.config_id()} (its first "
                                                   "row has 0.01: one config_id is one setting)")):
        run_grid(config, out, progress=False)
    table["lr"] = 0.01
    table.loc[len(table) - 1, "step"] = 1  # a step this run does not record
    table.to_csv(out, index=False)
    with pytest.raises(ValueError, match=re.escape(f"step 1 is not one this run of config_id {config.config_id()} "
                                                   "records (3 steps, every 2)")):
        run_grid(config, out, progress=False)


def test_resume_redoes_a_half_written_run_and_keeps_the_others(tmp_path, monkeypatch):
    import pandas as pd

    from fgrpo_sim.sim.categorical import run as run_mod

    config = _tiny(group_sizes=(2, 4, 8))
    out = tmp_path / "r.csv"
    full = run_mod.run_grid(config, out, progress=False)
    other = run_mod.run_grid(config.with_(lr=0.02), out, progress=False)
    saved = pd.read_csv(out)
    # N = 4 lost its last record (a run cut short): only it is simulated again
    cut = saved[~((saved["config_id"] == config.config_id()) & (saved["group_size"] == 4) & (saved["step"] == 3))]
    out = tmp_path / "r.parquet"  # a parquet file pandas wrote with its (reversed) index kept
    cut.iloc[::-1].to_parquet(out, index=True)
    ran = []
    real = run_mod.simulate_chunk

    def spy(cfg, runs, progress=None):
        ran.append(list(runs))
        return real(cfg, runs, progress)

    monkeypatch.setattr(run_mod, "simulate_chunk", spy)
    again = run_mod.run_grid(config, out, progress=False)
    assert ran == [[(4, 0.0, 0)]]
    pd.testing.assert_frame_equal(again, full)
    kept = pd.read_parquet(out)
    assert len(kept) == len(saved) and (kept["config_id"] == other["config_id"].iloc[0]).sum() == len(other)
    assert not run_mod.run_grid(config, None, resume=False, progress=False).empty  # no file: just the table


# --- sampling.py: the kernel loaded afresh declares every function's C signature -------------------------------------

def test_a_fresh_load_of_the_kernel_declares_its_signatures_and_samples_alike(monkeypatch):
    """_load_native runs once per process (its result is kept in module globals), so a test that did not load it
    first would never see it run: here the globals are emptied, the kernel loaded again (the kept build, under
    compiled.py's rule), and the fused engine driven through a second fresh handle must draw what the first drew."""
    import ctypes
    import os

    import shutil

    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig, sampling

    if shutil.which(os.environ.get("CC", "cc")) is None:  # with a compiler, the kernel must load
        pytest.skip("no C compiler: no native kernel")
    config = CategoricalConfig(num_actions=70, num_correct=5, device="cpu", sampler="native", dtype="float64",
                               optimizer="adamw", lr=0.05)

    def run():
        batch = CategoricalBatch(config, [3, 40], [0.0, 1.0], [0, 1])
        for _ in range(3):
            batch.step()
        counts, _ = sampling.sample_counts_native(batch.native.weights, [5, 9], [1, 2], 4, num_correct=5)
        return batch.logits.clone(), counts

    modes = []
    real_cdll = ctypes.CDLL

    def cdll(path, *args, **kwargs):  # the private copy dlopen maps: 0600 in a 0700 folder of this process
        modes.append((os.stat(path).st_mode & 0o777, os.stat(os.path.dirname(path)).st_mode & 0o777))
        return real_cdll(path, *args, **kwargs)

    old = sampling._LIB
    monkeypatch.setattr(sampling, "_LIB", None)
    monkeypatch.setattr(sampling, "_LIB_ERROR", None)
    monkeypatch.setattr(ctypes, "CDLL", cdll)
    lib = sampling._load_native()
    assert lib is not None and lib is not old and sampling._LIB is lib and modes == [(0o600, 0o700)]
    ptr, i64, u64, dbl, cint = ctypes.c_void_p, ctypes.c_int64, ctypes.c_uint64, ctypes.c_double, ctypes.c_int
    for suffix in ("f32", "f64"):
        assert getattr(lib, f"sample_counts_{suffix}").argtypes == [ptr, i64, i64, ptr, i64, ptr, ptr, u64, ptr, ptr]
        assert getattr(lib, f"sample_counts_{suffix}").restype is cint
        assert getattr(lib, f"refresh_{suffix}").argtypes == [ptr, ptr, i64, i64, ptr, i64, ptr, ptr, ptr, ptr, ptr]
        assert getattr(lib, f"refresh_{suffix}").restype is None
        assert getattr(lib, f"sample_sparse_{suffix}").argtypes == [ptr, ptr, ptr, ptr, i64, i64, ptr, i64, ptr, ptr,
                                                                     u64, ptr, ptr, ptr, ptr, ptr]
        assert getattr(lib, f"sample_sparse_{suffix}").restype is cint
        assert getattr(lib, f"fused_step_{suffix}").argtypes == (
            [ptr, ptr, ptr, ptr, i64, i64, ptr, i64, ptr, ptr, ptr, ptr, ptr, cint, cint] + [dbl] * 7 + [ptr] * 5)
        assert getattr(lib, f"fused_step_{suffix}").restype is None
    before = run()
    monkeypatch.setattr(sampling, "_LIB", None)  # a second fresh load draws the same numbers
    assert sampling._load_native() is not lib
    after = run()
    assert torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])


def test_a_kernel_that_fails_to_load_is_remembered_and_named(monkeypatch):
    from fgrpo_sim.sim.categorical import sampling

    calls = []

    def failing(source):
        calls.append(source)
        raise RuntimeError("no cc here")

    monkeypatch.setattr(sampling, "_LIB", None)
    monkeypatch.setattr(sampling, "_LIB_ERROR", None)
    monkeypatch.setattr(sampling, "load_library", failing)
    assert sampling._load_native() is None and sampling._load_native() is None
    assert calls == [sampling.kernel_source()]  # tried once, with the shipped kernel's text
    assert not sampling.native_available()
    with pytest.warns(UserWarning, match=r"^native count sampler unavailable \(RuntimeError: no cc here\); using the "
                                         r"slower torch sampler$"):
        assert sampling.resolve_sampler("auto", torch.device("cpu")) == "torch"
    with pytest.raises(ValueError, match=r"^backend \(sampler\) 'native' needs a C compiler \(RuntimeError: no cc "
                                         r"here\); use the torch backend$"):
        sampling.resolve_sampler("native", torch.device("cpu"))
    with pytest.raises(RuntimeError, match=r"^native count sampler unavailable: RuntimeError: no cc here$"):
        sampling.sample_counts_native(torch.ones(1, 2), [1], [0], 0)


def test_resolve_sampler_by_device():
    from fgrpo_sim.sim.categorical import sampling

    assert sampling.resolve_sampler("torch", torch.device("cpu")) == "torch"
    assert sampling.resolve_sampler("auto", torch.device("cuda")) == "torch"  # no warning: torch is CUDA's sampler
    assert sampling.resolve_sampler("torch", torch.device("cuda")) == "torch"
    with pytest.raises(ValueError, match=r"^backend \(sampler\) must be torch or auto on device cuda:1, got 'native' "
                                         r"\(CPU only\)$"):
        sampling.resolve_sampler("native", torch.device("cuda:1"))
    with pytest.raises(ValueError, match=r"^sampler must be one of auto, native, torch, got 'c'$"):
        sampling.resolve_sampler("c", torch.device("cpu"))
    if sampling.native_available():
        assert sampling.resolve_sampler("native", torch.device("cpu")) == "native"


# --- the native sampler's and engine's refusals, and the weights' re-centring --------------------------------------

def _needs_native():
    from fgrpo_sim.sim.categorical.sampling import native_available

    if not native_available():
        pytest.skip("no C compiler: no native kernel")


@pytest.mark.parametrize("call, message", [
    ("sample_counts_native(torch.ones(4), [2], [0], 0)", "weights must be a 2-D float32/float64 CPU tensor"),
    ("sample_counts_native(torch.ones(1, 4, dtype=torch.float16), [2], [0], 0)",
     "weights must be a 2-D float32/float64 CPU tensor"),
    ("sample_counts_native(torch.ones(2, 4), [2], [0, 1], 0)", "n_draws and keys must be shaped [2]"),
    ("sample_counts_native(torch.ones(2, 4), [2, 2], [0], 0)", "n_draws and keys must be shaped [2]"),
    ("sample_counts_native(torch.ones(1, 4), [-1], [0], 0)", "n_draws must be in [0, 2147483647]"),
    ("sample_counts_native(torch.ones(1, 4), [2], [0], 0, out=torch.zeros(1, 4, dtype=torch.int32))",
     "out must be a contiguous CPU tensor shaped (1, 4) of dtype torch.int64"),
    ("sample_counts_native(torch.ones(1, 4), [2], [0], 0, out=torch.zeros(4, 2, dtype=torch.int64).t())",
     "out must be a contiguous CPU tensor shaped (1, 4) of dtype torch.int64"),
    ("sample_counts_native(torch.zeros(1, 4), [2], [0], 0)", "weights must have a positive finite sum in every run"),
    ("sample_counts_native(torch.tensor([[1.0, float('nan')]]), [2], [0], 0)",
     "weights must have a positive finite sum in every run"),
])
def test_native_sampler_refuses_bad_input_by_name(call, message):
    from fgrpo_sim.sim.categorical.sampling import sample_counts_native  # noqa: F401

    _needs_native()
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        eval(call)


def test_native_sampler_takes_keys_of_any_integer_dtype_and_fills_out():
    from fgrpo_sim.sim.categorical.sampling import STAT_NAMES, sample_counts_native

    _needs_native()
    weights = torch.tensor([[1.0, 2.0, 0.0, 1.0], [0.5, 0.5, 0.5, 0.5]], dtype=torch.float64)
    counts, stats = sample_counts_native(weights, [6, 3], torch.tensor([5, 9]), 2, num_correct=2)
    same, _ = sample_counts_native(weights, torch.tensor([6, 3], dtype=torch.int32),
                                   torch.tensor([5, 9], dtype=torch.int32), 2, num_correct=2)
    assert torch.equal(counts, same) and counts.sum(1).tolist() == [6, 3] and counts[0, 2] == 0
    out = torch.full((2, 4), -1, dtype=torch.int64)
    stats_out = torch.zeros((2, len(STAT_NAMES)), dtype=torch.float64)
    got, got_stats = sample_counts_native(weights, [6, 3], [5, 9], 2, num_correct=2, out=out, stats_out=stats_out)
    assert got is out and got_stats is stats_out and torch.equal(out, counts) and torch.equal(stats_out, stats)
    # the stats by hand (STAT_NAMES): total, correct weight, correct draws, distinct correct / wrong weight,
    # count-weighted correct / wrong, distinct actions hit
    c, w = counts.to(torch.float64), weights
    hit = (c > 0).to(torch.float64)
    want = torch.stack([w.sum(1), w[:, :2].sum(1), c[:, :2].sum(1), (hit * w)[:, :2].sum(1), (hit * w)[:, 2:].sum(1),
                        (c * w)[:, :2].sum(1), (c * w)[:, 2:].sum(1), hit.sum(1)], dim=1)
    assert torch.allclose(stats, want, rtol=1e-12, atol=0)
    _, all_correct = sample_counts_native(weights, [6, 3], [5, 9], 2)  # num_correct defaults to every action
    assert all_correct[:, 2].tolist() == [6.0, 3.0]


def test_engine_refuses_runs_of_unequal_length():
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    config = CategoricalConfig(num_actions=4, num_correct=2, device="cpu")
    for sizes, gammas, seeds in (([2, 4], [0.0], [0, 1]), ([2], [0.0], [0, 1]), ([], [], [])):
        with pytest.raises(ValueError, match="^group_sizes, gammas and seeds must have the same non-zero length$"):
            CategoricalBatch(config, sizes, gammas, seeds)
    with pytest.raises(ValueError, match=r"^group_sizes must be in \[1, 2\^31 - 1\], got 0$"):
        CategoricalBatch(config, [0], [0.0], [0])


@pytest.mark.parametrize("backend", _backends())
def test_step_with_counts_refuses_fractional_or_negative_counts(backend):
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    config = CategoricalConfig(num_actions=4, num_correct=2, device="cpu", sampler=backend)
    batch = CategoricalBatch(config, [4], [0.0], [0])
    for bad in ([[1.5, 0.5, 1.0, 1.0]], [[-1.0, 3.0, 1.0, 1.0]]):
        with pytest.raises(ValueError, match="^counts must be whole numbers >= 0$"):
            batch.step_with_counts(torch.tensor(bad))
    batch.step_with_counts(torch.tensor([[2.0, 0.0, 1.0, 1.0]]))  # whole floats are counts
    assert batch.step_count == 1


def test_native_counts_may_touch_at_most_n_actions():
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    _needs_native()
    batch = CategoricalBatch(CategoricalConfig(num_actions=4, num_correct=2, device="cpu", sampler="native"),
                             [2], [0.0], [0])
    with pytest.raises(ValueError, match="^counts must touch at most N actions per run$"):
        batch.native.set_counts(torch.tensor([[1, 1, 1, 0]]))


def test_native_sampling_from_a_diverged_policy_is_refused():
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    _needs_native()
    batch = CategoricalBatch(CategoricalConfig(num_actions=4, num_correct=2, device="cpu", sampler="native"),
                             [2, 2], [0.0, 0.0], [0, 1])
    batch.native.totals[1] = float("nan")
    with pytest.raises(ValueError, match=r"^policy weights must have a positive finite sum in every run \(logits "
                                         r"diverged\?\)$"):
        batch.step()


def test_native_weights_are_re_centred_when_the_logits_drift():
    """A large step moves max z far from the weights' shift: they are re-centred (shift = row max), and the native
    state still describes the same policy as the logits."""
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig
    from fgrpo_sim.sim.categorical.native import SHIFT_SLACK

    _needs_native()
    assert SHIFT_SLACK == 30.0
    config = CategoricalConfig(num_actions=6, num_correct=2, device="cpu", sampler="native", dtype="float64",
                               optimizer="sgd", lr=200.0, reward_correct=1.0, reward_wrong=0.0)
    batch = CategoricalBatch(config, [4], [0.0], [0])
    shift0 = float(batch.native.shift[0])
    batch.step_with_counts(torch.tensor([[0, 3, 0, 1, 0, 0]]))  # action 1 (correct) rises by about 75 nats
    z = batch.logits[0]
    assert float(z.max()) - shift0 > SHIFT_SLACK
    assert float(batch.native.shift[0]) == float(z.max())
    assert torch.allclose(batch.native.weights[0], torch.exp(z - z.max()), rtol=1e-12, atol=0)
    assert float(batch.native.totals[0]) == pytest.approx(float(torch.exp(z - z.max()).sum()), rel=1e-12)
    assert torch.allclose(batch.probs()[0], batch.native.weights[0] / batch.native.totals[0], rtol=1e-12, atol=1e-300)


# --- compiled.py: the key, the folder, a build kept with its record, the refusals ------------------------------------

def test_library_key_and_path_by_hand(tmp_path, monkeypatch):
    import hashlib
    import os
    import platform
    import sys

    from fgrpo_sim.sim.categorical import compiled

    lines = open("/proc/cpuinfo").read().splitlines() if os.path.exists("/proc/cpuinfo") else None
    signature = ("\n".join([ln for ln in lines if ln.startswith(("model name", "flags"))][:2]) if lines is not None
                 else platform.processor())
    assert compiled._cpu_signature() == signature
    want = hashlib.sha256(("int x;" + platform.machine() + sys.platform + signature).encode()).hexdigest()[:16]
    assert compiled.library_key("int x;") == want
    monkeypatch.setenv("FGRPO_CACHE_DIR", str(tmp_path))
    assert compiled.library_path("int x;") == tmp_path / "fgrpo-sim" / f"native-{os.geteuid()}" / f"count_sampler_{want}.so"


def test_cpu_signature_without_proc_cpuinfo_is_the_processor(monkeypatch):
    import platform
    from pathlib import Path

    from fgrpo_sim.sim.categorical import compiled

    def unreadable(self, *args, **kwargs):
        raise OSError("no /proc here")

    monkeypatch.setattr(Path, "read_text", unreadable)
    monkeypatch.setattr(platform, "processor", lambda: "cpu-x")
    assert compiled._cpu_signature() == "cpu-x"


def _fake_compile(monkeypatch, mode=0o600):
    """compiled._compile stood in for by a copy of the kernel this test session already built (no compiler run)."""
    from fgrpo_sim.sim.categorical import compiled, sampling

    _needs_native()
    built = compiled.library_path(sampling.kernel_source())
    data = built.read_bytes()
    compiles = []

    def compile_copy(source, folder):
        out = folder / "count_sampler.so"
        out.write_bytes(data)
        out.chmod(mode)
        compiles.append(source)
        return out

    monkeypatch.setattr(compiled, "_compile", compile_copy)
    return data, compiles


def test_a_fresh_build_is_kept_with_its_record_in_a_private_folder(tmp_path, monkeypatch):
    import hashlib
    import os
    import stat

    from fgrpo_sim.sim.categorical import compiled, sampling

    data, compiles = _fake_compile(monkeypatch)
    monkeypatch.setenv("FGRPO_CACHE_DIR", str(tmp_path))
    source = sampling.kernel_source()
    lib = compiled.load_library(source)
    assert hasattr(lib, "fused_step_f64") and len(compiles) == 1
    folder = tmp_path / "fgrpo-sim" / f"native-{os.geteuid()}"
    key = compiled.library_key(source)
    library, record = folder / f"count_sampler_{key}.so", folder / f"count_sampler_{key}.sha256"
    assert sorted(p.name for p in folder.iterdir()) == sorted([library.name, record.name])  # no temp file left
    assert library.read_bytes() == data and record.read_text() == hashlib.sha256(data).hexdigest() + "\n"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(library.stat().st_mode) == 0o600 and stat.S_IMODE(record.stat().st_mode) == 0o600
    compiled.load_library(source)  # the kept build is loaded: nothing compiles again
    assert len(compiles) == 1


def test_a_build_others_can_write_is_never_loaded(tmp_path, monkeypatch):
    from fgrpo_sim.sim.categorical import compiled, sampling

    _fake_compile(monkeypatch, mode=0o666)
    monkeypatch.setenv("FGRPO_CACHE_DIR", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"^the kernel build in .*fgrpo-sim-native-.* is not this user's private "
                                           r"file$"):
        compiled.load_library(sampling.kernel_source())


def test_a_cache_that_cannot_keep_the_build_still_loads_it(tmp_path, monkeypatch):
    import os

    from fgrpo_sim.sim.categorical import compiled, sampling

    _, compiles = _fake_compile(monkeypatch)
    monkeypatch.setenv("FGRPO_CACHE_DIR", str(tmp_path))
    real_rename = os.rename

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "rename", full_disk)
    assert hasattr(compiled.load_library(sampling.kernel_source()), "sample_counts_f64")
    folder = tmp_path / "fgrpo-sim" / f"native-{os.geteuid()}"
    assert list(folder.iterdir()) == []  # the temp file was removed, nothing half-kept
    monkeypatch.setattr(os, "rename", real_rename)
    compiled.load_library(sampling.kernel_source())
    assert len(compiles) == 2  # nothing was kept, so it built again


def test_read_all_stops_at_its_limit(tmp_path):
    import os

    from fgrpo_sim.sim.categorical import compiled

    path = tmp_path / "big"
    path.write_bytes(b"x" * 100)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert compiled._read_all(fd, 100) == b"x" * 100
        with pytest.raises(OSError, match="^file grew past its limit$"):
            compiled._read_all(fd, 99)
    finally:
        os.close(fd)
    assert compiled.MAX_LIBRARY_BYTES == 64 << 20


# --- claims.py: the intervals' estimates by hand, the record, the command's grid --------------------------------------

def _claims_grid():
    """Seeds 0, 1; N 2, 8, 32; gamma 0, 1; steps 0 and 5. Q_pos starts at 0.5; M_ret dips at N = 8 (gamma 0)."""
    import pandas as pd

    m_end = {(2, 0.0): 0.9, (8, 0.0): 0.25, (32, 0.0): 0.75, (2, 1.0): 0.9, (8, 1.0): 0.5, (32, 1.0): 0.75}
    rows = []
    for seed in (0, 1):
        for gamma in (0.0, 1.0):
            for n in (2, 8, 32):
                rows.append(dict(step=0, gamma=gamma, seed=seed, group_size=n, q_pos=0.5, m_ret=1.0))
                rows.append(dict(step=5, gamma=gamma, seed=seed, group_size=n, q_pos=0.5 + 0.125 * (1 + seed) + gamma / 8,
                                 m_ret=m_end[(n, gamma)] - 0.0625 * seed))
    return pd.DataFrame(rows)


def test_claims_estimates_by_hand():
    from fgrpo_sim.sim.categorical.claims import as_record, claims

    result = claims(_claims_grid())
    assert result["start_q_pos"] == 0.5 and result["seeds"] == 2 and result["lowest_n"] == 8
    assert [r["N"] for r in result["rows"]] == [2, 8, 32]
    row8 = result["rows"][1]
    assert row8["q_pos_rise_g0"].estimate == pytest.approx(0.1875)  # (0.125 + 0.25) / 2
    assert row8["q_pos_rise_g1"].estimate == pytest.approx(0.3125)
    assert row8["m_ret_g0"].estimate == pytest.approx(0.21875) and row8["m_ret_g1"].estimate == pytest.approx(0.46875)
    assert row8["m_ret_g1_minus_g0"].estimate == pytest.approx(0.25) and row8["m_ret_g1_minus_g0"].low == pytest.approx(0.25)
    assert sorted(result["ends_minus_lowest"]) == [2, 32]
    assert result["ends_minus_lowest"][2].estimate == pytest.approx(0.65)
    assert result["ends_minus_lowest"][32].estimate == pytest.approx(0.5)
    record = as_record(result)
    assert record["interval"] == "95% percentile bootstrap over seeds (differences paired by seed)"
    assert record["ends_minus_lowest"]["2"] == pytest.approx([0.65, 0.65, 0.65])
    assert record["rows"][1]["m_ret_g1_minus_g0"] == pytest.approx([0.25, 0.25, 0.25]) and record["rows"][1]["N"] == 8
    assert record["lowest_n"] == 8 and record["seeds"] == 2


def test_claims_report_lines_by_hand():
    from fgrpo_sim.sim.categorical.claims import claims, report

    lines = report(claims(_claims_grid())).splitlines()
    assert lines[0] == ("2 seeds; 95% percentile bootstrap over seeds (differences paired by seed); "
                        "start Q_pos 0.5000")
    assert lines[1].split() == ["N", "Q_pos", "rise", "g0", "Q_pos", "rise", "g1", "M_ret", "g0", "M_ret", "g1",
                                "M_ret", "g1", "-", "g0"]
    assert len(lines) == 2 + 3 + 3 and lines[2].split()[0] == "2" and lines[4].split()[0] == "32"
    assert lines[5].startswith("claim 1, Q_pos rises at every N: yes (smallest lower bound +0.12")
    assert lines[6].startswith("claim 2, M_ret (gamma 0) non-monotonic in N: yes; lowest mean at N = 8; "
                               "N = 2 minus N = 8: ")
    assert "; N = 32 minus N = 8: " in lines[6]
    assert lines[7] == ("claim 3, gamma = 1 retains more: interval above 0 at N = [8]; below 0 at N = none; "
                        "includes 0 at N = [2, 32]")


def test_claims_command_runs_the_papers_grid_with_its_seeds(monkeypatch, capsys, tmp_path):
    from fgrpo_sim.sim.categorical import claims as claims_mod
    from fgrpo_sim.sim.categorical import run

    seen = []

    def fake_run_grid(config, out, resume, progress):
        seen.append((config, out, resume, progress))
        return _claims_grid()

    monkeypatch.setattr(run, "run_grid", fake_run_grid)
    assert claims_mod.main(["--seeds", "3", "--out", str(tmp_path / "c.parquet")]) == 0
    config, out, resume, progress = seen[-1]
    assert config.seeds == (0, 1, 2) and config.stride == 10 and config.steps == 1000
    assert config.group_sizes == tuple(2**k for k in range(1, 18)) and config.gammas == (0.0, 1.0)
    assert out == tmp_path / "c.parquet" and resume is True and progress is True
    assert capsys.readouterr().out.startswith("2 seeds; 95% percentile bootstrap")
    assert claims_mod.main(["--no-progress"]) == 0
    config, out, resume, progress = seen[-1]
    assert config.seeds == tuple(range(10)) and out == claims_mod.DEFAULT_OUT and progress is False
    assert str(claims_mod.DEFAULT_OUT) == "runs/categorical-claims.parquet" and claims_mod.DEFAULT_SEEDS == 10
    for bad in ("1", "1001"):
        with pytest.raises(SystemExit) as info:
            claims_mod.main(["--seeds", bad])
        assert info.value.code == 2
        assert f"error: --seeds must be in [2, 1000], got {bad}\n" in capsys.readouterr().err


# --- smaller pieces by hand: row groups, the weights' shift, the initial logits ---------------------------------------

def test_balanced_row_groups_by_hand():
    from fgrpo_sim.sim.categorical.sampling import _balanced_row_groups

    # costs N + K // 8 with K = 16: 102, 12, 52, 4 -> largest first onto the lightest group
    assert _balanced_row_groups([100, 10, 50, 2], 16, 2) == [[0], [1, 2, 3]]
    assert _balanced_row_groups([5, 5, 5], 0, 3) == [[2], [1], [0]]  # equal costs: larger row index first (sorted)
    assert _balanced_row_groups([7], 8, 4) == [[0]]  # empty groups are dropped


@pytest.mark.parametrize("top, shifted", [(40.0, False), (-40.0, False), (40.5, True), (-41.0, True)])
def test_torch_weights_shift_only_rows_whose_maximum_is_large(top, shifted):
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    config = CategoricalConfig(num_actions=4, num_correct=2, device="cpu", sampler="torch", dtype="float64",
                               anchor_logit=0.0, correct_logit=0.0, incorrect_logit=0.0)
    batch = CategoricalBatch(config, [2, 2], [0.0, 0.0], [0, 1])
    batch.logits[0] = torch.tensor([top, top - 1.0, top - 2.0, top - 3.0], dtype=torch.float64)
    w = batch.unnormalised_probs()
    shift = top if shifted else 0.0
    assert float(batch._shift[0, 0]) == shift and float(batch._shift[1, 0]) == 0.0  # per run
    assert torch.allclose(w[0], torch.exp(batch.logits[0] - shift), rtol=1e-15, atol=0)
    assert float(batch.metrics()["entropy"][0]) == pytest.approx(
        float(-(torch.softmax(batch.logits[0], 0) * torch.log_softmax(batch.logits[0], 0)).sum()), rel=1e-9)


def test_initial_logits_anchor_correct_incorrect():
    from fgrpo_sim.sim.categorical import CategoricalConfig
    from fgrpo_sim.sim.categorical.engine import initial_logits

    z = initial_logits(CategoricalConfig(num_actions=5, num_correct=3, anchor_logit=2.5, correct_logit=1.5,
                                         incorrect_logit=-0.5), torch.float32)
    assert z.dtype == torch.float32 and z.tolist() == [2.5, 1.5, 1.5, -0.5, -0.5]
    assert initial_logits(CategoricalConfig(num_actions=2, num_correct=1)).dtype == torch.float64


# --- after the fresh sample (seed 202) was drawn: what its survivors showed -------------------------------------------

def test_run_grid_progress_bar_counts_steps_of_every_chunk(monkeypatch):
    import fgrpo_sim.progress
    from fgrpo_sim.sim.categorical.run import run_grid

    bars = []
    real = fgrpo_sim.progress.bar

    def spy(*args, **kwargs):
        bars.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(fgrpo_sim.progress, "bar", spy)
    run_grid(_tiny(group_sizes=(2, 4, 8), chunk_runs=2), None, progress=True)
    assert bars == [dict(total=2 * 3, progress=True, desc="categorical", unit="step", leave=False)]


def test_run_grid_on_ray_hands_each_chunk_its_device(monkeypatch):
    import contextlib

    from fgrpo_sim.sim import executor as executor_mod
    from fgrpo_sim.sim.categorical.run import run_grid, simulate_chunk

    sessions, calls = [], []

    @contextlib.contextmanager
    def session(executor, device):
        sessions.append((executor, device))
        yield "cpu", 0.0

    def on_ray(fn, chunk_args, on_result, *, executor, gpus, progress, desc):
        calls.append((fn, [(cfg.device, chunk) for cfg, chunk in chunk_args], executor, gpus, progress, desc))
        for index in reversed(range(len(chunk_args))):  # results may arrive in any order
            on_result(index, fn(*chunk_args[index]))

    monkeypatch.setattr(executor_mod, "ray_session", session)
    monkeypatch.setattr(executor_mod, "run_on_ray", on_ray)
    ray = executor_mod.Executor(kind="ray")
    table = run_grid(_tiny(group_sizes=(2, 4, 8), chunk_runs=2, device="auto"), None, progress=False, executor=ray)
    assert sessions == [(ray, "auto")]
    assert calls == [(simulate_chunk, [("cpu", [(2, 0.0, 0), (4, 0.0, 0)]), ("cpu", [(8, 0.0, 0)])], ray, 0.0, False,
                      "categorical chunks")]
    assert table["group_size"].unique().tolist() == [2, 4, 8]


def test_run_study_names_its_own_fix_for_a_foreign_file(tmp_path):
    from fgrpo_sim.sim.categorical.study import run_study

    foreign = tmp_path / "study.csv"
    foreign.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match=r"is not a categorical result table \(no column 'config_id'\); delete it or "
                                         r"choose another file \(the study always resumes\)$"):
        run_study(foreign, steps=2, progress=False, device="cpu", only=["draws/sgd"])


def test_the_largest_group_size_runs_natively():
    """N = 2^31 - 1, the largest count an int32 kernel holds: the native batch keeps at most K touched actions per
    run, so such a batch is cheap to build (the torch backend's plan would hold 2^31 draws)."""
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    _needs_native()
    config = CategoricalConfig(num_actions=4, num_correct=2, device="cpu", sampler="native")
    batch = CategoricalBatch(config, [2**31 - 1], [0.0], [0])
    assert batch.group_sizes.tolist() == [2**31 - 1] and batch.native.offsets.tolist() == [0]


def test_claims_report_says_none_where_no_interval_is_above_zero():
    from fgrpo_sim.sim.categorical.claims import claims, report

    table = _claims_grid()
    table.loc[(table["gamma"] == 1.0) & (table["step"] == 5), "m_ret"] -= 0.5  # gamma 1 now retains less everywhere
    last = report(claims(table)).splitlines()[-1]
    assert last == ("claim 3, gamma = 1 retains more: interval above 0 at N = none; below 0 at N = [2, 8, 32]; "
                    "includes 0 at N = none")


def test_claims_command_help_describes_each_option(capsys):
    from fgrpo_sim.sim.categorical.claims import main

    with pytest.raises(SystemExit) as info:
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert info.value.code == 0
    for words in ("Fig 2's three claims with 10 seeds and bootstrap intervals",
                  "--out OUT grid table (.parquet), resumed if present",
                  "--seeds SEEDS seeds 0..S-1, S in [2, 1000] (default 10)",
                  "--json print the claims as one JSON object"):
        assert words in text, words


def test_a_draw_equal_to_a_cdf_step_goes_to_the_next_action():
    """The rule of the integer inverse CDF: a draw m picks the first action with q_i > m, so action i has probability
    (q_i - q_{i-1}) / 2^53 exactly. Weights (m, 2^53 - m) put q_0 exactly on the first draw's m: it must land on
    action 1, on both torch paths (equal N and the DrawPlan of mixed N)."""
    from fgrpo_sim.sim.categorical.sampling import run_keys, sample_counts_torch

    keys = run_keys([3, 4])
    m = _uniform53(int(keys[0]), 6, 0)
    weights = torch.tensor([[float(m), float(2**53 - m)]] * 2, dtype=torch.float64)
    equal = sample_counts_torch(weights, [1, 1], keys, 6)
    assert equal[0].tolist() == [0, 1]
    mixed = sample_counts_torch(weights, [1, 2], keys, 6)
    assert mixed[0].tolist() == [0, 1] and mixed.sum(1).tolist() == [1, 2]


def test_the_torch_engine_draws_step_t_from_stream_t():
    """Step t (from 0) of the torch backend draws exactly what sample_counts_torch draws for the run's key at stream
    t from the policy before that step."""
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig
    from fgrpo_sim.sim.categorical.sampling import run_keys, sample_counts_torch, stream_mix

    config = CategoricalConfig(num_actions=9, num_correct=3, device="cpu", sampler="torch", dtype="float64",
                               optimizer="sgd", lr=0.5)
    batch = CategoricalBatch(config, [5, 12], [0.0, 1.0], [3, 8])
    assert int(batch.torch_step.mix_step) == stream_mix(0)
    keys = run_keys([3, 8])
    for t in range(3):
        p = batch.probs()
        batch.step()
        want = sample_counts_torch(p, [5, 12], keys, t)
        assert torch.equal(batch.torch_step.counts.to(torch.int64), want), t
