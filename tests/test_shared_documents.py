"""The kernel shares the cached documents instead of copying them (issue 13), and still no
edit a caller can make reaches the cache or a kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

import latencykernel as lk
from latencykernel import Batch
from latencykernel.documents.cache import clear_cache
from latencykernel.documents.coefficients import CoefficientSet, load_coefficient_set
from latencykernel.documents.graph import ModelGraph, load_graph
from latencykernel.documents.validation import validate
from latencykernel.documents.yaml_loader import read_yaml
from latencykernel.inputs import open_inputs, shared_documents, validate_inputs
from latencykernel.repos import Repos

GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"
BATCH = Batch.from_columns([100, 1, 1], [4000, 2000, 9000], 8)


def _price(k: lk.Kernel) -> tuple[float, float, int]:
    e = k.step_time(BATCH)
    return e.overlap, e.no_overlap, k.sequence_variable_bytes(4096)


def test_editing_every_document_a_caller_gets_changes_no_later_kernel() -> None:
    """Guards a shared document leaking: edits to documents from open_inputs, load_graph and
    load_coefficient_set (the same cache entries open() shares) change no later open()."""
    before = _price(lk.open(GUIDE))
    inp = open_inputs(GUIDE)
    inp.deployment.pools[0].engine.cache_dtype = "bfloat16"
    for kind in inp.model.layer_kinds:
        for node in kind.nodes:
            if hasattr(node, "n"):
                node.n = 1
    for s in inp.coefficients:
        for _, entry in s.entries():
            entry.value = 123.0
    repos = Repos.default()
    g = load_graph(repos.graph_path(inp.scenario.model))
    g.layer_kinds.clear()
    c = load_coefficient_set(repos.coefficient_path(inp.scenario.coefficients[0]))
    c.coefficients.clear()
    assert _price(lk.open(GUIDE)) == before
    assert _price(lk.build("deepseek-v3", "h200", tp=8)) == _price(lk.build("deepseek-v3", "h200", tp=8))


def test_a_kernel_holds_no_document_any_public_function_returns() -> None:
    """Guards handing the kernel's (shared) documents to a caller: nothing the public loaders,
    open_inputs or validate_inputs return is the object a kernel holds."""
    k = lk.open(GUIDE)
    held = k._inputs
    inp = open_inputs(GUIDE)
    out = validate_inputs(inp)
    repos = Repos.default()
    for doc in (inp.model, out.model, load_graph(repos.graph_path(inp.scenario.model))):
        assert doc is not held.model and doc == held.model
    for i, s in enumerate(held.coefficients):
        assert s is not inp.coefficients[i] and s is not out.coefficients[i]
        assert s is not load_coefficient_set(repos.coefficient_path(inp.scenario.coefficients[i]))


def test_the_shared_originals_are_unchanged_by_building_kernels() -> None:
    """Guards kernel construction editing a shared document: after building kernels over
    many deployments, the cached graph and sets equal a fresh parse of their files."""
    for name in ("aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml", "examples/minimax-m2.5-h200-ep16.yaml"):
        lk.open(name)
    for tp in (1, 2, 4, 8):
        lk.build("llama-3.1-8b-instruct", "h100", tp=tp)
    repos = Repos.default()
    for model in ("deepseek-v3", "llama-3.1-8b-instruct", "minimax-m2.5"):
        p = repos.graph_path(model)
        assert load_graph(p, shared=True) == validate(ModelGraph, read_yaml(p), p)
    for set_name in ("cost-model-primitives", "cost-model-attention", "cost-model-collectives"):
        p = repos.coefficient_path(set_name)
        assert load_coefficient_set(p, shared=True) == validate(CoefficientSet, read_yaml(p), p)


def test_shared_and_copied_inputs_build_the_same_kernel() -> None:
    """Guards the shared path pricing differently: new(open_inputs(...)) (copies, full
    validation) and open() (shared originals) agree on every figure."""
    for name in (GUIDE, "examples/minimax-m2.5-h200-ep16.yaml"):
        assert _price(lk.new(open_inputs(name))) == _price(lk.open(name))


def test_shared_inputs_are_marked_and_validated_like_a_file(tmp_path: Path) -> None:
    """Guards the shared path skipping the bundle's checks: inside shared_documents() an
    edited bundle is still refused by validate_inputs, and only there are documents shared."""
    clear_cache()
    assert not open_inputs(GUIDE)._shared
    with shared_documents():
        inp = open_inputs(GUIDE)
    assert inp._shared and not open_inputs(GUIDE)._shared
    inp.deployment.pools[0].parallel.tp = 0
    with pytest.raises(lk.DocumentError) as ei:
        validate_inputs(inp)
    assert ei.value.key == "pools[0].parallel.tp"
