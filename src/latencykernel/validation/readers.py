"""Read measured serving runs from the formats benchmark clients write, into ``Point``s.

Formats (``detect`` tells them apart by their keys):

native JSON / CSV (``docs/accuracy.md`` documents it): one row per point with ``sweep``,
    ``scenario`` or ``build.<key>`` columns (JSON: a ``build`` object), optional labels
    ``engine``/``chip``/``model`` (``engine: sglang`` also has the closed form price SGLang's
    prefill batches run alone, ``validation.predict.prefill_pause_s``), ``isl``, ``osl``, ``concurrency`` or ``request_rate``, and
    ``{ttft,tpot,itl}_{mean,median,p99}_ms``, optional ``range_ratio`` (lengths uniform on
    [L(1 − r), L(1 + r)] around the stated means), optional ``batch_wait_timeout_iters``
    and ``batch_wait_max_tokens_ratio`` (TensorRT-LLM's batch waiting as the run set it),
    optional ``max_num_seqs`` (the run's ``--max-num-seqs`` where it differs from the
    deployment's), optional ``max_num_batched_tokens`` (the run's token budget per step
    where it differs from the deployment's), optional ``kv_reservation`` (``on_demand`` or
    ``to_completion``: how the run's scheduler held KV, where it differs from the
    deployment's), optional ``scheduler_recv_interval`` (SGLang's
    ``--scheduler-recv-interval`` as the run set it), optional ``prefix_hit_rate`` (the
    share of prompt tokens the run's prefix cache served, in [0, 1), as vLLM's
    ``vllm:prefix_cache_hits`` over ``vllm:prefix_cache_queries`` counts it), optional ``parallel.<key>`` columns
    (JSON: a ``parallel`` object) beside a ``scenario``: the run's ``tp``, ``dp`` and
    ``enable_expert_parallel`` where they differ from the scenario's, optional
    ``settings.<key>`` columns (JSON: a ``settings`` object) beside a ``scenario``: the run's
    ``cudagraph_mode``, ``splitting_ops`` (a JSON list, or in CSV ``[]`` or names
    separated by commas) and ``cache_dtype`` where they differ from the scenario's.
    Definitions are vLLM's.
``vllm bench serve`` result JSON (vllm/benchmarks/serve.py, ``benchmark`` result dict):
    ``{mean,median,p99}_{ttft,tpot,itl}_ms`` are taken as they are; ISL/OSL are
    ``total_input_tokens / completed`` and ``total_output_tokens / completed``; the load is
    ``max_concurrency``, else ``request_rate``. A deployment comes from the caller, or from
    ``--metadata scenario=...`` keys, which vLLM writes at the top level of the file.
AIPerf ``profile_export_aiperf.json`` (ai-dynamo/aiperf, docs/tutorials/working-with-profile-
    exports.md): ``time_to_first_token`` → TTFT; ``inter_token_latency`` → TPOT, because
    AIPerf's per-request ITL is ``(request_latency − ttft) / (osl − 1)``
    (aiperf/metrics/types/inter_token_latency_metric.py), vLLM's TPOT; ``inter_chunk_latency``
    (gaps between streamed chunks) → ITL. ``avg``/``p50``/``p99`` with the metric's ``unit``.
    Load: ``input_config.loadgen.concurrency`` or ``request_rate``.
GuideLLM ``benchmarks.json`` (vllm-project/guidellm, src/guidellm/benchmark/benchmark.py,
    ``GenerativeTextResponseStats``): its ``time_per_output_token_ms`` divides the decode
    span by *all* output tokens, the first included, so it is not vLLM's TPOT and is not
    read; its per-request ``inter_token_latency_ms`` = ``(last − first token) / (n − 1)``
    is vLLM's TPOT and is read as TPOT. GuideLLM keeps no per-gap distribution, so ITL is
    left empty. Statistics from ``metrics.<name>.successful`` (``mean``, ``median``,
    ``percentiles.p99``); one point per benchmark, load from the strategy
    (``synchronous`` = concurrency 1, ``concurrent`` = ``streams``, ``constant``/``poisson``
    = ``rate``; a ``throughput`` run has no stated load and is refused).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from latencykernel.errors import LatencyKernelError
from latencykernel.step_model import KV_RESERVATIONS
from latencykernel.validation.points import METRICS, STATS, Deployment, Point, Stat

__all__ = ["detect", "read_measurements", "read_text", "NATIVE_FORMAT"]

NATIVE_FORMAT = "latencykernel.measurements/1"
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "seconds": 1.0}
_BUILD_INT = {"tp", "dp", "nodes", "gpus_per_node", "block_size", "max_num_seqs", "max_num_batched_tokens"}


def _num(value: Any, what: str) -> float | None:
    if value is None or value == "":
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise LatencyKernelError(f"{what} must be a number, got {value!r}") from None
    if math.isnan(x):
        raise LatencyKernelError(f"{what} must be a number, got NaN")
    return x


def _ms(value: Any, what: str) -> float | None:
    x = _num(value, what)
    return None if x is None else x * 1e-3


def _whole(value: Any, what: str) -> int | None:
    x = _num(value, what)
    if x is None or math.isinf(x):
        return None
    if x != int(x):
        raise LatencyKernelError(f"{what} must be a whole number, got {value!r}")
    return int(x)


def _build_value(key: str, raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    if key in _BUILD_INT:
        return _whole(raw, f"build.{key}")
    low = raw.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    return raw.strip()


def _section(row: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A row's ``name`` settings: a nested ``name`` object (JSON) and ``name.<key>`` columns
    (CSV), typed as build values; a ``name`` that is not an object is refused, not dropped."""
    out: dict[str, Any] = {}
    nested = row.get(name)
    if isinstance(nested, Mapping):
        out.update(nested)
    elif nested not in (None, ""):
        raise LatencyKernelError(f"{name} must be an object of {name}.<key> settings, got {nested!r}")
    prefix = name + "."
    for k, v in row.items():
        if isinstance(k, str) and k.startswith(prefix) and v not in (None, ""):
            out[k[len(prefix) :]] = _build_value(k[len(prefix) :], v)
    return out


