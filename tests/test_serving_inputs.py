"""Bad input to the serving simulation, and bad times from its step model, get this package's
error naming the setting or the source; never a raw ValueError/TypeError, a stall or a
negative latency."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from latencykernel.errors import LatencyKernelError
from latencykernel.serving import ClosedLoop, Disaggregated, Poisson, RandomRange, Trace, estimate, simulate
from test_serving_sim import Affine


class Bad(Affine):
    """An Affine model one of whose times is replaced by ``value``."""

    def __init__(self, where: str, value: float, **limits: Any) -> None:
        super().__init__(**limits)
        self.where, self.value = where, value

    def admission_overhead(self, prompt_tokens: int) -> float:
        return self.value if self.where == "admission" else 0.0

    def output_token_overhead(self) -> float:
        return self.value if self.where == "output" else 0.0

    def completion_overhead(self) -> float:
        return self.value if self.where == "completion" else 0.0

    def price(self, tokens: float, ctx: float) -> float:
        return self.value if self.where == "step" else super().price(tokens, ctx)

    def step_times(self, step: Any, scheduled: Any, computed: Any, *, decode_threshold: int, **kw: Any) -> Any:
        t = super().step_times(step, scheduled, computed, decode_threshold=decode_threshold, **kw)
        if self.where == "run":
            t.overlap[-1] = t.no_overlap[-1] = self.value
        return t


@pytest.mark.parametrize("value", [-1.0, math.nan, math.inf])
@pytest.mark.parametrize(
    "where,source",
    [
        ("admission", "admission_overhead"),
        ("output", "output_token_overhead"),
        ("completion", "completion_overhead"),
        ("step", "step_time"),
        ("run", "step_times"),
    ],
)
def test_bad_step_model_times_are_refused(where: str, source: str, value: float) -> None:
    """Guards A3: a negative, NaN or infinite time from the step model was used as is (negative
    TTFT/TPOT, or 'the simulation stalled'); it must be refused naming its source."""
    with pytest.raises(LatencyKernelError, match=source):
        simulate(Bad(where, value), ClosedLoop(2, 20, 200), skip_ahead=True)


@pytest.mark.parametrize("value", [-1.0, math.nan])
def test_bad_transfer_time_is_refused(value: float) -> None:
    """Guards A3: a Disaggregated transfer_s returning a negative or NaN time gave negative
    TTFT or a stall."""
    pd = Disaggregated(Affine(), Affine(), transfer_s=lambda n: value)
    with pytest.raises(LatencyKernelError, match="transfer_s"):
        simulate(pd, ClosedLoop(2, 20, 10))


@pytest.mark.parametrize("seed", [-1, "x", 1.5, True, None])
def test_bad_seed_is_refused(seed: Any) -> None:
    """Guards A10: a seed that is not a whole number >= 0 gave numpy's raw ValueError/TypeError."""
    with pytest.raises(LatencyKernelError, match="seed"):
        simulate(Affine(), ClosedLoop(1, 10, 10), seed=seed)
    with pytest.raises(LatencyKernelError, match="seed"):
        estimate(Affine(), isl=10, osl=10, concurrency=1, seed=seed)


def test_numpy_seed_accepted() -> None:
    """Guards the seed check refusing numpy's whole numbers (what default_rng takes)."""
    a = simulate(Affine(), ClosedLoop(2, RandomRange(20, 0.5), 10), seed=np.int64(3))  # type: ignore[arg-type]
    b = simulate(Affine(), ClosedLoop(2, RandomRange(20, 0.5), 10), seed=3)
    assert np.array_equal(a.per_request["ttft"], b.per_request["ttft"])


def _gen() -> Any:
    yield (0.0, 16, 4)


BAD: list[tuple[str, Any]] = [
    ("range_ratio", lambda: RandomRange(16, "x")),  # type: ignore[arg-type]
    ("range_ratio", lambda: RandomRange(16, math.nan)),
    ("request_rate", lambda: simulate(Affine(), Poisson("x", 10, 10, 5))),  # type: ignore[arg-type]
    ("request_rate", lambda: simulate(Affine(), Poisson(None, 10, 10, 5))),  # type: ignore[arg-type]
    ("request_rate", lambda: simulate(Affine(), Poisson(True, 10, 10, 5))),
    ("burstiness", lambda: simulate(Affine(), Poisson(2.0, 10, 10, 5, burstiness="x"))),  # type: ignore[arg-type]
    ("prefix_hit_rate", lambda: simulate(Affine(), ClosedLoop(1, 10, 10, prefix_hit_rate="x"))),  # type: ignore[arg-type]
    ("Trace rows must be", lambda: simulate(Affine(), Trace(5))),  # type: ignore[arg-type]
    (r"rows\[0\]", lambda: simulate(Affine(), Trace([5]))),
    (r"rows\[0\].arrival_s", lambda: simulate(Affine(), Trace([("x", 16, 4)]))),
    (
        "acceptance_rate",
        lambda: simulate(Affine(), ClosedLoop(1, 10, 10), num_speculative_tokens=2, acceptance_rate="x"),
    ),
    (
        "mean_accepted_length",
        lambda: simulate(Affine(), ClosedLoop(1, 10, 10), num_speculative_tokens=2, mean_accepted_length="x"),
    ),
    ("request_rate", lambda: estimate(Affine(), isl=10, osl=10, request_rate=True)),
    ("isl RandomRange", lambda: simulate(Affine(), ClosedLoop(1, RandomRange(1, 0.9), 10))),
]


