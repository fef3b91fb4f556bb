"""What one worker does: build each deployment in memory from shipped documents and
simulate its service at every load point.

The main process reads every document once (``prepare``) and ships the ``Documents`` to each
worker once; a worker then turns a ``Deployment`` spec into ``Inputs`` that reuse those
documents (only the small scenario and deployment documents are new), builds the kernel with
``latencykernel.kernel.new`` (the same validation and refusals as a file), and simulates it.
Everything a worker returns is plain data, so results equal whichever process made them.
"""

from __future__ import annotations

import functools
import importlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from latencykernel.documents.common import MEMORY, validate
from latencykernel.documents.scenario import Deployment as DeploymentDoc
from latencykernel.documents.scenario import Scenario
from latencykernel.errors import LatencyKernelError, RefusedError
from latencykernel.inputs import Inputs, build_inputs
from latencykernel.kernel import Kernel, new
from latencykernel.search.space import Deployment, Layout, Space

__all__ = [
    "LoadPoint",
    "Documents",
    "prepare",
    "kernels_for",
    "evaluate_chunk",
    "Job",
    "EvaluateJob",
    "SizeJob",
    "Outcome",
    "FIGURE_KEYS",
    "serving_simulate",
    "resolve_simulator",
]

PD_CONNECTOR = "NixlConnector"  # the connector a built disaggregated deployment names


@dataclass(frozen=True, slots=True)
class LoadPoint:
    """One load a deployment is simulated at: a closed loop of ``concurrency`` clients, or
    an open loop at ``request_rate`` requests/s; ``num_prompts`` None = serving's default."""

    isl: int
    osl: int
    concurrency: int | None = None
    request_rate: float | None = None
    num_prompts: int | None = None

    def label(self) -> str:
        if self.concurrency is not None:
            return f"c={self.concurrency}"
        return f"rate={self.request_rate:g}/s"


@dataclass
class Documents:
    """Every document a search builds from, read once: per chip, the inputs of a one-GPU
    deployment (graph, chip, storage, coefficient sets, engine rules) and, when a layout may
    span nodes, the same with the fabric loaded."""

    model: str
    base: dict[str, Inputs]
    with_fabric: dict[str, Inputs] = field(default_factory=dict)

    def files(self) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for hw, inp in self.base.items():
            fl = {k: v for k, v in inp.files.items() if k not in ("scenario", "deployment")}
            if hw in self.with_fabric:
                fl["fabric"] = self.with_fabric[hw].files.get("fabric", MEMORY)
            out[hw] = fl
        return out


def prepare(model: str, space: Space, repos: Any = None) -> Documents:
    """Read the documents ``space`` needs for ``model``; a bad model or chip name is an error
    here (before any work is shipped)."""
    base: dict[str, Inputs] = {}
    fab: dict[str, Inputs] = {}
    for hw in dict.fromkeys(space.hardware):
        inp = build_inputs(model, hw, repos=repos)
        base[hw] = inp
        if space.fabric is not None:
            fab[hw] = build_inputs(model, hw, nodes=2, fabric=space.fabric, repos=repos)
    return Documents(model, base, fab)


# ----------------------------------------------------------------------------- building


# The shipped documents are read-only and never handed to a caller: where ``Inputs`` can say
# so (``_shared``, from the house work on shared documents), ``new`` keeps them as they are
# instead of copying them on every build; elsewhere it copies, with the same result.
_SHARED: dict[str, Any] = {"_shared": True} if "_shared" in getattr(Inputs, "__dataclass_fields__", {}) else {}


def _pool(role: str, layout: Layout, gpn: int, engine: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": role,
        "nodes": max(1, math.ceil(layout.gpus / gpn)),
        "parallel": {"tp": layout.tp, "pp": 1, "dp": layout.dp, "enable_expert_parallel": layout.expert_parallel},
        "engine": dict(engine),
    }


