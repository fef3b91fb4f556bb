"""``run``: every deployment of a space × every load point, simulated; and ``fewest_gpus``,
the inverse question (the fewest GPUs that serve a request rate within an SLO)."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from latencykernel.errors import LatencyKernelError
from latencykernel.search.evaluate import POISSON_PROMPTS, EvaluateJob, LoadPoint, SizeJob, prepare, resolve_simulator
from latencykernel.search.executors import map_chunks
from latencykernel.search.prices import PriceTable, cost, load_prices
from latencykernel.search.result import Candidate, Refusal, SearchResult, Sizing, group_refusals, pareto
from latencykernel.search.slo import Slo, parse_slo
from latencykernel.search.space import Deployment, Space, deployments, load_space

__all__ = ["run", "fewest_gpus", "load_points"]

Progress = Callable[[int, int], None]


def _whole(value: Any, setting: str, low: int = 1, where: str = "workload.") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise LatencyKernelError(f"{where}{setting}: expected a whole number of at least {low}, got {value!r}")
    return value


def _seed(value: Any) -> int:
    """The simulation's seed: a whole number of at least 0 (numpy's rule), checked before any
    work so one bad seed does not abort the search half-way."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise LatencyKernelError(f"seed: expected a whole number of at least 0, got {value!r}")
    return value


def _rate(value: Any, setting: str, where: str = "workload.") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise LatencyKernelError(f"{where}{setting}: expected a positive request rate (requests/s), got {value!r}")
    return float(value)


def _listed(value: Any, setting: str = "workload") -> list[Any]:
    out = list(value) if isinstance(value, list | tuple) else [value]
    if not out:
        raise LatencyKernelError(f"{setting}: no value (give at least one)")
    return out


def load_points(workload: Any) -> tuple[LoadPoint, ...]:
    """Load points from ``{"isl", "osl", "concurrency": int | [int], "num_prompts"?}`` or
    ``{"isl", "osl", "request_rate": float | [float], "num_prompts"?}``, or from serving
    workloads (``ClosedLoop``/``Poisson``, one or a list)."""
    if isinstance(workload, Mapping):
        known = {"isl", "osl", "concurrency", "request_rate", "num_prompts"}
        unknown = sorted(set(map(str, workload)) - known)
        if unknown:
            raise LatencyKernelError(f"workload.{unknown[0]}: unknown key; use {', '.join(sorted(known))}")
        for key in ("isl", "osl"):
            if key not in workload:
                raise LatencyKernelError(f"workload.{key}: missing (prompt and output tokens per request)")
        isl = _whole(workload["isl"], "isl")
        osl = _whole(workload["osl"], "osl")
        n = workload.get("num_prompts")
        n = None if n is None else _whole(n, "num_prompts")
        has_c = workload.get("concurrency") is not None
        has_r = workload.get("request_rate") is not None
        if has_c == has_r:
            raise LatencyKernelError(
                "workload: give exactly one of concurrency (closed loop) or request_rate (open loop, requests/s)"
            )
        if has_c:
            cs = [_whole(c, "concurrency") for c in _listed(workload["concurrency"], "workload.concurrency")]
            return tuple(LoadPoint(isl, osl, concurrency=c, num_prompts=n) for c in cs)
        rs = [_rate(r, "request_rate") for r in _listed(workload["request_rate"], "workload.request_rate")]
        return tuple(LoadPoint(isl, osl, request_rate=r, num_prompts=n) for r in rs)
    items = list(workload) if isinstance(workload, list | tuple) else [workload]
    out = []
    for w in items:
        c = getattr(w, "concurrency", None)
        r = getattr(w, "request_rate", None)
        if (c is None) == (r is None) or not hasattr(w, "isl") or not hasattr(w, "osl"):
            raise LatencyKernelError(
                f"workload: expected a mapping or serving ClosedLoop/Poisson workloads, got {type(w).__name__}"
            )
        out.append(LoadPoint(w.isl, w.osl, concurrency=c, request_rate=r, num_prompts=getattr(w, "num_prompts", None)))
    if not out:
        raise LatencyKernelError("workload: no load point given")
    return tuple(out)


def _cost(dep: Deployment, figs: Mapping[str, float], prices: PriceTable, scale: int = 1) -> dict[str, float | None]:
    return cost(prices.get(dep.hardware), dep.gpus * scale, figs.get("output_tokens_per_s", 0.0))


