"""``graph from-hf`` on configs no model has (issue 10). Each test failed before: run time
grew with the square of num_hidden_layers (4,000 layers 23 s), 2**63 layers overflowed or
hung, a config nested 100,000 deep raised RecursionError, ``num_key_value_heads: 3`` with 32
heads, ``max_position_embeddings: -1`` and ``rope_theta: NaN`` were accepted, and a head
width that could not be derived said "(got None)"."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from latencykernel import DocumentError
from latencykernel.derive import derive_graph, derive_graph_from_bytes
from latencykernel.derive.hf import MAX_LAYERS, factor_stack

CONFIG = Path(__file__).resolve().parents[1] / "src/latencykernel/data/catalog/models/llama-3.1-8b-instruct/config.json"


def llama(**edits: Any) -> dict[str, Any]:
    return {**json.loads(CONFIG.read_text()), **edits}


def derive(cfg: dict[str, Any]) -> dict[str, Any]:
    return derive_graph(cfg, name="t", sha256="0" * 64)


def test_many_layers_derive_in_linear_time() -> None:
    """Deriving MAX_LAYERS layers takes about as long per layer as 1,000 (was quadratic)."""
    t0 = time.perf_counter()
    derive(llama(num_hidden_layers=1000))
    small = time.perf_counter() - t0
    t0 = time.perf_counter()
    g = derive(llama(num_hidden_layers=MAX_LAYERS))
    big = time.perf_counter() - t0
    assert g["stack"]["repeat"] == MAX_LAYERS
    assert big < 30 * small + 2.0  # 10x the layers: linear is ~10x, the old code ~100x


def test_the_worst_case_factoring_stays_fast() -> None:
    """No repetition at all: every pattern length is tried (the bound that stops the search
    early never binds); still one vectorised pass each."""
    t0 = time.perf_counter()
    assert factor_stack([str(i) for i in range(4000)]) == {"prologue": [str(i) for i in range(4000)], "repeat": 0}
    assert time.perf_counter() - t0 < 20


@pytest.mark.parametrize(
    "ids",
    [["a"] * 5, ["x", "a", "b", "a", "b", "a", "b", "y"], ["a", "b", "c"], ["a", "a", "b", "a", "a", "b", "a"]],
)
def test_factoring_is_the_fewest_listed_ids(ids: list[str]) -> None:
    """The factoring expands back to the order and lists no more ids than any other
    (brute force over every prologue and pattern)."""
    st = factor_stack(ids)
    expanded = st.get("prologue", []) + st.get("pattern", []) * st["repeat"] + st.get("epilogue", [])
    assert expanded == ids
    listed = len(st.get("prologue", [])) + len(st.get("pattern", [])) + len(st.get("epilogue", []))
    n = len(ids)
    best = n
    for p in range(n):
        for L in range(1, n):
            r = 0
            while ids[p + r * L : p + (r + 1) * L] == ids[p : p + L] and p + (r + 1) * L <= n:
                r += 1
            if r >= 2:
                best = min(best, n - r * L + L)
    assert listed == best


@pytest.mark.parametrize("layers", [MAX_LAYERS + 1, 10**6, 2**63])
def test_absurd_layer_counts_are_refused(layers: int) -> None:
    with pytest.raises(DocumentError, match="num_hidden_layers"):
        derive(llama(num_hidden_layers=layers))


def test_a_deeply_nested_config_is_this_packages_error() -> None:
    data = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    with pytest.raises(DocumentError, match="nests"):
        derive_graph_from_bytes(data, name="t")


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
        ({"max_position_embeddings": -1}, "max_position_embeddings"),
        ({"rope_theta": float("nan")}, "rope_theta"),
        ({"rope_theta": float("inf")}, "rope_theta"),
    ],
)
def test_values_no_model_has_are_refused(edit: dict[str, Any], key: str) -> None:
    derive(llama())  # the twin
    with pytest.raises(DocumentError) as info:
        derive(llama(**edit))
    assert info.value.key == key


def test_nan_in_the_json_text_is_refused() -> None:
    data = CONFIG.read_bytes().replace(b'"rope_theta": 500000.0', b'"rope_theta": NaN')
    assert b"NaN" in data
    with pytest.raises(DocumentError, match="NaN"):
        derive_graph_from_bytes(data, name="t")


def test_no_message_says_got_none() -> None:
    cfg = llama(hidden_size=4100)
    cfg.pop("head_dim", None)
    with pytest.raises(DocumentError) as info:
        derive(cfg)
    assert "got None" not in str(info.value) and "head_dim" in str(info.value)
