"""Where a search's chunks run: in this process, on every local core, or on Ray.

Every executor maps the same chunks through ``evaluate.evaluate_chunk`` and returns the
outcomes ordered by deployment index, so the result does not depend on the executor, the
worker count or the order chunks finish in.

- ``serial``: in this process (small spaces, debugging).
- ``local``: a ``ProcessPoolExecutor`` with one process per core (started by ``fork`` when
  no other thread runs, else ``spawn``); the documents reach each worker once, through the
  pool's initializer.
- ``ray``: the documents are put into Ray's object store once; each task receives a
  reference and a worker process fetches the documents the first time it meets that
  reference, then keeps them for every later chunk.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from latencykernel.errors import LatencyKernelError
from latencykernel.search.evaluate import Documents, Job, Outcome
from latencykernel.search.space import Deployment

__all__ = ["EXECUTORS", "chunks_of", "map_chunks", "check_ray_address"]

EXECUTORS = ("serial", "local", "ray")
Progress = Callable[[int, int], None]

# one worker process's shipped state
_STATE: dict[str, Any] = {}


def chunks_of(items: Sequence[Deployment], workers: int, per_worker: int = 4, cap: int = 64) -> list[list[Deployment]]:
    """Consecutive chunks, about ``per_worker`` per worker, at most ``cap`` deployments each."""
    n = len(items)
    if n == 0:
        return []
    size = max(1, min(cap, -(-n // (max(workers, 1) * per_worker))))
    return [list(items[i : i + size]) for i in range(0, n, size)]


# ----------------------------------------------------------------------------- local


def _settle() -> None:
    """Move everything a worker holds once its documents are in (documents, kernels'
    cached inputs, imported modules) out of the garbage collector's sight (``gc.freeze``):
    a simulation allocates many short-lived containers, and each full collection would
    otherwise walk that whole long-lived heap again. Only in worker processes this
    package starts, never in a caller's."""
    import gc

    gc.collect()
    gc.freeze()


def _init_worker(docs: Documents, job: Job) -> None:
    _STATE.update(docs=docs, job=job)
    _settle()


def _local_chunk(chunk: list[Deployment]) -> list[Outcome]:
    job: Job = _STATE["job"]
    return [job(_STATE["docs"], d) for d in chunk]


def _start_method() -> str:
    """``fork`` where the platform has it and this process runs no other thread (the workers
    then inherit the documents and need not re-import the caller's script, so a plain script
    without a ``__main__`` guard works); else ``spawn`` (a fork beside running threads can
    copy a held lock into the child)."""
    import multiprocessing
    import threading

    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return "fork"
    return "spawn"


def _run_local(
    docs: Documents,
    chunks: list[list[Deployment]],
    job: Job,
    workers: int,
    progress: Progress | None,
) -> list[Outcome]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    total = sum(len(c) for c in chunks)
    done = 0
    out: list[Outcome] = []
    ctx = multiprocessing.get_context(_start_method())
    with ProcessPoolExecutor(
        max_workers=min(workers, len(chunks)),
        mp_context=ctx,
        initializer=_init_worker,
        initargs=(docs, job),
    ) as pool:
        futures = {pool.submit(_local_chunk, c): len(c) for c in chunks}
        for f in as_completed(futures):
            out.extend(f.result())
            done += futures[f]
            if progress is not None:
                progress(done, total)
    return out


# ----------------------------------------------------------------------------- ray

CONNECT_TIMEOUT_S = 5.0  # how long a Ray address may take to answer before it is called unreachable


