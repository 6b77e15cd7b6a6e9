"""A stand-in `ray` module for tests of fgrpo_sim/sim/executor.py: no cluster is started.

Importable (and found by importlib as the cluster extra) through monkeypatch; it records every call. Shared by
tests/test_sim_kills_chk.py and tests/test_sim_mutation_kills.py.
"""

from __future__ import annotations

import importlib.machinery
import sys
import types


class _Ref:
    """A stand-in object ref: the task's result or the exception it raises when read."""

    def __init__(self, index, result=None, error=None):
        self.index, self.result, self.error = index, result, error

    def __repr__(self):
        return f"ref{self.index}"


def stand_in_ray(monkeypatch):
    """A stand-in `ray` (importable, found by importlib as the cluster extra) that records every call. Tasks run
    when submitted; `ray.wait` hands back the first pending ref; `ray.fail[index]` makes that chunk's ref raise."""
    ray = types.ModuleType("ray")
    ray.__spec__ = importlib.machinery.ModuleSpec("ray", None)
    exceptions = types.ModuleType("ray.exceptions")
    exceptions.__spec__ = importlib.machinery.ModuleSpec("ray.exceptions", None)

    class RayTaskError(Exception):
        pass

    exceptions.RayTaskError = RayTaskError
    exceptions.WorkerCrashedError = type("WorkerCrashedError", (Exception,), {})
    ray.exceptions = exceptions
    ray.calls, ray.fail, ray.cancelled, ray.submitted = [], {}, [], []
    ray.initialized = False
    ray.resources = {"CPU": 4.0}

    class Task:
        def __init__(self, fn):
            self.fn = fn

        def options(self, **kwargs):
            ray.options = kwargs
            return self

        def remote(self, *args):
            index = len(ray.submitted)
            ray.submitted.append(args)
            if index in ray.fail:
                return _Ref(index, error=ray.fail[index])
            return _Ref(index, result=self.fn(*args))

    def get(ref):
        if ref.error is not None:
            raise ref.error
        return ref.result

    def init(**kwargs):
        ray.calls.append(("init", kwargs))
        if ray.init_error is not None:
            raise ray.init_error

    ray.init_error = None
    ray.remote = Task
    ray.put = lambda value: value
    def wait(refs, num_returns):
        if num_returns > len(refs):  # Ray's own rule: never more returns than refs
            raise ValueError("num_returns cannot be greater than the number of ObjectRefs")
        return refs[:num_returns], refs[num_returns:]

    ray.wait = wait
    ray.get = get
    ray.cancel = lambda ref, force: ray.cancelled.append((ref.index, force))
    ray.init = init
    ray.is_initialized = lambda: ray.initialized
    ray.shutdown = lambda: ray.calls.append(("shutdown", {}))
    ray.cluster_resources = lambda: dict(ray.resources)
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.setitem(sys.modules, "ray.exceptions", exceptions)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("FGRPO_RAY_KILL_ONCE", raising=False)
    return ray