def kernels_for(docs: Documents, dep: Deployment) -> tuple[Kernel, ...]:
    """The kernel of a colocated deployment, or (prefill, decode) kernels of a disaggregated
    one, built in memory; raises the kernel's ``RefusedError``/``DocumentError`` when the
    deployment would not start."""
    base = docs.base[dep.hardware]
    gpn = base.scenario.cluster.gpus_per_node
    engine = dep.engine()
    if dep.prefill is None:
        pools = [_pool("colocated", dep.layout, gpn, engine)]
    else:
        pools = [_pool("prefill", dep.prefill, gpn, engine), _pool("decode", dep.layout, gpn, engine)]
    nodes = sum(p["nodes"] for p in pools)
    if nodes > 1:
        src = docs.with_fabric.get(dep.hardware)
        if src is None:
            raise RefusedError(
                f"{dep.label()} spans {nodes} nodes of {gpn} GPUs but the space names no fabric; "
                "set the space's fabric key (e.g. ib-400g)",
                setting="fabric",
                value=None,
            )
    else:
        src = base
    sc = src.scenario.model_dump(by_alias=True, exclude_none=True)
    sc["cluster"]["nodes"] = nodes
    scenario = validate(Scenario, sc, MEMORY)
    doc: dict[str, Any] = {"kind": "Deployment", "name": sc["name"], "pools": pools}
    if dep.prefill is not None:
        doc["pd_transfer"] = {"connector": PD_CONNECTOR}
    deployment = validate(DeploymentDoc, doc, MEMORY)
    out = []
    for i in range(len(pools)):
        inp = Inputs(
            scenario,
            deployment,
            i,
            src.model,
            src.chip,
            src.fabric,
            src.storage,
            src.coefficients,
            src.rules,
            {k: v for k, v in src.files.items() if k not in ("scenario", "deployment")},
            src.checkpoint,
            **_SHARED,
        )
        out.append(new(inp))
    return tuple(out)


# ----------------------------------------------------------------------------- simulating

STATS = ("mean", "median", "p90", "p95", "p99")
FIGURE_KEYS: tuple[str, ...] = tuple(f"{m}_{s}_s" for m in ("ttft", "tpot", "itl", "e2el") for s in STATS) + (
    "request_throughput_per_s",
    "output_tokens_per_s",
    "tokens_per_s_per_gpu",
    "tokens_per_s_per_user",
)

Simulator = Callable[[Sequence[Kernel], Deployment, LoadPoint, int], Any]


POISSON_PROMPTS = 1000  # an open-loop point's requests when the workload gives no num_prompts (serving.estimate's)


def _transfer(decode: Kernel) -> Callable[[int], float]:
    """Seconds to move one request's KV from the prefill pool to the decode pool: the
    kernel's ``pd_transfer_time`` between two nodes of one rack (``kernels_for`` gives each
    pool its own nodes): NVLink where the rack is one NVLink domain (NVL72), else the fabric."""
    from latencykernel.kernel import Placement

    return functools.partial(_pd_time, decode, Placement(node=0, rack=0), Placement(node=1, rack=0))


def _pd_time(k: Kernel, src: Any, dst: Any, tokens: int) -> float:
    return k.pd_transfer_time(tokens, src, dst)


def serving_simulate(kernels: Sequence[Kernel], dep: Deployment, load: LoadPoint, seed: int) -> Any:
    """The default simulator: ``latencykernel.serving.simulate`` at a ``ClosedLoop`` or
    ``Poisson`` load, on the colocated kernel, or on ``serving.Disaggregated(prefill, decode,
    x, y)`` with the kernel's KV transfer time for a disaggregated deployment."""
    from latencykernel import serving

    wl: Any
    if load.concurrency is not None:
        wl = serving.ClosedLoop(load.concurrency, load.isl, load.osl, num_prompts=load.num_prompts)
    else:
        n = POISSON_PROMPTS if load.num_prompts is None else load.num_prompts
        wl = serving.Poisson(float(load.request_rate or 0.0), load.isl, load.osl, n)
    if dep.prefill is None:
        return serving.simulate(kernels[0], wl, seed=seed)
    pd = serving.Disaggregated(kernels[0], kernels[1], dep.prefill_workers, dep.decode_workers, _transfer(kernels[1]))
    return serving.simulate(pd, wl, seed=seed)