def check_ray_address(address: str, setting: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Refuse a Ray address that does not answer within ``timeout_s``: its host must resolve
    and its port accept a TCP connection. ``ray.init`` itself retries an unreachable GCS for
    a minute or more, which looks like a hang. ``"auto"`` (the cluster this machine belongs
    to) is left to Ray, which answers at once when there is none."""
    import socket
    import threading

    if address == "auto":
        return
    rest = address.split("://", 1)[1] if "://" in address else address
    host, sep, port_s = rest.rstrip("/").rpartition(":")
    if not sep or not host or not port_s.isdigit():
        raise LatencyKernelError(f"{setting}: cannot reach {address} (write HOST:PORT, ray://HOST:PORT or auto)")
    host = host.strip("[]")
    found: list[BaseException | None] = []

    def connect() -> None:
        try:
            socket.create_connection((host, int(port_s)), timeout=timeout_s).close()
            found.append(None)
        except (OSError, ValueError, OverflowError) as e:
            found.append(e)

    # the name lookup has no timeout of its own: bound the whole connect by a daemon thread
    t = threading.Thread(target=connect, daemon=True)
    t.start()
    t.join(timeout_s + 0.5)
    if not found:
        raise LatencyKernelError(f"{setting}: cannot reach {address} (no answer within {timeout_s:g} s)")
    if found[0] is not None:
        e = found[0]
        why = getattr(e, "strerror", None) or str(e) or type(e).__name__
        raise LatencyKernelError(f"{setting}: cannot reach {address} ({why})")


def _ray_chunk(ref_box: list[Any], chunk: list[Deployment], job: Job) -> list[Outcome]:
    """One Ray task. ``ref_box`` holds the documents' object reference inside a list, so Ray
    does not fetch them for every task: the worker fetches them once and keeps them."""
    import ray

    ref = ref_box[0]
    key = ref.hex()
    if _STATE.get("ray_key") != key:
        _STATE.update(ray_key=key, ray_docs=ray.get(ref))
        _settle()
    docs = _STATE["ray_docs"]
    return [job(docs, d) for d in chunk]


def _run_ray(
    docs: Documents,
    deps: Sequence[Deployment],
    job: Job,
    workers: int | None,
    address: str | None,
    progress: Progress | None,
) -> list[Outcome]:
    try:
        import ray
    except ImportError:
        raise LatencyKernelError(
            "executor 'ray' needs Ray: pip install 'latencykernel[ray]' (or run with executor='local')"
        ) from None
    started = False
    if not ray.is_initialized():
        # address None starts a local instance; "auto", "host:port" or "ray://host:10001" joins one
        kwargs: dict[str, Any] = {}
        if address is None:
            # a local instance's workers import the very latencykernel this process runs
            here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
            kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": path}}
        if address is not None:
            check_ray_address(address, "ray_address")
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, **kwargs)
        except (ConnectionError, RuntimeError, ValueError, TimeoutError) as e:
            where = "a local Ray instance" if address is None else address
            raise LatencyKernelError(f"ray_address: cannot start or join {where} ({e})") from None
        started = True
    try:
        n = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        ref = ray.put(docs)
        task = ray.remote(num_cpus=1)(_ray_chunk)
        pending = {task.remote([ref], c, job): len(c) for c in chunks_of(deps, n)}
        total = len(deps)
        done = 0
        out: list[Outcome] = []
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for r in ready:
                out.extend(ray.get(r))
                done += pending.pop(r)
            if progress is not None:
                progress(done, total)
        return out
    finally:
        if started:
            ray.shutdown()


# ----------------------------------------------------------------------------- entry


def map_chunks(
    executor: str,
    docs: Documents,
    deps: Sequence[Deployment],
    job: Job,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    progress: Progress | None = None,
) -> list[Outcome]:
    """``job(docs, dep)`` for every deployment on ``executor``; outcomes ordered by deployment index."""
    if executor not in EXECUTORS:
        raise LatencyKernelError(f"executor: {executor!r} is not one of {', '.join(EXECUTORS)}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise LatencyKernelError(f"workers: expected a whole number of at least 1, got {workers!r}")
    if executor == "serial":
        out: list[Outcome] = []
        for d in deps:
            out.append(job(docs, d))
            if progress is not None:
                progress(len(out), len(deps))
    elif executor == "local":
        n = workers or os.cpu_count() or 1
        out = _run_local(docs, chunks_of(deps, n), job, n, progress) if deps else []
    else:
        out = _run_ray(docs, deps, job, workers, ray_address, progress) if deps else []
    out.sort(key=lambda o: o[1])
    return out