def _settings(row: Mapping[str, Any], where: str) -> tuple[tuple[str, Any], ...]:
    """A row's ``settings`` settings (``Deployment.settings``): ``splitting_ops`` as a tuple of op
    names, from a JSON list or a CSV cell (``[]`` for none, else names separated by commas)."""
    out = _section(row, "settings")
    ops = out.get("splitting_ops")
    if isinstance(ops, str):
        cell = ops.strip()
        if cell.startswith("["):
            try:
                ops = json.loads(cell)
            except json.JSONDecodeError:
                raise LatencyKernelError(f"{where}: settings.splitting_ops {cell!r} is not a JSON list") from None
        else:
            ops = [op.strip() for op in cell.split(",") if op.strip()]
    if isinstance(ops, list):
        out["splitting_ops"] = tuple(ops)
    return tuple(sorted(out.items()))


def _deployment(row: Mapping[str, Any], default: Deployment | None, where: str) -> Deployment:
    scenario = row.get("scenario") or None
    build = _section(row, "build")
    parallel = _section(row, "parallel")
    settings = _settings(row, where)
    if scenario or build:
        return Deployment(
            scenario=str(scenario) if scenario else None,
            build=tuple(sorted(build.items())),
            parallel=tuple(sorted(parallel.items())),
            settings=settings,
        )
    if default is not None:
        if parallel or settings:  # the row's settings apply to the caller's scenario (refused with build arguments)
            return Deployment(
                scenario=default.scenario,
                build=default.build,
                parallel=tuple(sorted(parallel.items())),
                settings=settings,
            )
        return default
    raise LatencyKernelError(f"{where}: no deployment (give a scenario or build.* keys, or --scenario)")