@pytest.mark.parametrize("name,call", BAD, ids=[f"{i}-{b[0]}" for i, b in enumerate(BAD)])
def test_bad_workload_and_engine_values_are_refused(name: str, call: Any) -> None:
    """Guards A11 and A18: these raised a raw ValueError/TypeError deep inside (or, for a
    RandomRange prompt low end under 1, drew 0-token prompts vLLM refuses); each must be
    this package's error naming the setting."""
    with pytest.raises(LatencyKernelError, match=name):
        call()


def test_trace_from_a_generator_is_served() -> None:
    """Guards A11: Trace(generator) raised a raw TypeError (len of a generator); rows are read
    as a list first, so it serves as the same rows in a list do."""
    a = simulate(Affine(), Trace(_gen()))  # type: ignore[arg-type]
    b = simulate(Affine(), Trace([(0.0, 16, 4)]))
    assert np.array_equal(a.per_request["e2el"], b.per_request["e2el"])


def test_numpy_request_rate_accepted() -> None:
    """Guards A18: estimate(request_rate=np.float32(2)) was refused while True was accepted."""
    a = estimate(Affine(), isl=10, osl=10, request_rate=np.float32(2), num_prompts=5)  # type: ignore[arg-type]
    b = estimate(Affine(), isl=10, osl=10, request_rate=2.0, num_prompts=5)
    assert np.array_equal(a.per_request["sent"], b.per_request["sent"])


def test_prompt_low_end_one_is_accepted() -> None:
    """Guards the RandomRange prompt refusal going too far: a low end of exactly 1 is served."""
    r = simulate(Affine(), ClosedLoop(1, RandomRange(2, 0.5), 10, num_prompts=20))
    assert int(r.per_request["prompt"].min()) >= 1


@pytest.mark.parametrize(
    ("engine", "setting"),
    [
        ({"max_num_batched_tokens": 4, "max_num_seqs": 8}, "engine.max_num_batched_tokens"),
        ({"block_size": 7}, "engine.block_size"),
        ({"max_num_batched_tokens": 64, "max_model_len": 4096, "enable_chunked_prefill": False}, "max_num_batched"),
    ],
)
def test_engine_settings_vllm_would_not_start_are_refused(engine: dict[str, Any], setting: str) -> None:
    """Guards simulate() running settings vLLM refuses at start (a token budget below
    max_num_seqs, a block size no attention backend pages): they were simulated."""
    with pytest.raises(LatencyKernelError, match=setting):
        simulate(Affine(), ClosedLoop(2, 16, 4), **engine)
    ok = {k: v for k, v in engine.items() if k != "block_size"} | {"max_num_batched_tokens": 4096}
    # the twin that starts (a cache holding one max_model_len request, as vLLM requires)
    simulate(Affine(kv_blocks=2048), ClosedLoop(2, 16, 4), **ok)


def test_max_model_len_above_the_models_limit_is_refused() -> None:
    """Guards simulate(max_model_len=…) serving a context longer than the model supports:
    vLLM refuses to start above the length it derives from config.json, and so does the
    simulation, naming the argument; at the limit it serves."""
    m = Affine(model_max_model_len=4096, kv_blocks=10_000)
    with pytest.raises(LatencyKernelError, match="max_model_len 4097 exceeds the 4096 tokens") as e:
        simulate(m, ClosedLoop(1, 16, 4), max_model_len=4097)
    assert getattr(e.value, "setting", None) == "max_model_len"
    simulate(m, ClosedLoop(1, 16, 4), max_model_len=4096)
    simulate(Affine(kv_blocks=30_000), ClosedLoop(1, 16, 4), max_model_len=100_000)  # limit unknown: no refusal


def test_max_model_len_beyond_the_kv_cache_is_refused() -> None:
    """Guards a max_model_len override leaving no room for one request of max_model_len
    tokens: vLLM's check_enough_kv_cache_memory refuses to start. 64 blocks of 16 tokens less
    the null block hold 1,008 tokens. vLLM checks the memory before a num_gpu_blocks override
    applies, so an override (a test harness's tight cache) is not refused."""
    m = Affine(block_size=16, kv_blocks=64)
    simulate(m, ClosedLoop(1, 16, 4), max_model_len=1008)
    with pytest.raises(
        LatencyKernelError, match="max_model_len 1009 needs 64 KV blocks of 16 tokens, more than the 63"
    ):
        simulate(m, ClosedLoop(1, 16, 4), max_model_len=1009)
    simulate(Affine(block_size=16), ClosedLoop(1, 16, 4), max_model_len=1024, num_gpu_blocks=64)