def resolve_simulator(sim: str | Simulator | None) -> Simulator:
    """``None`` → ``serving_simulate``; ``"module:function"`` → that function."""
    if sim is None:
        return serving_simulate
    if isinstance(sim, str):
        mod, _, name = sim.partition(":")
        if not name:
            raise LatencyKernelError(f"simulator: {sim!r} is not 'module:function'")
        try:
            fn = getattr(importlib.import_module(mod), name)
        except (ImportError, AttributeError) as e:
            raise LatencyKernelError(f"simulator: {sim!r} cannot be imported ({e})") from None
        if not callable(fn):
            raise LatencyKernelError(f"simulator: {sim!r} is not a function (got {type(fn).__name__})")
        return fn  # type: ignore[no-any-return]
    if not callable(sim):
        raise LatencyKernelError(
            f"simulator: expected 'module:function' or a callable (kernels, deployment, load_point, seed), got {sim!r}"
        )
    return sim


def figures(result: Any, gpus: int) -> dict[str, float]:
    """The figures a search keeps from a ``ServingResult``; per-GPU and per-user rates are
    computed here so colocated and disaggregated deployments count the same way:
    tokens/s per GPU = output tokens/s ÷ every GPU of the deployment; tokens/s per user =
    1 ÷ mean TPOT (the decode speed one request sees, as aiconfigurator's tokens/s/user)."""
    out: dict[str, float] = {}
    for m in ("ttft", "tpot", "itl", "e2el"):
        d = getattr(result, m)
        for s in STATS:
            out[f"{m}_{s}_s"] = float(getattr(d, s))
    out["request_throughput_per_s"] = float(result.request_throughput)
    out["output_tokens_per_s"] = float(result.output_throughput)
    out["tokens_per_s_per_gpu"] = float(result.output_throughput) / gpus
    tpot = out["tpot_mean_s"]
    out["tokens_per_s_per_user"] = 1.0 / tpot if tpot > 0 else 0.0
    return out


# An outcome, plain data:
#   ("refused", index, setting, message)                     the deployment would not start
#   ("built", index, (evidenced, total, assumed names), rows) rows per load point, each
#       ("ok", figures, saturated, assumptions) or ("refused", setting, message), where
#       assumptions are the simulation's own (name, value, reason) defaults (``res.assumptions``)
Outcome = tuple[Any, ...]


def _setting(e: LatencyKernelError) -> str:
    return str(getattr(e, "setting", "") or getattr(e, "key", "") or type(e).__name__)


# Rows of the default simulation by (kernel fingerprint, GPUs, load, seed), per process: a
# deployment that resolves exactly as one simulated before (``Kernel.fingerprint``) gets that
# one's rows, which the simulation would give it again (it is deterministic). Bounded.
_ROWS: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_ROWS_MAX = 1 << 16


def evaluate_one(docs: Documents, dep: Deployment, loads: Sequence[LoadPoint], seed: int, sim: Simulator) -> Outcome:
    try:
        kernels = kernels_for(docs, dep)
    except LatencyKernelError as e:
        return ("refused", dep.index, _setting(e), str(e))
    evidence = _evidence(kernels)
    fp = kernels[0].fingerprint() if sim is serving_simulate and dep.prefill is None else None
    bounds = _Bounds.of(kernels[0]) if fp is not None else None
    rows: list[tuple[Any, ...]] = []
    for load in loads:
        key = (fp, dep.gpus, load, seed)
        if fp is not None and key in _ROWS:
            seen = _ROWS[key]
            rows.append((seen[0], dict(seen[1]), *seen[2:]) if seen[0] == "ok" else seen)  # figures: a copy
            continue
        lkey = bounds.key(dep.gpus, load, seed) if bounds is not None else None
        if bounds is not None and lkey is not None and lkey in _ROWS:
            seen = _ROWS[lkey]  # an "ok" row of a deployment that differs only in limits this load never reaches
            rows.append(("ok", dict(seen[1]), seen[2], bounds.own_notes(seen[3])))
            continue
        try:
            res = sim(kernels, dep, load, seed)
        except LatencyKernelError as e:
            row: tuple[Any, ...] = ("refused", _setting(e), str(e))
        else:
            row = ("ok", figures(res, dep.gpus), bool(getattr(res, "saturated", False)), run_assumptions(res))
        if fp is not None:
            if len(_ROWS) >= _ROWS_MAX:
                _ROWS.clear()
            _ROWS[key] = row
            if lkey is not None and row[0] == "ok":
                _ROWS[lkey] = row
        rows.append(row)
    return ("built", dep.index, evidence, rows)


