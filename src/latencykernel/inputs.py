"""From files (or arguments) to ``Inputs``: every document a kernel is built from, validated.

``open_inputs`` follows the loading sequence of the Go kernel's ``OpenInputs``: the bundle,
the model graph, the chip, the fabric (only when ``cluster.fabric`` is set), each coefficient
set in listed order, the storage classes (always), then the engine rules by
``engine_version``. ``build_inputs`` makes the bundle in memory from catalog names.
``validate_inputs`` re-runs every check on (possibly edited) inputs, so edited, built and
opened inputs pass through the same validation.

Documents a caller receives are copies (edit them freely). Inside ``shared_documents()``
(what ``latencykernel.open`` and ``build`` use) the loaders hand the cached originals
instead, and ``validate_inputs`` keeps them without a copy or a second validation: those
inputs go straight into a kernel and are never returned to the caller, so building a
kernel copies nothing and no edit can reach the cache or a kernel.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from latencykernel.documents.base_models import MEMORY
from latencykernel.documents.cache import cached
from latencykernel.documents.checkpoint import CheckpointFacts, load_checkpoint_facts
from latencykernel.documents.chip import Chip, load_chip
from latencykernel.documents.coefficients import CoefficientSet, load_coefficient_set
from latencykernel.documents.copying import copy_if_unchanged
from latencykernel.documents.fabric import Fabric, load_fabric
from latencykernel.documents.graph import ModelGraph, load_graph
from latencykernel.documents.rules import EngineRules, lookup_rules
from latencykernel.documents.scenario import Deployment, Pool, Scenario, check_bundle, load_bundle
from latencykernel.documents.storage import StorageClass, load_storage
from latencykernel.documents.validation import show, validate
from latencykernel.errors import DocumentError
from latencykernel.repos import Repos

__all__ = [
    "Inputs",
    "open_inputs",
    "build_inputs",
    "validate_inputs",
    "shared_documents",
    "DEFAULT_COEFFICIENTS",
    "DEFAULT_ENGINE_VERSION",
]

DEFAULT_ENGINE_VERSION = "0.31.0"
DEFAULT_COEFFICIENTS: tuple[str, ...] = (
    "cost-model-primitives",
    "cost-model-moe",
    "cost-model-collectives",
    "cost-model-host-overheads",
    "cost-model-attention",
    "cost-model-recurrent",
    "cost-model-memory",
)

M = TypeVar("M", bound=BaseModel)

_SHARING: ContextVar[bool] = ContextVar("latencykernel_shared_documents", default=False)


@contextmanager
def shared_documents() -> Iterator[None]:
    """Within this block ``open_inputs``/``build_inputs`` return inputs holding the cached
    documents themselves (read-only; marked so ``validate_inputs`` neither copies nor
    re-validates them). For code that passes the inputs straight to ``new`` and drops them."""
    token = _SHARING.set(True)
    try:
        yield
    finally:
        _SHARING.reset(token)


@dataclass
class Inputs:
    """Every parsed document a kernel is built from, for one pool of one deployment.

    ``files`` maps ``scenario``, ``deployment``, ``model``, ``chip``, ``fabric``, ``storage`` and
    ``coefficients[i]`` to the file each came from (``<memory>`` for built documents).
    """

    scenario: Scenario
    deployment: Deployment
    pool: int
    model: ModelGraph
    chip: Chip
    fabric: Fabric | None
    storage: dict[str, StorageClass]
    coefficients: list[CoefficientSet]
    rules: EngineRules
    files: dict[str, str] = field(default_factory=dict)
    checkpoint: CheckpointFacts | None = None  # read from the config.json beside the graph
    # True when model, coefficients, chip, fabric and storage are the cache's own originals
    # (made inside ``shared_documents()``): read-only, never handed to a caller.
    _shared: bool = field(default=False, repr=False, compare=False)

    @property
    def stated_pool(self) -> Pool:
        """The selected pool as the deployment states it."""
        return self.deployment.pools[self.pool]

    def file(self, what: str) -> str:
        """The file a document came from (``<memory>`` when unknown)."""
        return self.files.get(what, MEMORY)


# --------------------------------------------------------------------------- checks


def _check_pool(deployment: Deployment, pool: Any, file: str) -> None:
    n = len(deployment.pools)
    if isinstance(pool, bool) or not isinstance(pool, int):
        raise DocumentError(
            f"pool must be a whole-number index into the {n} pool(s) of {file} (0 to {n - 1}), got {pool!r}",
            file=file,
            key="pools",
            value=pool,
        )
    if not 0 <= pool < n:
        raise DocumentError(f"{file} states {n} pool(s); pool {pool} was requested", file=file, key="pools", value=pool)


def _check_cross(
    scenario: Scenario,
    deployment: Deployment,
    fabric: Fabric | None,
    storage: dict[str, StorageClass],
    files: dict[str, str],
) -> None:
    """Checks between the bundle and the catalog documents."""
    f = files.get("scenario", MEMORY)
    cl = scenario.cluster
    if cl.fabric and fabric is None:
        raise DocumentError(
            f"{f}: cluster.fabric: names {show(cl.fabric)} but no fabric document is loaded",
            file=f,
            key="cluster.fabric",
            value=cl.fabric,
        )
    storage_file = files.get("storage", MEMORY)
    known = ", ".join(sorted(storage)) or "(none)"
    for j, name in enumerate(cl.storage or []):
        if name not in storage:
            raise DocumentError(
                f"{f}: cluster.storage[{j}]: {show(name)} is not a storage class in "
                f"{storage_file}; known classes: {known}",
                file=f,
                key=f"cluster.storage[{j}]",
                value=name,
            )
    if deployment.offload is not None:
        df = files.get("deployment", f)
        for j, t in enumerate(deployment.offload.tiers):
            if t.tier not in storage:
                raise DocumentError(
                    f"{df}: offload.tiers[{j}].tier: {show(t.tier)} is not a storage class in "
                    f"{storage_file}; known classes: {known}",
                    file=df,
                    key=f"offload.tiers[{j}].tier",
                    value=t.tier,
                )


def _revalidate(model_cls: type[M], obj: Any, file: str, prefix: str = "") -> M:
    if isinstance(obj, BaseModel):
        data: Any = obj.model_dump(by_alias=True, warnings=False)
    else:
        data = obj
    return validate(model_cls, data, file, prefix)


def _recheck(model_cls: type[M], obj: Any, file: str) -> M:
    """Like ``_revalidate``, but a large document still equal to what its loader validated is
    only copied (cheaper than a second validation)."""
    same = copy_if_unchanged(obj) if isinstance(obj, model_cls) else None
    return same if same is not None else _revalidate(model_cls, obj, file)


def validate_inputs(inputs: Inputs) -> Inputs:
    """Re-run every field and cross-document check; return a validated deep copy.

    The argument is not modified. Raises ``DocumentError`` naming the file each document
    came from.
    """
    fl = inputs.files
    name = fl.get
    if inputs._shared:
        return _validate_shared(inputs)
    scenario = _revalidate(Scenario, inputs.scenario, name("scenario", MEMORY))
    deployment = _revalidate(Deployment, inputs.deployment, name("deployment", MEMORY))
    check_bundle(scenario, deployment, name("scenario", MEMORY))
    _check_pool(deployment, inputs.pool, name("deployment", MEMORY))
    model = _recheck(ModelGraph, inputs.model, name("model", MEMORY))
    chip = _revalidate(Chip, inputs.chip, name("chip", MEMORY))
    chip.name = getattr(inputs.chip, "name", "") or scenario.cluster.hardware
    fabric: Fabric | None = None
    if inputs.fabric is not None:
        fabric = _revalidate(Fabric, inputs.fabric, name("fabric", MEMORY))
        fabric.name = getattr(inputs.fabric, "name", "") or (scenario.cluster.fabric or "")
    sf = name("storage", MEMORY)
    if not isinstance(inputs.storage, dict):
        raise DocumentError(f"{sf}: expected a map of storage classes, got {show(inputs.storage)}", file=sf)
    storage = {k: _revalidate(StorageClass, v, sf, prefix=str(k)) for k, v in inputs.storage.items()}
    coefficients = [
        _recheck(CoefficientSet, s, name(f"coefficients[{i}]", MEMORY)) for i, s in enumerate(inputs.coefficients)
    ]
    if not isinstance(inputs.rules, EngineRules):
        raise DocumentError(
            f"rules: expected EngineRules (see lookup_rules), got {show(inputs.rules)}", key="rules", value=inputs.rules
        )
    _check_cross(scenario, deployment, fabric, storage, fl)
    facts = inputs.checkpoint
    if facts is not None and not isinstance(facts, CheckpointFacts):
        raise DocumentError(
            f"checkpoint: expected CheckpointFacts or None, got {show(facts)}", key="checkpoint", value=facts
        )
    return Inputs(
        scenario, deployment, inputs.pool, model, chip, fabric, storage, coefficients, inputs.rules, dict(fl), facts
    )


def _validate_shared(inputs: Inputs) -> Inputs:
    """``validate_inputs`` for inputs made inside ``shared_documents()``: the catalog and
    registry documents are the validated cached originals, which no caller holds, so they are
    kept as they are; the bundle (small, and the caller may have built it) is re-validated."""
    fl = inputs.files
    f = fl.get("scenario", MEMORY)
    scenario = _revalidate(Scenario, inputs.scenario, f)
    deployment = _revalidate(Deployment, inputs.deployment, fl.get("deployment", MEMORY))
    check_bundle(scenario, deployment, f)
    _check_pool(deployment, inputs.pool, fl.get("deployment", MEMORY))
    _check_cross(scenario, deployment, inputs.fabric, inputs.storage, fl)
    return Inputs(
        scenario,
        deployment,
        inputs.pool,
        inputs.model,
        inputs.chip,
        inputs.fabric,
        inputs.storage,
        list(inputs.coefficients),
        inputs.rules,
        dict(fl),
        inputs.checkpoint,
        _shared=True,
    )


# --------------------------------------------------------------------------- loading


def _rules_for(scenario: Scenario, file: str) -> EngineRules:
    try:
        return lookup_rules(scenario.engine_version)
    except DocumentError as e:
        raise DocumentError(
            f"{file}: engine_version: {e}", file=file, key="engine_version", value=scenario.engine_version
        ) from None


def _complete(scenario: Scenario, deployment: Deployment, pool: int, repos: Repos, files: dict[str, str]) -> Inputs:
    """Load the catalog and registry documents the bundle names (spec §1.1 order)."""
    f = files["scenario"]
    share = _SHARING.get()
    gp = repos.graph_path(scenario.model, setting="model", origin=f)
    model = load_graph(gp, shared=share)
    facts = _checkpoint_facts(gp, model)
    cp = repos.chip_path(scenario.cluster.hardware, setting="cluster.hardware", origin=f)
    chip = load_chip(cp, shared=share)
    files.update(model=str(gp), chip=str(cp))
    fabric = None
    if scenario.cluster.fabric:
        fp = repos.fabric_path(scenario.cluster.fabric, setting="cluster.fabric", origin=f)
        fabric = load_fabric(fp, shared=share)
        files["fabric"] = str(fp)
    sets: list[CoefficientSet] = []
    for i, set_name in enumerate(scenario.coefficients):
        sp = repos.coefficient_path(set_name, setting=f"coefficients[{i}]", origin=f)
        sets.append(load_coefficient_set(sp, shared=share))
        files[f"coefficients[{i}]"] = str(sp)
    stp = repos.storage_path(origin=f)
    storage = load_storage(stp, shared=share)
    files["storage"] = str(stp)
    rules = _rules_for(scenario, f)
    _check_cross(scenario, deployment, fabric, storage, files)
    if facts is not None:
        files["checkpoint"] = facts.file
    return Inputs(scenario, deployment, pool, model, chip, fabric, storage, sets, rules, files, facts, _shared=share)


def _checkpoint_facts(graph_path: Any, model: ModelGraph) -> CheckpointFacts | None:
    """The facts of the ``config.json`` a catalog graph was derived from, when it sits
    beside the graph (``derived_from.path``); None for a graph of another origin."""
    from pathlib import Path

    d = model.derived_from
    if d.format != "hf_config_json" or "/" in d.path or "\\" in d.path or d.path in ("", ".", ".."):
        return None
    p = Path(graph_path).parent / d.path
    if not p.is_file():
        return None
    return cached("checkpoint", p, load_checkpoint_facts)


def open_inputs(scenario: str | os.PathLike[str], repos: Repos | None = None, pool: int = 0) -> Inputs:
    """Load a scenario bundle and every document it names, for pool ``pool``."""
    repos = repos or Repos.default()
    path = repos.scenario_path(scenario)
    f = str(path)
    sc, dep = load_bundle(path)
    _check_pool(dep, pool, f)
    return _complete(sc, dep, pool, repos, {"scenario": f, "deployment": f})


def build_inputs(
    model: str,
    hardware: str,
    *,
    tp: int = 1,
    dp: int = 1,
    enable_expert_parallel: bool = False,
    nodes: int = 1,
    gpus_per_node: int | None = None,
    fabric: str | None = None,
    quantization: str | None = None,
    cache_dtype: str | None = None,
    block_size: int | None = None,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    max_model_len: int | None = None,
    cudagraph_mode: str | None = None,
    engine_version: str | None = None,
    coefficients: Sequence[str] | None = None,
    repos: Repos | None = None,
    **engine: Any,
) -> Inputs:
    """One colocated pool built in memory from catalog names, validated like a file.

    ``model`` is a catalog name or a Hugging Face repo id; ``hardware`` a chip name or a unique
    prefix of one. ``gpus_per_node`` defaults to the chip's GPUsPerNode (else 8), and
    ``cluster.gpus_per_rack`` is the chip's GPUsPerRack when it states one. Extra keyword
    arguments are engine keys (an unknown one is the same error a file would give).
    """
    repos = repos or Repos.default()
    model_name = repos.find_model(model, setting="model")
    chip_name = repos.find_chip(hardware, setting="hardware")
    chip = load_chip(repos.chip_path(chip_name, setting="hardware"), shared=True)  # read here only
    gpn = gpus_per_node if gpus_per_node is not None else (chip.GPUsPerNode or 8)
    cluster: dict[str, Any] = {"hardware": chip_name, "nodes": nodes, "gpus_per_node": gpn}
    if fabric is not None:
        cluster["fabric"] = fabric
    if chip.GPUsPerRack is not None and isinstance(gpn, int) and gpn > 0 and chip.GPUsPerRack % gpn == 0:
        cluster["gpus_per_rack"] = chip.GPUsPerRack
    if isinstance(coefficients, str):
        coefficients = [coefficients]
    name = f"{model_name}-on-{chip_name}"
    scenario_doc = {
        "kind": "Scenario",
        "name": name,
        "model": model_name,
        "coefficients": list(coefficients if coefficients is not None else DEFAULT_COEFFICIENTS),
        "engine_version": engine_version if engine_version is not None else DEFAULT_ENGINE_VERSION,
        "cluster": cluster,
    }
    stated = dict(
        quantization=quantization,
        cache_dtype=cache_dtype,
        block_size=block_size,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        max_model_len=max_model_len,
        cudagraph_mode=cudagraph_mode,
    )
    engine_doc = {k: v for k, v in {**stated, **engine}.items() if v is not None}
    deployment_doc = {
        "kind": "Deployment",
        "name": name,
        "pools": [
            {
                "role": "colocated",
                "nodes": nodes,
                "parallel": {"tp": tp, "pp": 1, "dp": dp, "enable_expert_parallel": enable_expert_parallel},
                "engine": engine_doc,
            }
        ],
    }
    scenario = validate(Scenario, scenario_doc, MEMORY)
    deployment = validate(Deployment, deployment_doc, MEMORY)
    check_bundle(scenario, deployment, MEMORY)
    inputs = _complete(scenario, deployment, 0, repos, {"scenario": MEMORY, "deployment": MEMORY})
    return inputs