NO_SLO = "no SLO given: best is the cheapest"
NO_SLO_SIZING = "no SLO given: the fewest GPUs that are not saturated"


def _provenance(evidence: tuple[int, int, tuple[str, ...]], dep: Deployment, prices: PriceTable) -> dict[str, Any]:
    p = prices.get(dep.hardware)
    return {
        "latency": evidence[2],
        "throughput": evidence[2],
        "evidenced": (evidence[0], evidence[1]),
        "cost": f"{p.source} ({p.date})" if p is not None else f"no price for {dep.hardware} in the price table",
    }


def unpriced(hardware: Sequence[str], prices: PriceTable) -> dict[str, str]:
    """The chips of a space the price table has no entry for, each with what that means."""
    return {
        hw: "no price in the table; left out of best (give --prices)"
        for hw in dict.fromkeys(hardware)
        if prices.get(hw) is None
    }


def _run_record(
    model: str,
    space: Space,
    loads: Sequence[LoadPoint],
    slo: Slo,
    prices: PriceTable,
    docs: Any,
    no_slo: str = NO_SLO,
    **kw: Any,
) -> dict[str, Any]:
    from latencykernel import __version__
    from latencykernel.resolve.settings import ENGINE_BEHAVIOUR_COMMIT, ENGINE_BEHAVIOUR_VERSION

    space_json = space.model_dump(mode="json")
    return {
        "assumptions": _assumptions(space, loads, slo, prices, no_slo),
        "latencykernel": __version__,
        "engine_behaviour_version": ENGINE_BEHAVIOUR_VERSION,
        "engine_behaviour_commit": ENGINE_BEHAVIOUR_COMMIT,
        "model": model,
        "documents": docs.files(),
        "prices": list(prices.files),
        "unpriced": unpriced(space.hardware, prices),
        "space": space_json,
        "space_sha256": hashlib.sha256(json.dumps(space_json, sort_keys=True).encode()).hexdigest(),
        "loads": [lp.label() for lp in loads],
        "slo": slo.as_dict(),
        **({} if slo.targets else {"slo_note": no_slo}),
        **kw,
    }


def _assumptions(
    space: Space, loads: Sequence[LoadPoint], slo: Slo, prices: PriceTable, no_slo: str = NO_SLO
) -> list[tuple[str, str, str]]:
    """Every default the search took for the user, as (name, value, reason); the kernels' and
    the simulation's own defaults are in each kernel's ``assumptions()`` and each candidate's
    ``provenance["assumptions"]``."""
    out = []
    if not slo.targets:
        out.append(("slo", "none", no_slo + " (every unsaturated candidate meets an empty SLO)"))
    if "fabric" not in space.model_fields_set and space.fabric is not None:
        out.append(("fabric", space.fabric, "unstated; the network between nodes for layouts wider than a node"))
    for key in ("tp", "expert_parallel"):
        if key not in space.model_fields_set:
            out.append((key, str(getattr(space, key)), "unstated; the space's default"))
    if any(lp.num_prompts is None for lp in loads):
        out.append(
            (
                "num_prompts",
                f"10 x concurrency (closed loop), {POISSON_PROMPTS} (open loop)",
                "unstated; serving's defaults (the public accuracy campaigns pin 10 x concurrency)",
            )
        )
    out.append(
        ("tokens_per_s_per_user", "1 / mean TPOT", "the decode speed one request sees (aiconfigurator's tokens/s/user)")
    )
    if len(prices.files) == 1:
        out.append(("prices", prices.files[0], "no price table given; each chip's entry names its source and date"))
    return out


def _front_ttft_key(slo: Slo) -> str:
    for t in slo.targets:
        if t.metric == "ttft":
            return t.key
    return "ttft_mean_s"


def _empty_space(sp: Space) -> LatencyKernelError:
    why = []
    if sp.gpus is not None:
        why.append(f"gpus {sp.gpus} is no tp x dp of tp {sp.tp}" + (f" and dp {sp.dp}" if sp.dp is not None else ""))
    if sp.ep is not None:
        why.append(f"the ep filter {sp.ep} keeps no expert-parallel layout")
    return LatencyKernelError("space: no deployment" + (f" ({'; or '.join(why)})" if why else ""))