# The engine settings whose resolved values the simulation records as assumptions and a
# bounded load may never reach (``_Bounds``): the rows of one deployment serve another's with
# these notes written with the other's own values.
_BOUNDED = ("max_num_seqs", "max_num_batched_tokens", "num_gpu_blocks")


@dataclass(frozen=True)
class _Bounds:
    """What the default simulation reads of a kernel, less what a closed loop of ``c``
    clients provably never reaches, as a key: two deployments with equal keys give the
    same simulation, step for step. A closed loop holds at most c requests in flight, so
    on any rank (vLLM's scheduler, ``serving/scheduler.py``):

    - ``max_num_seqs`` >= c never stops an admission (running <= in flight <= c);
    - the KV cache never runs short when each rank's usable blocks hold c requests at
      their longest (isl + osl tokens, plus 2 x (1 + k) for drafts and lookahead), so no
      admission waits on blocks and nothing is preempted;
    - then a step schedules at most c x max(isl, 1 + k) tokens (a whole prompt, or a
      decode of 1 + k), so a ``max_num_batched_tokens`` above that never caps a chunk;
    - then (and with no chunk cap below isl) a step without a prefill schedules at most
      c x (1 + k) tokens and one with a prefill at least isl, so every CUDA-graph capture
      ceiling in [c x (1 + k), isl) puts every step on the same side (``fingerprint_parts``).

    Each limit stays in the key at its value where its condition fails. Open-loop loads
    are not bounded: only ``Kernel.fingerprint`` is shared."""

    base: str
    capture: int
    max_num_seqs: int
    max_num_batched_tokens: int
    usable_blocks: int
    num_gpu_blocks: int
    block_size: int
    spec: int
    chunk_cap: int
    notes: tuple[tuple[str, str, str], ...]

    @classmethod
    def of(cls, kernel: Kernel) -> _Bounds:
        from latencykernel.serving.config import resolve_engine

        base, capture = kernel.fingerprint_parts()
        cfg, notes = resolve_engine(kernel, {})
        return cls(
            base,
            capture,
            cfg.max_num_seqs,
            cfg.max_num_batched_tokens,
            cfg.usable_blocks,
            cfg.num_gpu_blocks,
            cfg.block_size,
            cfg.num_speculative_tokens,
            cfg.long_prefill_token_threshold,
            tuple(n for n in notes if n[0] in _BOUNDED),
        )

    def key(self, gpus: int, load: LoadPoint, seed: int) -> tuple[Any, ...] | None:
        c = load.concurrency
        if c is None:
            return None
        w = 1 + self.spec
        mns: Any = "at least c" if self.max_num_seqs >= c else self.max_num_seqs
        kv_ok = self.usable_blocks >= c * -(-(load.isl + load.osl + 2 * w) // self.block_size)
        budget_ok = kv_ok and self.max_num_batched_tokens > c * max(load.isl, w)
        whole = self.chunk_cap == 0 or self.chunk_cap >= load.isl
        cap_ok = budget_ok and whole and c * w <= self.capture < load.isl
        return (
            "bounded",
            self.base,
            "between" if cap_ok else self.capture,
            mns,
            "above every step" if budget_ok else self.max_num_batched_tokens,
            "ample" if kv_ok else self.num_gpu_blocks,
            gpus,
            load,
            seed,
        )

    def own_notes(self, notes: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
        """``notes`` (a simulation's assumptions, as ``run_assumptions`` gives them) with the
        bounded settings' notes this kernel's own."""
        mine = {n[0]: tuple(str(x) for x in n) for n in self.notes}
        return tuple(mine.get(n[0], n) if n else n for n in notes)


def run_assumptions(result: Any) -> tuple[tuple[str, ...], ...]:
    """The defaults a simulation took (``ServingResult.assumptions``: name, value, reason) as
    plain data; a simulator whose result has none gives ()."""
    return tuple(tuple(str(x) for x in a) for a in getattr(result, "assumptions", None) or ())


def _evidence(kernels: Sequence[Kernel]) -> tuple[int, int, tuple[str, ...]]:
    """(values on evidence, all values, assumed value names) over the deployment's kernels."""
    measured = total = 0
    assumed: set[str] = set()
    for k in kernels:
        m, t, a = k.evidence()
        measured += m
        total += t
        assumed.update(a)
    return measured, total, tuple(sorted(assumed))


class Job:
    """What a worker does with one deployment; picklable (the simulator travels as given,
    a ``module:function`` path or a picklable callable, and is resolved in the worker)."""

    def __call__(self, docs: Documents, dep: Deployment) -> Outcome:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class EvaluateJob(Job):
    """Build ``dep`` and simulate it at every load point."""

    loads: tuple[LoadPoint, ...]
    seed: int
    simulator: Any = None

    def __call__(self, docs: Documents, dep: Deployment) -> Outcome:
        return evaluate_one(docs, dep, self.loads, self.seed, resolve_simulator(self.simulator))


@dataclass(frozen=True)
class SizeJob(Job):
    """Build ``dep`` and find the fewest replicas of it that serve ``request_rate`` within
    ``slo`` (each replica taking an equal share of a Poisson stream: a random router splits a
    Poisson stream into Poisson streams). The search over replica counts is a bisection on
    [1, max_replicas]: it assumes that adding a replica never makes an SLO miss appear, which
    holds when latency does not fall as the offered rate grows.

    Outcome: ("refused", ...) as ``evaluate_one``, or ("sized", index, evidence, replicas or
    0 when even ``max_replicas`` miss, figures at that count or None, probes, why
    ``max_replicas`` miss or "", the simulation's assumptions at that count)."""

    isl: Any
    osl: Any
    request_rate: float
    slo: Any
    max_replicas: int
    num_prompts: int | None
    seed: int
    simulator: Any = None

    def __call__(self, docs: Documents, dep: Deployment) -> Outcome:
        sim = resolve_simulator(self.simulator)
        try:
            kernels = kernels_for(docs, dep)
        except LatencyKernelError as e:
            return ("refused", dep.index, _setting(e), str(e))
        evidence = _evidence(kernels)
        Probe = tuple[bool, dict[str, float] | None, str, tuple[tuple[str, ...], ...]]
        memo: dict[int, Probe] = {}

        def probe(r: int) -> Probe:
            if r not in memo:
                load = LoadPoint(self.isl, self.osl, request_rate=self.request_rate / r, num_prompts=self.num_prompts)
                try:
                    res = sim(kernels, dep, load, self.seed)
                except LatencyKernelError as e:
                    memo[r] = (False, None, str(e), ())
                    return memo[r]
                figs = figures(res, dep.gpus)
                # the replica's figures; throughput and GPUs are scaled to r replicas by the caller
                sat = bool(getattr(res, "saturated", False))
                misses = self.slo.misses(figs)
                why = "saturated (the queue grows without bound)" if sat else "misses " + "; ".join(misses)
                memo[r] = (not sat and not misses, figs, "" if not sat and not misses else why, run_assumptions(res))
            return memo[r]

        lo, hi = 1, self.max_replicas
        if not probe(hi)[0]:
            return ("sized", dep.index, evidence, 0, None, len(memo), probe(hi)[2], ())
        while lo < hi:
            mid = (lo + hi) // 2
            if probe(mid)[0]:
                hi = mid
            else:
                lo = mid + 1
        return ("sized", dep.index, evidence, lo, probe(lo)[1], len(memo), "", probe(lo)[3])


def evaluate_chunk(
    docs: Documents, chunk: Sequence[Deployment], loads: Sequence[LoadPoint], seed: int, sim: Simulator
) -> list[Outcome]:
    """``evaluate_one`` over a chunk of deployments, in order."""
    return [evaluate_one(docs, dep, loads, seed, sim) for dep in chunk]
