"""Where a simulation study's chunks run (issue 47): in this process, one after another (`local`), or as Ray
tasks (`ray`, the `cluster` extra) on a local Ray or an existing cluster.

A study hands `run_on_ray` a module-level function and each chunk's arguments; the driver gets every chunk's
result back through `on_result(index, result)` as it arrives and alone writes the output, under the caller's
lock and atomic writes, exactly as a local run does. Every chunk draws from its own seeds (the categorical
runs' keys, the group-size study's row keys, a population variant's seed), so a chunk's numbers do not depend
on which worker runs it, in which order chunks finish, or on a retry; callers put finished chunks in their
local order before writing, so the table equals the local run's bit for bit. A worker runs torch with the
driver's thread count: a CPU reduction's summation order follows the thread count.

A worker that dies mid-chunk (killed, out of memory, a lost node) has its chunk rerun by Ray (`MAX_RETRIES`);
its result reaches the driver once, from the attempt that finished. An exception raised by the chunk itself
is not retried: it is the same error on every attempt, and the driver raises it as the local run would.
"""

from __future__ import annotations

import os
import socket
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from fgrpo_sim.validation import check_choice, check_integer

EXECUTORS = ("local", "ray")
#: reruns of a chunk whose worker process died (an exception raised by the chunk is never rerun)
MAX_RETRIES = 3
#: test hook (tests/test_ray_executor.py): a file path; the first task to find it missing creates it and kills
#: its own worker, so the test sees Ray rerun a chunk whose worker died mid-task
KILL_ONCE_ENV = "FGRPO_RAY_KILL_ONCE"
#: seconds to wait for a cluster address to accept a connection before calling it unreachable
CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Executor:
    """`kind` local or ray; for ray, `address` (an existing cluster's, else RAY_ADDRESS, else a local Ray is
    started) and `cpus` (the local Ray's CPUs, default all; one chunk per CPU at a time)."""

    kind: str = "local"
    address: str | None = None
    cpus: int | None = None

    def __post_init__(self) -> None:
        check_choice("executor", self.kind, EXECUTORS)
        if self.cpus is not None:
            check_integer("ray_cpus", self.cpus, 1, 100_000)
        if self.kind == "local" and (self.address is not None or self.cpus is not None):
            raise ValueError("ray_address and ray_cpus need executor 'ray', got executor 'local'")

    @property
    def is_ray(self) -> bool:
        return self.kind == "ray"


LOCAL = Executor()


def cluster_address(executor: Executor) -> str | None:
    """The cluster to join: `executor.address`, else RAY_ADDRESS, else None (start a local Ray)."""
    return executor.address or os.environ.get("RAY_ADDRESS") or None


def connect(executor: Executor) -> bool:
    """Join (or start) Ray unless this process already has; True when this call started the session."""
    from fgrpo_sim.extras import require

    require("ray")  # Ray missing: one line naming the cluster extra (cli.main)
    import logging

    import ray

    address = cluster_address(executor)
    name = "--ray-address" if executor.address else "RAY_ADDRESS"
    if address is not None:
        if executor.cpus is not None:  # a cluster has its own CPUs: the cap would be dropped in silence
            raise ValueError(f"ray_cpus (--ray-cpus) sizes a local Ray, but {name} names a cluster ({address}); "
                             "give only one")
        _check_reachable(address, name)
    if ray.is_initialized():  # a session this process holds (a test's, a notebook's): the chunks join it
        return False
    quiet = dict(logging_level=logging.ERROR, log_to_driver=False, configure_logging=True)
    if address is None:
        ray.init(num_cpus=executor.cpus or os.cpu_count(), include_dashboard=False, **quiet)
        return True
    try:
        ray.init(address=address, **quiet)
    except (ConnectionError, TimeoutError, RuntimeError) as exc:  # Ray's own words, on one line
        raise ValueError(f"{name} {address}: cannot join the Ray cluster ({' '.join(str(exc).split())[:300]})") from None
    return True


