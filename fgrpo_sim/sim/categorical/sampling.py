"""Exact multinomial count sampling for many runs at once: counts[r] ~ Multinomial(N[r], w[r] / sum w[r]).

The simulators only need how often each action was drawn, never the order of the draws, so a
batch of runs is sampled as one [runs, actions] count tensor.

Two exact samplers share one interface:

* `native` (CPU): a small C kernel (`kernel.c`, shipped beside this module), compiled with the system C
  compiler on first use and kept in a private folder of $FGRPO_CACHE_DIR by a hash of its text, the machine and
  the CPU; loaded only under `compiled.py`'s trust rule (owner, mode, content hash).
  Per run it draws the N uniforms bucket by bucket (counts in min(N, 2^22) equal buckets first, then
  fresh positions inside each bucket, which is the same law as N i.i.d. uniforms), so they come out
  sorted in O(N) expected time;
  one linear merge against the running sum of the weights (in float64) then yields the counts.
  Cost O(N + K) per run instead of O(N log K) (on 2 idle cores of this machine: about 80 million
  draws/s at N = 131072, against 15-25 million/s for torch.multinomial or torch.searchsorted).
  Each run has its own random stream derived from (its key, the step), so a run's draws do not
  depend on which other runs share the batch. The same C source holds the sparse sampler and the
  fused update step of the categorical engine (driven by `native`).
* `torch` (any device, e.g. CUDA): inverse CDF in integers, one `torch.searchsorted` for all runs of a
  batch whatever their N (`DrawPlan`, below), against a float64 cumulative sum. Its uniforms are
  counter-based (`stream_uniforms`: splitmix64 of the run's key, the step and the draw index), so here
  too a run's draws depend only on (its key, the step), never on its batch companions; they are other
  numbers than the native generator's (same law).

Counts are integers (int64; the engine's torch step keeps int32, enough for N <= 2^31 - 1), never the policy's
dtype: float32 stops counting at 2^24 (16,777,216 + 1 rounds back), and N may reach 2^31 - 1.

Float64 running sums matter: a float32 cumsum over 128,000 actions carries absolute errors around
1e-5, larger than the probability of a single rare action (about 6e-5 at the start, far less later).
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import warnings

import torch

from fgrpo_sim.sim.categorical.compiled import library_path, load_library  # noqa: F401 (library_path: tests)
from fgrpo_sim.validation import check_choice

SAMPLERS = ("auto", "native", "torch")
KERNEL_FILE = "kernel.c"

_LIB = None
_LIB_ERROR: str | None = None


def kernel_source() -> str:
    """The C source of the native kernels (package data, so a wheel carries it)."""
    from importlib.resources import files

    return files(__package__).joinpath(KERNEL_FILE).read_text(encoding="utf-8")


def _load_native():
    """Compile (once per user and machine, `compiled.py`'s trust rule) and load the C sampler; None if no compiler
    works."""
    global _LIB, _LIB_ERROR
    if _LIB is not None or _LIB_ERROR is not None:
        return _LIB
    try:
        lib = load_library(kernel_source())
        ptr, i64, u64, dbl, cint = ctypes.c_void_p, ctypes.c_int64, ctypes.c_uint64, ctypes.c_double, ctypes.c_int
        for name in ("sample_counts_f32", "sample_counts_f64"):
            fn = getattr(lib, name)
            fn.restype = cint
            fn.argtypes = [ptr, i64, i64, ptr, i64, ptr, ptr, u64, ptr, ptr]
        for name in ("refresh_f32", "refresh_f64"):
            fn = getattr(lib, name)
            fn.restype = None
            fn.argtypes = [ptr, ptr, i64, i64, ptr, i64, ptr, ptr, ptr, ptr, ptr]
        for name in ("sample_sparse_f32", "sample_sparse_f64"):
            fn = getattr(lib, name)
            fn.restype = cint
            fn.argtypes = [ptr, ptr, ptr, ptr, i64, i64, ptr, i64, ptr, ptr, u64, ptr, ptr, ptr, ptr, ptr]
        for name in ("fused_step_f32", "fused_step_f64"):
            fn = getattr(lib, name)
            fn.restype = None
            fn.argtypes = [ptr, ptr, ptr, ptr, i64, i64, ptr, i64, ptr, ptr, ptr, ptr, ptr, cint, cint] + [dbl] * 7 + [
                ptr, ptr, ptr, ptr, ptr]
        _LIB = lib
    except Exception as exc:  # noqa: BLE001 - any failure means: use the torch sampler
        _LIB_ERROR = f"{type(exc).__name__}: {exc}"
    return _LIB


#: the pointer arguments a kernel may get as NULL: fused_step's Adam moments (m, v), which SGD never reads
_MAY_BE_NULL = {"fused_step": (1, 2)}


class _NonNullKernel:
    """A C kernel that refuses None for its other arguments before the call: ctypes passes None as a NULL
    pointer, and a kernel that writes through NULL kills the process, which no caller can catch."""

    def __init__(self, fn, may_be_null: tuple[int, ...]):
        self.fn, self.may_be_null = fn, may_be_null

    def __call__(self, *args):
        for i, value in enumerate(args):
            if value is None and i not in self.may_be_null:
                raise ValueError(f"argument {i} of the native kernel {self.fn.__name__} must be a pointer or a "
                                 "number, got None")
        return self.fn(*args)


def _kernel(lib, name: str, f32: bool) -> _NonNullKernel:
    """The C kernel `name` of the float32 or float64 build, refusing a None argument (every Python caller's)."""
    return _NonNullKernel(getattr(lib, f"{name}_{'f32' if f32 else 'f64'}"), _MAY_BE_NULL.get(name, ()))


def native_available() -> bool:
    """True when the compiled CPU sampler can be used (a C compiler was found)."""
    return _load_native() is not None


def resolve_sampler(sampler: str, device: torch.device) -> str:
    """Map `auto` to `native` on CPU when it compiles, else `torch`; `native` on a GPU is an error."""
    check_choice("sampler", sampler, SAMPLERS)
    if sampler == "auto":
        if device.type == "cpu" and native_available():
            return "native"
        if device.type == "cpu":
            warnings.warn(f"native count sampler unavailable ({_LIB_ERROR}); using the slower torch sampler")
        return "torch"
    if sampler == "native":
        if device.type != "cpu":
            raise ValueError(f"backend (sampler) must be torch or auto on device {device}, got 'native' (CPU only)")
        if not native_available():
            raise ValueError(f"backend (sampler) 'native' needs a C compiler ({_LIB_ERROR}); use the torch backend")
    return sampler


def run_keys(seeds, salt: int = 0) -> torch.Tensor:
    """64-bit stream keys, one per run, from the runs' integer seeds (int64 tensor, CPU)."""
    keys = []
    for s in torch.as_tensor(seeds).reshape(-1).tolist():
        h = hashlib.blake2b(f"{int(s)}:{int(salt)}".encode(), digest_size=8).digest()
        keys.append(int.from_bytes(h, "little") & 0x7FFF_FFFF_FFFF_FFFF)
    return torch.tensor(keys, dtype=torch.int64)


def _balanced_row_groups(n_draws: list[int], actions: int, parts: int) -> list[list[int]]:
    """Split runs into `parts` groups of about equal cost (N + K / 8 per run), largest first."""
    cost = sorted(((n + actions // 8, r) for r, n in enumerate(n_draws)), reverse=True)
    groups: list[list[int]] = [[] for _ in range(parts)]
    load = [0] * parts
    for c, r in cost:
        i = load.index(min(load))
        groups[i].append(r)
        load[i] += c
    return [sorted(g) for g in groups if g]


STAT_NAMES = ("total", "correct_weight", "correct_draws", "distinct_correct_weight", "distinct_wrong_weight",
              "count_weight_correct", "count_weight_wrong", "distinct_hits")


def _run_parallel(fn, groups: list[torch.Tensor]) -> list:
    """fn over the row groups: the calling thread takes the first group, pool threads the rest."""
    if len(groups) == 1:
        return [fn(groups[0])]
    futures = [_thread_pool(len(groups) - 1).submit(fn, g) for g in groups[1:]]
    first = fn(groups[0])
    return [first] + [f.result() for f in futures]


def _check_native_tensor(name: str, t: torch.Tensor, like: torch.Tensor) -> None:
    if t.shape != like.shape or t.dtype != like.dtype or t.device.type != "cpu" or not t.is_contiguous():
        raise ValueError(f"{name} must be a contiguous CPU tensor shaped {tuple(like.shape)} of dtype {like.dtype}")


def sample_counts_native(weights: torch.Tensor, n_draws, keys, stream: int, *, num_correct: int | None = None,
                         out: torch.Tensor | None = None, stats_out: torch.Tensor | None = None,
                         threads: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(counts, stats): counts [R, K] (int64) ~ Multinomial(n_draws[r], weights[r] / sum).

    `weights` are non-negative and need not be normalised; `keys` (int64 [R]) and `stream` (e.g. the
    step) select the random numbers, so equal (key, stream) pairs give equal draws whatever the batch.
    `stats` [R, 8] float64 holds per-run sums the update needs, named in STAT_NAMES (actions below
    `num_correct` count as correct). Runs are shared among `threads` Python threads (default: torch's
    thread count); ctypes releases the GIL, and plain threads avoid a second OpenMP runtime next to torch's.
    """
    lib = _load_native()
    if lib is None:
        raise RuntimeError(f"native count sampler unavailable: {_LIB_ERROR}")
    if weights.device.type != "cpu" or weights.dim() != 2 or weights.dtype not in (torch.float32, torch.float64):
        raise ValueError("weights must be a 2-D float32/float64 CPU tensor")
    weights = weights.contiguous()
    runs, actions = weights.shape
    num_correct = actions if num_correct is None else int(num_correct)
    n_draws = torch.as_tensor(n_draws, dtype=torch.int64).reshape(-1).contiguous()
    keys = torch.as_tensor(keys, dtype=torch.int64).reshape(-1).contiguous()
    if n_draws.shape != (runs,) or keys.shape != (runs,):
        raise ValueError(f"n_draws and keys must be shaped [{runs}]")
    if bool((n_draws < 0).any()) or int(n_draws.max()) > 2**31 - 1:
        raise ValueError("n_draws must be in [0, 2147483647]")
    out = torch.empty(weights.shape, dtype=torch.int64) if out is None else out
    _check_native_tensor("out", out, torch.empty(weights.shape, dtype=torch.int64, device="meta"))
    stats = torch.empty((runs, len(STAT_NAMES)), dtype=torch.float64) if stats_out is None else stats_out
    fn = _kernel(lib, "sample_counts", weights.dtype == torch.float32)
    stream = ctypes.c_uint64(int(stream) & 0xFFFF_FFFF_FFFF_FFFF)
    threads = max(1, min(threads or torch.get_num_threads(), runs))
    groups = [torch.tensor(g, dtype=torch.int64) for g in _balanced_row_groups(n_draws.tolist(), actions, threads)]

    def work(rows: torch.Tensor) -> int:
        return fn(weights.data_ptr(), actions, num_correct, rows.data_ptr(), rows.numel(), n_draws.data_ptr(),
                  keys.data_ptr(), stream, out.data_ptr(), stats.data_ptr())

    if max(_run_parallel(work, groups)):
        raise ValueError("weights must have a positive finite sum in every run")
    return out, stats


SURROGATE_CODES = {"distinct": 0, "draws": 1, "logprob": 2}
OPTIMIZER_CODES = {"sgd": 0, "adam": 1, "adamw": 2}


_POOLS: dict = {}


def _thread_pool(n: int):
    from concurrent.futures import ThreadPoolExecutor

    if n not in _POOLS:
        _POOLS[n] = ThreadPoolExecutor(max_workers=n, thread_name_prefix="fgrpo-sampler")
    return _POOLS[n]


_GOLDEN = 0x9E3779B97F4A7C15  # splitmix64's increment
UNIFORM_BITS = 53  # a uniform is the top 53 bits of one splitmix64 output
_STREAM_MIX = 0xD1B54A32D192ED03  # the C kernel's seed_rng: key ^ (this * (stream + 1))


def _as_int64(x: int) -> int:
    """A 64-bit pattern as the signed int64 torch stores (torch integer arithmetic wraps modulo 2^64)."""
    x &= 0xFFFF_FFFF_FFFF_FFFF
    return x - (1 << 64) if x >> 63 else x


def _xor_shift_right_(z: torch.Tensor, k: int, scratch: torch.Tensor) -> torch.Tensor:
    """z ^= z >>> k in place (logical shift of int64 bit patterns: torch's >> is arithmetic on signed ints)."""
    torch.bitwise_right_shift(z, k, out=scratch)
    return z.bitwise_xor_(scratch.bitwise_and_((1 << (64 - k)) - 1))


def _splitmix_top53_(z: torch.Tensor, scratch: torch.Tensor) -> torch.Tensor:
    """The splitmix64 finaliser of every z (in place), then its top 53 bits as int64 in `scratch`: 13 passes."""
    _xor_shift_right_(z, 30, scratch).mul_(_as_int64(0xBF58476D1CE4E5B9))
    _xor_shift_right_(z, 27, scratch).mul_(_as_int64(0x94D049BB133111EB))
    _xor_shift_right_(z, 31, scratch)
    return torch.bitwise_right_shift(z, 11, out=scratch).bitwise_and_((1 << UNIFORM_BITS) - 1)


def stream_uniforms(keys: torch.Tensor, stream: int, n: int, device=None) -> torch.Tensor:
    """[R, n] float64 uniforms in [0, 1): draw j of run r is a pure function of (keys[r], stream, j).

    Counter-based: the splitmix64 sequence seeded, like the native kernel's generator, with
    key ^ (0xD1B54A32D192ED03 * (stream + 1)); output j is the splitmix64 finaliser of
    seed + (j + 1) * golden. No generator state is shared between runs, so a run's draws never depend
    on the other runs of a batch, and the same integers come out on every device. A dozen in-place
    integer passes over [R, n] (one scratch buffer), no Python loop over runs or draws.
    """
    keys = torch.as_tensor(keys, dtype=torch.int64).reshape(-1, 1).to(device)
    seeds = keys ^ _as_int64(_STREAM_MIX * (int(stream) + 1))
    z = torch.arange(1, n + 1, dtype=torch.int64, device=keys.device).mul_(_as_int64(_GOLDEN)) + seeds
    return _splitmix_top53_(z, torch.empty_like(z)).to(torch.float64).mul_(2.0**-UNIFORM_BITS)


# -- the torch sampler: inverse CDF in integers, all runs of a batch in one pass ----------------------------
#
# A draw's uniform is an integer m in [0, 2^53) (`_splitmix_top53_`), and a run's CDF is stored as the integers
# q_i = trunc(2^53 cumsum(w)_i / sum(w)) (float64 running sum; q_{K-1} = 2^53 exactly). The draw picks the
# first action with q_i > m, so action i has probability (q_i - q_{i-1}) / 2^53: the categorical law up to
# 2^-53 per action, the resolution of the uniforms themselves (the float version compared u * sum(w) with
# the running sum, to the same resolution). Integers allow one search for all runs whatever their N: row r's
# CDF is shifted by r * 2^53, so the rows of a batch form ONE sorted sequence, and draw (r, m) searches for
# r * 2^53 + m in it; that lands in row r (row r - 1 ends at r * 2^53 <= the value, row r at (r + 1) * 2^53 >
# it). With 64-bit integers that holds 1023 rows per sequence (MAX_SEARCH_ROWS); larger batches are searched
# in blocks of 1023 rows. One extra entry (int64 max) after the last row catches the draws of a row whose
# weights are not finite (they count in a spare slot, never out of bounds); the engine reports such a run
# at its next metric record.
MAX_SEARCH_ROWS = (1 << (63 - UNIFORM_BITS)) - 1
_INT64_MAX = (1 << 63) - 1


def integer_cdf_(cdf: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """`out` (int64 [R, K]) = trunc(2^53 cdf / cdf[:, -1]) from a float64 running sum `cdf` (overwritten)."""
    scale = cdf.narrow(1, cdf.shape[1] - 1, 1) * 2.0**-UNIFORM_BITS  # exact: a power of two
    return out.copy_(cdf.div_(scale))  # float -> int64 truncates; q_{K-1} = 2^53 exactly (x / x = 1)


class DrawPlan:
    """What stays fixed while a batch of runs draws N_r actions each per step: per-draw keys, counters, offsets.
    `dtype` is the counts' (an integer dtype: a float one stops counting at its mantissa, 2^24 for float32).

    The D = sum_r N_r draws of a step lie in one flat vector, run by run. Built once (host work); each step
    then costs the same few whole-tensor passes whatever the mix of N (`sample_into`).
    """

    def __init__(self, n_draws, keys, actions: int, device, dtype=torch.int64):
        n_list = [int(v) for v in torch.as_tensor(n_draws).reshape(-1).tolist()]
        keys = torch.as_tensor(keys, dtype=torch.int64).reshape(-1)
        if dtype.is_floating_point or dtype.itemsize < 4:
            raise ValueError(f"dtype (of the counts) must be int32 or int64, got {dtype}")
        if len(n_list) != keys.numel():
            raise ValueError(f"n_draws and keys must be shaped [{keys.numel()}]")
        if any(n < 0 or n > 2**31 - 1 for n in n_list):
            raise ValueError("n_draws must be in [0, 2147483647]")
        self.runs, self.actions, self.device = len(n_list), int(actions), torch.device(device)
        self.blocks = []
        for r0 in range(0, self.runs, MAX_SEARCH_ROWS):
            n = torch.tensor(n_list[r0:r0 + MAX_SEARCH_ROWS], dtype=torch.int64)
            rows = n.numel()
            row = torch.repeat_interleave(torch.arange(rows), n)
            index = torch.arange(row.numel()) - torch.repeat_interleave(n.cumsum(0) - n, n)  # j within its run
            sorted_rows = torch.full((rows * self.actions + 1,), _INT64_MAX, dtype=torch.int64, device=device)
            self.blocks.append({
                "first_row": r0, "rows": rows,
                "key": keys[r0:r0 + rows][row].to(device),
                "counter": (index + 1).mul_(_as_int64(_GOLDEN)).to(device),  # (j + 1) * golden, mod 2^64
                "offset": (row << UNIFORM_BITS).to(device),
                "row_offset": (torch.arange(rows) << UNIFORM_BITS).unsqueeze(1).to(device),
                "ones": torch.ones(row.numel(), dtype=dtype, device=device),
                "scratch": torch.empty(row.numel(), dtype=torch.int64, device=device),
                "sorted": sorted_rows,  # rows' integer CDFs + offsets, then the int64-max sentinel
                "sorted_rows": sorted_rows[:-1].view(rows, self.actions),
            })

    def sample_into(self, weights: torch.Tensor, stream_mix: torch.Tensor, counts_flat: torch.Tensor) -> None:
        """counts_flat[:R * K] (zeroed here) += Multinomial(N_r, weights[r] / sum) draws; counts_flat has R * K + 1
        entries (the last one the spare slot). `stream_mix` (int64 scalar tensor) = 0xD1B54A32D192ED03 *
        (stream + 1) mod 2^64, kept on the device so no step value is baked into a captured graph."""
        counts_flat.zero_()
        k = self.actions
        single = len(self.blocks) == 1  # one block unless a batch has more than 1023 runs: no slicing then
        for b in self.blocks:
            r0, rows = b["first_row"], b["rows"]
            rows_w = weights if single else weights.narrow(0, r0, rows)
            integer_cdf_(torch.cumsum(rows_w, 1, dtype=torch.float64), b["sorted_rows"])
            b["sorted_rows"].add_(b["row_offset"])
            z = torch.bitwise_xor(b["key"], stream_mix).add_(b["counter"])  # splitmix64 state of each draw
            m = _splitmix_top53_(z, b["scratch"]).add_(b["offset"])
            idx = torch.searchsorted(b["sorted"], m, right=True)
            (counts_flat if single else counts_flat.narrow(0, r0 * k, rows * k + 1)).index_add_(0, idx, b["ones"])


def stream_mix(stream: int) -> int:
    """The int64 that `DrawPlan.sample_into` takes for step/stream `stream`."""
    return _as_int64(_STREAM_MIX * (int(stream) + 1))


def sample_counts_torch(weights: torch.Tensor, n_draws, keys, stream: int,
                        out: torch.Tensor | None = None) -> torch.Tensor:
    """Same law as `sample_counts_native`, in torch on any device: integer inverse CDF, all runs at once.

    Run r's uniforms are `stream_uniforms(keys[r], stream, N_r)`'s integers, so equal (key, stream, weights)
    give equal counts whatever the batch (as in the native sampler, whose generator differs: the two backends
    draw different numbers from the same law). Counts are int64 (`out`, if given, an int64 tensor shaped like
    `weights`). This entry point checks its input (one host sync); the engine calls `DrawPlan.sample_into`,
    which does not.
    """
    if weights.dim() != 2 or weights.dtype not in (torch.float32, torch.float64):
        raise ValueError("weights must be a 2-D float32/float64 tensor")
    runs, actions = weights.shape
    if out is not None and (out.shape != weights.shape or out.dtype != torch.int64):
        raise ValueError(f"out must be an int64 tensor shaped {tuple(weights.shape)}")
    total = weights.sum(1, dtype=torch.float64)
    if not bool(torch.all((total > 0) & torch.isfinite(total))):
        raise ValueError("weights must have a positive finite sum in every run")
    n_list = torch.as_tensor(n_draws).reshape(-1).tolist()
    if len(n_list) == runs and len(set(n_list)) == 1 and 0 < int(n_list[0]) <= 2**31 - 1:
        return sample_counts_equal_n(weights.contiguous(), int(n_list[0]), keys, stream, out)
    plan = DrawPlan(n_draws, keys, actions, weights.device)
    if plan.runs != runs:
        raise ValueError(f"n_draws and keys must be shaped [{runs}]")
    flat = torch.empty(runs * actions + 1, dtype=torch.int64, device=weights.device)
    plan.sample_into(weights.contiguous(), torch.tensor(stream_mix(stream), device=weights.device), flat)
    counts = flat[:-1].view(runs, actions)
    return counts if out is None else out.copy_(counts)


def sample_counts_equal_n(weights: torch.Tensor, n: int, keys, stream: int,
                          out: torch.Tensor | None = None) -> torch.Tensor:
    """`sample_counts_torch` when every run draws the same N: a batched search per row ([R, N] uniforms against
    [R, K] integer CDFs), no per-draw bookkeeping and no 1023-row blocks. Same integers, same comparisons as
    `DrawPlan`, hence the same counts (tests/test_sim_torch_step.py). Checks no value (no host read): the caller
    passes weights with a positive finite sum per run (the group-size study's step calls it directly)."""
    runs, actions = weights.shape
    keys = torch.as_tensor(keys, dtype=torch.int64).reshape(-1).to(weights.device)
    if keys.numel() != runs:
        raise ValueError(f"n_draws and keys must be shaped [{runs}]")
    cdf = integer_cdf_(torch.cumsum(weights, 1, dtype=torch.float64),
                       torch.empty((runs, actions), dtype=torch.int64, device=weights.device))
    counter = torch.arange(1, n + 1, dtype=torch.int64, device=weights.device).mul_(_as_int64(_GOLDEN))
    z = (keys.unsqueeze(1) ^ stream_mix(stream)) + counter
    idx = torch.searchsorted(cdf, _splitmix_top53_(z, torch.empty_like(z)), right=True)
    counts = torch.zeros((runs, actions), dtype=torch.int64, device=weights.device) if out is None else out.zero_()
    return counts.scatter_add_(1, idx, torch.ones((), dtype=torch.int64, device=idx.device).expand_as(idx))