def _prologue(
    space: Any, slo: Any, prices: Any, seed: Any, simulator: Any
) -> tuple[Space, Slo, PriceTable, list[Deployment]]:
    """What ``run`` and ``fewest_gpus`` check and read before any deployment is built: the
    space (and that it holds a deployment), the SLO, the prices, the seed and the simulator
    (a Ray address is checked where Ray is joined, ``executors.check_ray_address``)."""
    sp = load_space(space)
    target = parse_slo(slo)
    table = load_prices(prices)
    _seed(seed)
    resolve_simulator(simulator)
    deps = deployments(sp)
    if not deps:
        raise _empty_space(sp)
    return sp, target, table, deps


def run(
    model: str,
    workload: Any,
    slo: Mapping[str, Any] | Slo | None,
    space: Any,
    *,
    executor: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    prices: Any = None,
    seed: int = 0,
    simulator: Any = None,
    progress: Progress | None = None,
    repos: Any = None,
) -> SearchResult:
    """Build every deployment of ``space`` for ``model`` in memory and simulate it at every
    load point of ``workload``; see ``SearchResult``.

    model:        catalog name or Hugging Face id (what ``lk.build`` accepts)
    workload:     ``{"isl", "osl", "concurrency": [...]}`` or ``{..., "request_rate": [...]}``
                  or serving workloads (``load_points``)
    slo:          ``{"tpot": 0.05, "ttft_p99": "2s"}``: a number is seconds, a string needs
                  a unit (``parse_slo``); None or empty: no target, ``best`` is the cheapest
                  unsaturated candidate (recorded in the provenance)
    space:        a ``Space``, a mapping or a YAML file (``load_space``)
    executor:     ``"local"`` (every core, processes), ``"ray"`` or ``"serial"``
    workers:      processes (local; default every core) or chunks in flight (ray; default
                  the cluster's CPUs)
    ray_address:  an existing Ray cluster (``"auto"``, ``"ray://host:10001"``); None starts a
                  local instance when Ray is not initialised yet
    prices:       a price table (file or mapping) over the default (``load_prices``); a
                  chip without a price is left out of ``best`` (``provenance["unpriced"]``)
    seed:         the serving simulation's seed (the same for every candidate), a whole
                  number of at least 0
    simulator:    ``"module:function"`` or a picklable callable ``(kernels, deployment,
                  load_point, seed) -> ServingResult``; default ``latencykernel.serving``
    progress:     called with (deployments done, deployments in all)

    The result is the same whatever the executor and worker count: same candidates, same
    order, same figures.
    """
    loads = load_points(workload)
    sp, target, table, deps = _prologue(space, slo, prices, seed, simulator)
    docs = prepare(model, sp, repos)
    job = EvaluateJob(loads, seed, simulator)
    outcomes = map_chunks(executor, docs, deps, job, workers=workers, ray_address=ray_address, progress=progress)
    candidates: list[Candidate] = []
    refusals: list[Refusal] = []
    for out in outcomes:
        dep = deps[out[1]]
        if out[0] == "refused":
            refusals.append(Refusal(dep, None, out[2], out[3]))
            continue
        prov = _provenance(out[2], dep, table)
        for j, row in enumerate(out[3]):
            if row[0] == "refused":
                refusals.append(Refusal(dep, loads[j], row[1], row[2]))
                continue
            figs, saturated, assumed = row[1], row[2], row[3]
            misses = target.misses(figs) + (("saturated",) if saturated else ())
            candidates.append(
                Candidate(
                    dep.index,
                    j,
                    dep,
                    loads[j],
                    figs,
                    _cost(dep, figs, table),
                    not misses,
                    misses,
                    saturated,
                    {**prov, "assumptions": assumed},
                )
            )
    steady = [c for c in candidates if not c.saturated]
    front = pareto(steady, lambda c: c.figures["tokens_per_s_per_gpu"], lambda c: c.figures["tokens_per_s_per_user"])
    tk = _front_ttft_key(target)
    front_ttft = pareto(steady, lambda c: c.figures["tokens_per_s_per_gpu"], lambda c: -c.figures[tk])
    ok = [c for c in candidates if c.meets_slo and c.cost["usd_per_mtok"] is not None]
    best = min(ok, key=lambda c: (c.cost["usd_per_mtok"], c.gpus, c.index, c.load_index)) if ok else None
    record = _run_record(
        docs.model, sp, loads, target, table, docs, seed=seed, simulator=_sim_name(simulator), front_ttft_figure=tk
    )
    return SearchResult(
        tuple(candidates), tuple(refusals), group_refusals(refusals), front, front_ttft, best, len(deps), record
    )


