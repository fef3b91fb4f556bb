"""The search shares one simulation between deployments that differ only in limits a closed
loop never reaches (``search.evaluate._Bounds``), and only there."""

from __future__ import annotations

from typing import Any

import pytest

from latencykernel.search import evaluate, run


def _search(monkeypatch: pytest.MonkeyPatch, space: dict[str, Any], workload: dict[str, Any], bounded: bool) -> Any:
    calls: list[int] = []
    real = evaluate.serving_simulate

    def counting(*a: Any) -> Any:
        calls.append(1)
        return real(*a)

    monkeypatch.setattr(evaluate, "serving_simulate", counting)
    monkeypatch.setattr(evaluate, "_ROWS", {})
    if not bounded:
        monkeypatch.setattr(evaluate._Bounds, "key", lambda *a: None)
    res = run("qwen3-30b-a3b", workload, {"tpot": "50ms"}, space, executor="serial")
    monkeypatch.undo()
    rows = {
        (c.deployment.index, c.load.concurrency): (dict(c.figures), tuple(c.provenance["assumptions"]))
        for c in res.candidates
    }
    return rows, len(calls)


def test_rows_shared_where_no_limit_is_reached_equal_simulating_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards a wrong reuse and a dead one: over max_num_seqs x max_num_batched_tokens (which
    also move the KV block count and the CUDA-graph ceiling), each candidate's figures and
    assumptions equal those of simulating it without the bounded reuse, while fewer
    simulations run. At c = 1 and 4 the unreached limits merge; at c = 64 the budget and
    max_num_seqs = 4 bind (2,048-token prompts), so those stay apart."""
    space = {"hardware": ["h100"], "tp": [1], "max_num_seqs": [None, 4, 64], "max_num_batched_tokens": [None, 16384]}
    workload = {"isl": 2048, "osl": 16, "concurrency": [1, 4, 64], "num_prompts": 96}
    plain, n_plain = _search(monkeypatch, space, workload, bounded=False)
    shared, n_shared = _search(monkeypatch, space, workload, bounded=True)
    assert shared == plain
    assert n_plain == 6 * 3
    # c = 1: every budget is above the one prompt, every ceiling in [1, 2048): one simulation;
    # c = 4: only 16,384 is above 4 x 2,048, so its three merge (three with the default 8,192
    # stay apart: their ceilings 512, 8, 128 differ); c = 64: all six apart
    assert n_shared == 1 + (1 + 3) + 6
    # the rows carry each deployment's own resolved limits
    for (_idx, _c), (_figs, notes) in shared.items():
        assert sum(1 for n in notes if n[0] == "num_gpu_blocks") == 1


def test_kv_cache_that_runs_short_is_not_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards sharing across KV block counts when the cache runs short: with long outputs at
    128 clients (each request needs up to 69 blocks, the cache about 7,300), two budgets
    that are both above every step but give different block counts must simulate apart,
    and their rows equal simulating each."""
    space = {"hardware": ["h100"], "tp": [1], "max_num_batched_tokens": [12288, 16384]}
    workload = {"isl": 64, "osl": 1024, "concurrency": [8, 128], "num_prompts": 128}
    plain, n_plain = _search(monkeypatch, space, workload, bounded=False)
    shared, n_shared = _search(monkeypatch, space, workload, bounded=True)
    assert shared == plain
    assert n_plain == 4
    assert n_shared == 3  # c = 8 shared (the cache holds 8 x 69 blocks); c = 128 apart
    a, b = (plain[(i, 128)][0] for i in sorted({i for i, _ in plain}))
    assert a != b  # the block counts matter there: a shared row would have been wrong


def test_a_reached_limit_or_ceiling_is_not_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards sharing across a limit the load reaches: 300 clients against max_num_seqs 256
    (the default's ceiling and 256's are both 512, so only the seat limit tells them
    apart), and 256-token prompts against CUDA-graph ceilings of 128 and 512 (the prefill
    step is eager under one and replayed under the other). Each pair simulates apart, the
    pair's figures differ, and the rows equal simulating each."""
    for space, workload in (
        ({"hardware": ["h100"], "tp": [1], "max_num_seqs": [None, 256]}, {"isl": 16, "osl": 4, "concurrency": [300]}),
        ({"hardware": ["h100"], "tp": [1], "max_num_seqs": [None, 64]}, {"isl": 256, "osl": 8, "concurrency": [1]}),
    ):
        workload = {**workload, "num_prompts": 300}
        plain, n_plain = _search(monkeypatch, space, workload, bounded=False)
        shared, n_shared = _search(monkeypatch, space, workload, bounded=True)
        assert shared == plain
        assert n_plain == n_shared == 2
        a, b = (f for f, _ in plain.values())
        assert a != b
