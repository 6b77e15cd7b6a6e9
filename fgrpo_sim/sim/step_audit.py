"""What one simulator step costs a GPU, measured on any machine: top-level torch ops and host syncs.

A GPU step of a small simulator is bound by kernel launches and by the host waiting on the device, not by
arithmetic. Both can be counted on a CPU:

* ops: torch.profiler's top-level aten events (an aten event with no aten op above it; views such as `narrow`
  count, the ops a fused op runs internally do not, autograd's backward ops do). Each is a launch or more on a
  GPU, views excepted.
* syncs: the calls that make the host wait for a GPU (or copy to it from pageable memory, which waits too):
  `Tensor.item/tolist/numpy/cpu`, `bool/int/float(tensor)`, `torch.tensor/as_tensor` of Python data, and
  the aten ops whose output size depends on the data (`nonzero`, `masked_select`, `unique`, boolean-mask
  indexing). On a CPU run these cost nothing, so they are counted where they are called.

`audit(fn)` runs `fn()` once under both counters and returns {"ops": ..., "syncs": ..., "sync_sites": ...}.
`replay_signature(fn)` lists the (op, non-tensor arguments) of one call: two steps with equal signatures run
the same launches with the same constants, which is what a CUDA graph replay assumes.
"""

from __future__ import annotations

import collections
import contextlib
import traceback

import torch
from torch.utils._python_dispatch import TorchDispatchMode

#: Tensor methods that read device data on the host (each waits for the device).
HOST_READS = ("item", "tolist", "numpy", "cpu", "__bool__", "__int__", "__float__", "__index__")
#: Factories that copy Python data to the device (from pageable memory, so they wait as well).
HOST_COPIES = ("tensor", "as_tensor")
#: aten ops whose output shape depends on the values (the host must read a size back).
DATA_DEPENDENT_OPS = ("nonzero", "nonzero_static", "masked_select", "unique", "_unique", "_unique2",
                      "unique_consecutive", "unique_dim", "repeat_interleave", "bincount")


def _caller() -> str:
    """file:line of the first frame outside torch and this module (where the sync is written)."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if "/torch/" not in frame.filename and not frame.filename.endswith("step_audit.py"):
            return f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}"
    return "?"


class _SyncCounter(TorchDispatchMode):
    """Counts data-dependent aten ops (including boolean-mask indexing) seen at the Python dispatch key."""

    def __init__(self, sites: collections.Counter):
        super().__init__()
        self.sites = sites

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.__name__.split(".")[0]
        masked = name in ("index", "index_put", "index_put_", "_index_put_impl_") and any(
            isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in (args[1] if len(args) > 1 else ()) or ())
        if name in DATA_DEPENDENT_OPS or masked:
            self.sites[f"aten::{name} at {_caller()}"] += 1
        return func(*args, **kwargs)


@contextlib.contextmanager
def count_syncs():
    """Yields a Counter of sync sites ("what at file:line" -> calls) filled while the block runs."""
    sites: collections.Counter = collections.Counter()
    saved = {}
    inside = [False]  # a host read made inside another one (tolist -> item) counts once

    def wrap(owner, name, label):
        original = getattr(owner, name)
        saved[(owner, name)] = original

        def counted(*args, **kwargs):
            if name in HOST_COPIES and args and isinstance(args[0], torch.Tensor):
                return original(*args, **kwargs)  # tensor in, tensor out: no host data involved
            if inside[0]:
                return original(*args, **kwargs)
            sites[f"{label} at {_caller()}"] += 1
            inside[0] = True
            try:
                return original(*args, **kwargs)
            finally:
                inside[0] = False

        setattr(owner, name, counted)

    for name in HOST_READS:
        wrap(torch.Tensor, name, f"Tensor.{name}")
    for name in HOST_COPIES:
        wrap(torch, name, f"torch.{name}")
    try:
        with _SyncCounter(sites):
            yield sites
    finally:
        for (owner, name), original in saved.items():
            setattr(owner, name, original)


def count_top_level_ops(fn) -> tuple[int, collections.Counter]:
    """(number of top-level aten ops of one fn() call, Counter of their names)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    names: collections.Counter = collections.Counter()
    for evt in prof.events():
        if not evt.name.startswith("aten::"):
            continue
        parent = evt.cpu_parent  # wrappers that are not ops (autograd's evaluate_function, record_function) do
        while parent is not None and not parent.name.startswith("aten::"):  # not hide the ops inside them
            parent = parent.cpu_parent
        if parent is None:
            names[evt.name] += 1
    return sum(names.values()), names


def audit(fn) -> dict:
    """Ops and syncs of one fn() call: {"ops", "op_names", "syncs", "sync_sites"}."""
    ops, names = count_top_level_ops(fn)
    with count_syncs() as sites:
        fn()
    return {"ops": ops, "op_names": dict(names.most_common()), "syncs": sum(sites.values()),
            "sync_sites": dict(sites.most_common())}


class _Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}

        def constants(x):
            if isinstance(x, torch.Tensor):
                return ("tensor", tuple(x.shape), str(x.dtype))
            if isinstance(x, (list, tuple)):
                return tuple(constants(y) for y in x)
            return x

        self.calls.append((str(func), constants(args), tuple(sorted((k, constants(v)) for k, v in kwargs.items()))))
        return func(*args, **kwargs)


def replay_signature(fn) -> list:
    """[(op, its arguments with tensors replaced by (shape, dtype))] of one fn() call, in order."""
    with _Recorder() as rec:
        fn()
    return rec.calls