def _sim_name(sim: Any) -> str:
    if sim is None:
        return "latencykernel.serving.simulate"
    if isinstance(sim, str):
        return sim
    return f"{getattr(sim, '__module__', '?')}:{getattr(sim, '__qualname__', repr(sim))}"


def fewest_gpus(
    model: str,
    request_rate: float,
    slo: Mapping[str, Any] | Slo | None,
    space: Any,
    *,
    isl: int,
    osl: int,
    max_replicas: int = 64,
    num_prompts: int | None = None,
    executor: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    prices: Any = None,
    seed: int = 0,
    simulator: Any = None,
    progress: Progress | None = None,
    repos: Any = None,
) -> SearchResult:
    """The inverse question: for each colocated deployment of ``space``, the fewest replicas
    (each a random router's equal share of a Poisson stream at ``request_rate``) that meet
    ``slo``; ``sizing`` lists them fewest GPUs first (then lowest cost, then space order) and
    ``best`` is None (a sizing is not a load point). A deployment that cannot serve the rate
    within ``max_replicas`` replicas is a refusal (setting ``max_replicas``, with what it
    missed at that count), and a disaggregated one a refusal (setting ``disaggregation``):
    nothing of the space is dropped without a reason. Arguments as ``run``'s; ``isl``,
    ``osl``, ``max_replicas`` and ``num_prompts`` are whole numbers of at least 1."""
    rate = _rate(request_rate, "request_rate", where="")
    isl = _whole(isl, "isl", where="")
    osl = _whole(osl, "osl", where="")
    _whole(max_replicas, "max_replicas", where="")
    if num_prompts is not None:
        _whole(num_prompts, "num_prompts", where="")
    sp, target, table, every = _prologue(space, slo, prices, seed, simulator)
    deps = [d for d in every if not d.disaggregated]
    if not deps:
        raise LatencyKernelError("space: fewest_gpus sizes colocated deployments, and this space has none")
    docs = prepare(model, sp, repos)
    job = SizeJob(isl, osl, rate, target, max_replicas, num_prompts, seed, simulator)
    outcomes = map_chunks(executor, docs, deps, job, workers=workers, ray_address=ray_address, progress=progress)
    pos = {d.index: d for d in deps}
    refusals: list[Refusal] = [
        Refusal(d, None, "disaggregation", "fewest_gpus sizes colocated deployments only")
        for d in every
        if d.disaggregated
    ]
    sizing: list[Sizing] = []
    at_most = LoadPoint(isl, osl, request_rate=rate / max_replicas, num_prompts=num_prompts)
    for out in outcomes:
        dep = pos[out[1]]
        if out[0] == "refused":
            refusals.append(Refusal(dep, None, out[2], out[3]))
            continue
        _, _, evidence, replicas, figs, _probes, why, assumed = out
        if replicas == 0 or figs is None:
            # the reason leaves the deployment out (the refusal names it), so like refusals group
            reason = f"{max_replicas} replicas at {rate / max_replicas:g} requests/s each: {why}"
            refusals.append(Refusal(dep, at_most, "max_replicas", reason))
            continue
        whole = dict(figs)
        for key in ("request_throughput_per_s", "output_tokens_per_s"):
            whole[key] = figs[key] * replicas
        sizing.append(
            Sizing(
                dep,
                replicas,
                dep.gpus * replicas,
                rate,
                whole,
                _cost(dep, whole, table, scale=replicas),
                {**_provenance(evidence, dep, table), "assumptions": assumed},
            )
        )
    inf = float("inf")
    sizing.sort(key=lambda s: (s.gpus, s.cost["cost_per_hour_usd"] or inf, s.deployment.index))
    refusals.sort(key=lambda r: r.deployment.index)
    record = _run_record(
        docs.model,
        sp,
        [LoadPoint(isl, osl, request_rate=rate, num_prompts=num_prompts)],
        target,
        table,
        docs,
        NO_SLO_SIZING,
        seed=seed,
        simulator=_sim_name(simulator),
        max_replicas=max_replicas,
    )
    return SearchResult((), tuple(refusals), group_refusals(refusals), (), (), None, len(every), record, tuple(sizing))