def _native_point(row: Mapping[str, Any], default: Deployment | None, where: str) -> Point:
    dep = _deployment(row, default, where)
    stats: dict[str, Stat] = {}
    for m in METRICS:
        nested = row.get(f"{m}_ms")
        vals: dict[str, float | None] = {}
        for st in STATS:
            raw = nested.get(st) if isinstance(nested, Mapping) else row.get(f"{m}_{st}_ms")
            vals[st] = _ms(raw, f"{where}: {m}_{st}_ms")
        stats[m] = Stat(**vals)
    isl, osl = _num(row.get("isl"), f"{where}: isl"), _num(row.get("osl"), f"{where}: osl")
    if isl is None or osl is None:
        raise LatencyKernelError(f"{where}: isl and osl (mean prompt and output tokens) are required")
    conc = _whole(row.get("concurrency"), f"{where}: concurrency")
    rate = _num(row.get("request_rate"), f"{where}: request_rate")
    sweep = str(row.get("sweep") or f"{dep.key()} isl={isl:g} osl={osl:g}")
    ratio = _num(row.get("range_ratio"), f"{where}: range_ratio")
    wait_iters = _whole(row.get("batch_wait_timeout_iters"), f"{where}: batch_wait_timeout_iters")
    wait_ratio = _num(row.get("batch_wait_max_tokens_ratio"), f"{where}: batch_wait_max_tokens_ratio")
    seqs = _whole(row.get("max_num_seqs"), f"{where}: max_num_seqs")
    budget = _whole(row.get("max_num_batched_tokens"), f"{where}: max_num_batched_tokens")
    recv = _whole(row.get("scheduler_recv_interval"), f"{where}: scheduler_recv_interval")
    hit = _num(row.get("prefix_hit_rate"), f"{where}: prefix_hit_rate")
    if hit is not None and not (0.0 <= hit < 1.0):
        raise LatencyKernelError(f"{where}: prefix_hit_rate must be in [0, 1), got {hit!r}")
    resv = row.get("kv_reservation")
    if resv is not None and resv != "" and resv not in KV_RESERVATIONS:
        raise LatencyKernelError(f"{where}: kv_reservation must be on_demand or to_completion, got {resv!r}")
    return Point(
        sweep=sweep,
        deployment=dep,
        isl=isl,
        osl=osl,
        concurrency=conc,
        request_rate=rate if conc is None else None,
        ttft=stats["ttft"],
        tpot=stats["tpot"],
        itl=stats["itl"],
        engine=str(row.get("engine") or ""),
        chip=str(row.get("chip") or ""),
        model=str(row.get("model") or ""),
        source="native",
        range_ratio=ratio or 0.0,
        batch_wait_timeout_iters=wait_iters or 0,
        batch_wait_max_tokens_ratio=wait_ratio or 0.0,
        max_num_seqs=seqs or 0,
        max_num_batched_tokens=budget or 0,
        kv_reservation=str(resv or ""),
        scheduler_recv_interval=recv or 0,
        prefix_hit_rate=hit or 0.0,
    )


def _read_native_json(doc: Any, default: Deployment | None, name: str) -> list[Point]:
    rows = doc.get("points") if isinstance(doc, Mapping) else doc
    if not isinstance(rows, list):
        raise LatencyKernelError(f"{name}: expected a list of points or {{'points': [...]}}")
    return [_native_point(r, default, f"{name} point {i}") for i, r in enumerate(rows)]


def _read_native_csv(text: str, default: Deployment | None, name: str) -> list[Point]:
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None or "isl" not in reader.fieldnames:
        raise LatencyKernelError(f"{name}: a measurements CSV needs a header row with isl, osl, ... columns")
    return [_native_point(r, default, f"{name} row {i + 2}") for i, r in enumerate(reader)]


