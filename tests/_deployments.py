"""Deployments the fused and vectorised step paths are checked on: embedded scenarios,
some edited through ``Inputs`` to reach decode- and prefill-context parallelism."""

from __future__ import annotations

from functools import cache

import latencykernel as lk

GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"

# name -> (scenario, edits): parallel.* and engine.* settings changed through Inputs.
DEPLOYMENTS: dict[str, tuple[str, dict[str, object]]] = {
    "mla-guide": (GUIDE, {}),
    "moe-ep16-2nodes": ("examples/minimax-m2.5-h200-ep16.yaml", {}),
    "moe-ep16-deepep": ("examples/minimax-m2.5-h200-ep16.yaml", {"engine.all2all_backend": "deepep_low_latency"}),
    "dense-gqa": ("examples/llama-3.1-70b-instruct-h100-bf16-tp4.yaml", {}),
    "dense-fp4-linear": ("aisimulate/llama-3.1-70b-instruct-b200-fp4-vllm-tp2.yaml", {}),
    "unsplit-graph": (
        "aisimulate/llama-3.1-70b-instruct-b200-fp8-vllm-tp8.yaml",
        {"engine.cudagraph_mode": "FULL_DECODE_ONLY", "engine.splitting_ops": []},
    ),
    "sliding-window": ("examples/gpt-oss-120b-b200-mxfp4-tp1.yaml", {}),
    "swa-with-indexer": ("examples/minimax-m3-b300-bf16-tp8.yaml", {}),
    "sparse-mla": ("examples/glm-5-b300-fp8-tp8.yaml", {}),
    "sparse-compressed": ("examples/deepseek-v4-pro-gb300-fp8-tp8.yaml", {}),
    "recurrent": ("examples/qwen3.5-397b-a17b-b300-bf16-tp8.yaml", {}),
    "dcp-mla": (GUIDE, {"parallel.dcp": 8}),
    "dcp-mla-a2a": (GUIDE, {"parallel.dcp": 4, "engine.dcp_comm_backend": "a2a"}),
    "dcp-gqa-interleave": (
        "examples/llama-3.1-70b-instruct-h100-bf16-tp4.yaml",
        {"parallel.dcp": 4, "engine.cp_kv_cache_interleave_size": 16},
    ),
    "dcp-sparse": ("examples/glm-5-b300-fp8-tp8.yaml", {"parallel.dcp": 8}),
    "pcp-mla": ("aisimulate/deepseek-v3-b300-fp8-sglang-tp4.yaml", {"parallel.pcp": 2}),
}
# Where a prefill leaves the fast path for the reference (PCP split, DCP context gathers).
PREFILL_FALLBACK = {"dcp-mla", "dcp-mla-a2a", "dcp-sparse", "pcp-mla"}


@cache
def kernel(name: str) -> lk.Kernel:
    scenario, edits = DEPLOYMENTS[name]
    if not edits:
        return lk.open(scenario)
    inputs = lk.open_inputs(scenario)
    pool = inputs.deployment.pools[0]
    for key, value in edits.items():
        section, field = key.split(".")
        setattr(getattr(pool, section), field, value)
    return lk.new(inputs)