def _check_reachable(address: str, name: str) -> None:
    """A HOST:PORT (or ray://HOST:PORT) that accepts no connection fails at once, not after Ray's long retries."""
    if address == "auto" or address.startswith("local"):
        return
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"{name} must be HOST:PORT, ray://HOST:PORT or auto, got {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ValueError(f"{name} {address}: unreachable ({exc.strerror or exc}); start the head with "
                         "`ray start --head` and pass the address it prints") from None


def placement(device: str) -> tuple[str, float]:
    """(the device every task runs on, GPUs per task): one GPU per task when the device is cuda, or auto on a
    cluster with GPUs; else CPU. A cuda device on a cluster without GPUs is an error naming the device."""
    import ray

    gpus = float(ray.cluster_resources().get("GPU", 0))
    if device.startswith("cuda"):
        if gpus < 1:
            raise ValueError(f"--device {device}: the Ray cluster has no GPU (resources: "
                             f"{_resources(ray.cluster_resources())}); use --device cpu or add GPU nodes")
        return device, 1.0
    if device == "auto":
        return ("cuda", 1.0) if gpus >= 1 else ("cpu", 0.0)
    return device, 0.0


def _resources(resources: dict) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in sorted(resources.items()) if k in ("CPU", "GPU", "memory")) or "none"


def _run_chunk(fn: Callable, args: tuple, threads: int, kill_marker: str | None):
    """One chunk in a worker, with the driver's torch thread count."""
    import torch

    if kill_marker and not os.path.exists(kill_marker):
        with open(kill_marker, "w"):
            pass
        os._exit(1)  # the worker dies mid-task: Ray reruns the chunk
    torch.set_num_threads(threads)
    return fn(*args)


def run_on_ray(fn: Callable, chunk_args: Sequence[tuple], on_result: Callable[[int, Any], None], *,
               executor: Executor, gpus: float = 0.0, progress: bool = False, desc: str = "chunks") -> None:
    """fn(*args) for every chunk as one Ray task each (the session joined or started by `connect`); calls
    on_result(index, result) in the driver as each finishes. On an error or Ctrl-C the unfinished tasks are
    cancelled and what on_result already kept stays kept."""
    import ray
    import torch
    from ray.exceptions import RayTaskError, WorkerCrashedError

    from fgrpo_sim.progress import bar as progress_bar

    task = ray.remote(_run_chunk).options(num_cpus=0 if gpus else 1, num_gpus=gpus, max_retries=MAX_RETRIES,
                                          retry_exceptions=False)
    kill = os.environ.get(KILL_ONCE_ENV) or None
    fn_ref = ray.put(fn)
    pending = {task.remote(fn_ref, tuple(args), torch.get_num_threads(), kill): i for i, args in enumerate(chunk_args)}
    bar = progress_bar(total=len(pending), progress=progress and bool(pending), desc=desc, unit="task", leave=False)
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                index = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except RayTaskError as exc:  # the chunk's own error (bad settings, a diverged run): as locally
                    cause = getattr(exc, "cause", None)
                    raise (cause if isinstance(cause, Exception) else ValueError(" ".join(str(exc).split()))) from None
                except WorkerCrashedError:
                    raise ValueError(f"chunk {index + 1} of {len(chunk_args)}: its Ray worker died "
                                     f"{MAX_RETRIES + 1} times; see the Ray logs") from None
                on_result(index, result)
                bar.update(1)
    finally:
        bar.close()
        for ref in pending:
            ray.cancel(ref, force=True)


def disconnect(started: bool) -> None:
    """Shut down the Ray session this process started (a joined cluster keeps running)."""
    if started:
        import ray

        ray.shutdown()


@contextmanager
def ray_session(executor: Executor, device: str):
    """Joined (or started) Ray for one study: yields (device, gpus per task) from `placement`; a Ray this
    process started is shut down after."""
    started = connect(executor)
    try:
        yield placement(device)
    finally:
        disconnect(started)