def _read_vllm(doc: Mapping[str, Any], default: Deployment | None, name: str) -> list[Point]:
    dep = _deployment(doc, default, name)
    done = _num(doc.get("completed"), f"{name}: completed")
    if not done or done <= 0:
        raise LatencyKernelError(f"{name}: completed must be a positive request count, got {doc.get('completed')!r}")
    isl = (_num(doc.get("total_input_tokens"), f"{name}: total_input_tokens") or 0.0) / done
    osl = (_num(doc.get("total_output_tokens"), f"{name}: total_output_tokens") or 0.0) / done
    conc = _whole(doc.get("max_concurrency"), f"{name}: max_concurrency")
    rate = _num(doc.get("request_rate"), f"{name}: request_rate") if conc is None else None
    if rate is not None and math.isinf(rate):
        raise LatencyKernelError(f"{name}: request_rate is inf and max_concurrency unset: the run has no stated load")
    stats = {m: Stat(*(_ms(doc.get(f"{st}_{m}_ms"), f"{name}: {st}_{m}_ms") for st in STATS)) for m in METRICS}
    sweep = str(doc.get("sweep") or f"{dep.key()} isl={isl:.0f} osl={osl:.0f}")
    return [
        Point(
            sweep=sweep,
            deployment=dep,
            isl=isl,
            osl=osl,
            concurrency=conc,
            request_rate=rate,
            ttft=stats["ttft"],
            tpot=stats["tpot"],
            itl=stats["itl"],
            engine=str(doc.get("engine") or ""),
            source="vllm bench serve",
        )
    ]


def _aiperf_stat(doc: Mapping[str, Any], key: str, name: str) -> Stat:
    m = doc.get(key)
    if not isinstance(m, Mapping):
        return Stat()
    unit = str(m.get("unit", "ms"))
    if unit not in _UNIT_S:
        raise LatencyKernelError(f"{name}: {key}.unit {unit!r} is not a time unit ({', '.join(_UNIT_S)})")
    f = _UNIT_S[unit]

    def one(k: str) -> float | None:
        x = _num(m.get(k), f"{name}: {key}.{k}")
        return None if x is None else x * f

    return Stat(one("avg"), one("p50"), one("p99"))


def _read_aiperf(doc: Mapping[str, Any], default: Deployment | None, name: str) -> list[Point]:
    dep = _deployment(doc, default, name)

    def avg(key: str) -> float | None:
        m = doc.get(key)
        return _num(m.get("avg"), f"{name}: {key}.avg") if isinstance(m, Mapping) else None

    isl, osl = avg("input_sequence_length"), avg("output_sequence_length")
    if isl is None or osl is None:
        raise LatencyKernelError(f"{name}: input_sequence_length and output_sequence_length are required")
    loadgen = ((doc.get("input_config") or {}).get("loadgen")) or {}
    conc = _whole(loadgen.get("concurrency"), f"{name}: input_config.loadgen.concurrency")
    rate = _num(loadgen.get("request_rate"), f"{name}: input_config.loadgen.request_rate") if conc is None else None
    return [
        Point(
            sweep=str(doc.get("sweep") or f"{dep.key()} isl={isl:.0f} osl={osl:.0f}"),
            deployment=dep,
            isl=isl,
            osl=osl,
            concurrency=conc,
            request_rate=rate,
            ttft=_aiperf_stat(doc, "time_to_first_token", name),
            tpot=_aiperf_stat(doc, "inter_token_latency", name),
            itl=_aiperf_stat(doc, "inter_chunk_latency", name),
            source="aiperf (inter_token_latency read as TPOT)",
        )
    ]


def _guidellm_stat(metrics: Mapping[str, Any], key: str, name: str) -> Stat:
    m = (metrics.get(key) or {}).get("successful")
    if not isinstance(m, Mapping):
        return Stat()
    pct = m.get("percentiles") or {}
    return Stat(
        _ms(m.get("mean"), f"{name}: {key}.mean"),
        _ms(m.get("median", pct.get("p50")), f"{name}: {key}.median"),
        _ms(pct.get("p99"), f"{name}: {key}.p99"),
    )


def _read_guidellm(doc: Mapping[str, Any], default: Deployment | None, name: str) -> list[Point]:
    dep = _deployment(doc, default, name)
    out: list[Point] = []
    for i, b in enumerate(doc.get("benchmarks") or []):
        where = f"{name} benchmark {i}"
        strategy = (b.get("args") or {}).get("strategy") or (b.get("config") or {}).get("strategy") or {}
        kind = strategy.get("type_") or strategy.get("type")
        conc: int | None = None
        rate: float | None = None
        if kind == "synchronous":
            conc = 1
        elif kind == "concurrent":
            conc = _whole(strategy.get("streams"), f"{where}: strategy.streams")
        elif kind in ("constant", "poisson", "async"):
            rate = _num(strategy.get("rate"), f"{where}: strategy.rate")
        else:
            raise LatencyKernelError(f"{where}: strategy {kind!r} states no load (need synchronous, concurrent, ...)")
        metrics = b.get("metrics") or {}
        isl_m = ((metrics.get("prompt_token_count") or {}).get("successful") or {}).get("mean")
        osl_m = ((metrics.get("output_token_count") or {}).get("successful") or {}).get("mean")
        isl, osl = _num(isl_m, f"{where}: prompt_token_count"), _num(osl_m, f"{where}: output_token_count")
        if isl is None or osl is None:
            raise LatencyKernelError(f"{where}: prompt_token_count and output_token_count are required")
        out.append(
            Point(
                sweep=str(doc.get("sweep") or f"{dep.key()} isl={isl:.0f} osl={osl:.0f}"),
                deployment=dep,
                isl=isl,
                osl=osl,
                concurrency=conc,
                request_rate=rate,
                ttft=_guidellm_stat(metrics, "time_to_first_token_ms", where),
                tpot=_guidellm_stat(metrics, "inter_token_latency_ms", where),
                source="guidellm (inter_token_latency_ms read as TPOT; its time_per_output_token_ms not used)",
            )
        )
    if not out:
        raise LatencyKernelError(f"{name}: benchmarks is empty")
    return out


def detect(doc: Any) -> str:
    """The format of a parsed JSON document: native, vllm, aiperf or guidellm."""
    if isinstance(doc, list) or (isinstance(doc, Mapping) and doc.get("format") == NATIVE_FORMAT):
        return "native"
    if isinstance(doc, Mapping):
        if "benchmarks" in doc:
            return "guidellm"
        if "time_to_first_token" in doc or "inter_token_latency" in doc:
            return "aiperf"
        if "mean_ttft_ms" in doc or "mean_tpot_ms" in doc:
            return "vllm"
        if "points" in doc:
            return "native"
    raise LatencyKernelError(
        "cannot tell the measurement format: expected native points, a vllm bench serve result, "
        "an AIPerf profile_export_aiperf.json or a GuideLLM benchmarks.json"
    )


_READERS = {"native": _read_native_json, "vllm": _read_vllm, "aiperf": _read_aiperf, "guidellm": _read_guidellm}


def read_text(text: str, name: str = "<memory>", deployment: Deployment | None = None) -> list[Point]:
    """Points from a document's text: JSON of any supported format, else a native CSV."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise LatencyKernelError(f"{name}: not valid JSON ({e.msg} at line {e.lineno})") from None
        return _READERS[detect(doc)](doc, deployment, name)
    return _read_native_csv(text, deployment, name)


def read_measurements(paths: Sequence[str | Path], deployment: Deployment | None = None) -> list[Point]:
    """Points from one or more files (any supported format, told apart by content)."""
    out: list[Point] = []
    for p in paths:
        path = Path(p)
        try:
            text = path.read_text()
        except OSError as e:
            raise LatencyKernelError(f"cannot read measurements file {str(path)!r}: {e.strerror}") from None
        out.extend(read_text(text, path.name, deployment))
    return out
