"""Score TTFT and TPOT against the shared InferenceX sweeps (and the report points of
scoreable.json), on a fit half, an evaluation half and all points.

    python bench/score_inferencex.py [--reference DIR] [--write-native OUT.json] [--json OUT.json] [--points]

The measurements are third-party data, not shipped: the script reads them from
../shared/reference/blis-latency-kernel/testdata/ beside this repository, turns them into
validate's native format (one point per sweep x concurrency: the sweep's embedded twin
scenario aisimulate/<file>, ISL/OSL from the label 1k1k / 1k8k / 8k1k, the dump's mean TPOT
and mean TTFT), prices them with the validation predictor and prints the tables.

Split rule (fixed, deterministic): a sweep belongs to the FIT half when the first byte of
sha256(sweep id) is even, else to the EVALUATION half; the sweep id is
"<scenario file stem>/<label>" (e.g. "llama-3.1-70b-instruct-h200-fp8-vllm-tp8/8k1k").
Report points are grouped by scenario+series and split the same way.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

from latencykernel.validation import (
    Deployment,
    Point,
    Stat,
    closed_form_prediction,
    serving_prediction,
    validate,
)
from latencykernel.validation.points import METRICS, STATS
from latencykernel.validation.readers import NATIVE_FORMAT
from latencykernel.validation.tables import headline, point_table, summary_table

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "blis-latency-kernel" / "testdata"
WORKLOADS = {"1k1k": (1024, 1024), "1k8k": (1024, 8192), "8k1k": (8192, 1024)}


def half(sweep: str) -> str:
    """'fit' or 'eval' by the stated split rule."""
    return "fit" if hashlib.sha256(sweep.encode()).digest()[0] % 2 == 0 else "eval"


def model_of(stem: str) -> str:
    for chip in ("-b200-", "-b300-", "-h100-", "-h200-"):
        if chip in stem:
            return stem.split(chip)[0]
    return stem


# InferenceX's client (the bench_serving fork it runs, --random-range-ratio 0.8, whose
# range is [0.8 L, L]) draws each prompt and output length uniform on [0.8 L, L]; NVIDIA's
# AISimulate artifact over the same dump samples ISL the same way (validation notes §4.3).
# As validate's symmetric range: mean 0.9 L, range ratio 1/9. --lengths fixed uses L itself.
RANGE_LOW = 0.8


# Engine settings a run used that the twin scenario does not carry, from the InferenceX
# launch script of the run's date (github.com/SemiAnalysisAI/InferenceX). TensorRT-LLM
# Llama: benchmarks/70b_fp4_b200_trt_slurm.sh, 70b_fp8_b200_trt_slurm.sh and
# 70b_fp8_h200_trt_slurm.sh (commits 1b563c858, 2025-09-18, to 9596d23d7, 2025-10-29; the
# dump's Llama TRT runs are dated 2025-10-23 and 2025-10-29) start trtllm-serve with
# `--max_num_tokens 16384` (the step's token budget, our max_num_batched_tokens; the twins
# state vLLM's 8192), and write `batch_wait_max_tokens_ratio: 0.9` and
# `batch_wait_timeout_iters: 20` into the LLM API options when ISL = OSL = 1024 and TP < 8,
# and neither otherwise. The dump's other TRT launch scripts (each read at its run's
# date) set no batch waiting, and their token budgets are: DeepSeek-R1
# (dsr1_fp8_h200_trt_slurm.sh at e06929c70, 2025-11-02; dsr1_fp4_b200_trt.sh at 6f6afc1cb,
# 2026-02-03, and benchmarks/single_node/ at 4f630348d, 2026-05-19) --max_num_tokens
# roundup64(CONC + ISL + 64), ISL the workload's nominal 1024 or 8192, at least 8192 from
# commit 64af5a771 (2026-01-21) on; GPT-OSS (gptoss_fp4_{b200,h200}_trt*.sh at f6a9d0b6a,
# 2025-12-15, to d2ee68c7c, 2026-05-18) 20000, with --max_batch_size 512 on B200 and $CONC
# on H200; MiniMax-M2.5 (single_node/fixed_seq_len/minimaxm2.5_fp4_{b200,b300}_trt.sh,
# 2026-06-12/13) max_num_tokens 16384, --max_batch_size $CONC, and scheduler_config
# capacity_scheduler_policy MAX_UTILIZATION (blocks as requests grow: kv_reservation
# on_demand); every other TRT script leaves TensorRT-LLM's default GUARANTEED_NO_EVICT
# (the twins' engine: trt reserves to completion, docs/serving.md).
DSR1_TRT_BUDGET_FLOOR_SINCE = "2026-01-21"
# SGLang's --chunked-prefill-size (the prompt tokens one step takes: our
# max_num_batched_tokens) in each sweep's launch script at its run's date (InferenceX
# benchmarks/[single_node/[fixed_seq_len/]]{dsr1,glm5,qwen3.5}_<precision>_<gpu>.sh, e.g.
# dsr1_fp4_b200_docker.sh at 7daaa8bb3, 2025-11-10; dsr1_fp8_b300.sh at f21079620,
# 2026-05-20, whose TP4 branch sets 8192; qwen3.5_fp8_h100.sh at b7ffc2879, 2026-07-05).
# Each scenario's sweeps share one value. GLM-5 H200 sets none: SGLang's default for the
# part is not pinned here, so the twin's stays. --max-running-requests never binds below
# a sweep's concurrency; --cuda-graph-max-bs is not priced. No SGLang sweep of the dump runs
# speculative decoding or data-parallel attention (the scripts' non-MTP variants).
SGLANG_CHUNKED_PREFILL = {
    "deepseek-v3-b200-fp4-sglang-tp4": 16384,
    "deepseek-v3-b200-fp4-sglang-tp8": 16384,
    "deepseek-v3-b200-fp8-sglang-tp8": 32768,
    "deepseek-v3-b300-fp8-sglang-tp4": 8192,
    "deepseek-v3-b300-fp8-sglang-tp8": 32768,
    "deepseek-v3-h200-fp8-sglang-tp8": 32768,
    "glm-5-b200-fp4-sglang-tp4": 32768,
    "glm-5-b200-fp8-sglang-tp8": 32768,
    "glm-5-b300-fp4-sglang-tp4": 32768,
    "glm-5-b300-fp8-sglang-tp8": 32768,
    "qwen3.5-397b-a17b-b200-bf16-sglang-tp8": 32768,
    "qwen3.5-397b-a17b-b200-fp4-sglang-tp2": 16384,
    "qwen3.5-397b-a17b-b200-fp8-sglang-tp4": 16384,
    "qwen3.5-397b-a17b-b200-fp8-sglang-tp8": 32768,
    "qwen3.5-397b-a17b-b300-bf16-sglang-tp4": 32768,
    "qwen3.5-397b-a17b-b300-bf16-sglang-tp8": 32768,
    "qwen3.5-397b-a17b-b300-fp4-sglang-tp4": 32768,
    "qwen3.5-397b-a17b-b300-fp8-sglang-tp4": 16384,
    "qwen3.5-397b-a17b-h100-fp8-sglang-tp8": 16384,
}
# SGLang's --scheduler-recv-interval in the same scripts at each run's date: (low, high,
# from) is `low` below `from` clients and `high` from there on (dsr1_fp4_b200_docker.sh at
# 7daaa8bb3 and dsr1_fp4_b200.sh at 1e53c97e0, dsr1_fp8_{b200,b300}.sh TP8 branch,
# qwen3.5_{bf16,fp8}_b200.sh, qwen3.5_bf16_b300.sh, qwen3.5_fp4_b300.sh: 10 / 30 from 16;
# qwen3.5_{fp4,fp8}_b200.sh at b7ffc2879: 30 above 4); a number is fixed (glm5_fp4_b200.sh,
# glm5_fp4_b300.sh, dsr1_fp8_b300.sh TP4 branch, qwen3.5_fp8_b300.sh at cf0aa5ba6: 10);
# qwen3.5_fp8_h100.sh at b7ffc2879 has a per-CONC table (2 at 1, 2, 4; 60 at 8, the
# sweep's points). The DeepSeek-R1 H200 and GLM-5 fp8 scripts set none (SGLang's 1).
SGLANG_RECV_INTERVAL: dict[str, int | tuple[int, int, int]] = {
    "deepseek-v3-b200-fp4-sglang-tp4": (10, 30, 16),
    "deepseek-v3-b200-fp4-sglang-tp8": (10, 30, 16),
    "deepseek-v3-b200-fp8-sglang-tp8": (10, 30, 16),
    "deepseek-v3-b300-fp8-sglang-tp4": 10,
    "deepseek-v3-b300-fp8-sglang-tp8": (10, 30, 16),
    "glm-5-b200-fp4-sglang-tp4": 10,
    "glm-5-b300-fp4-sglang-tp4": 10,
    "qwen3.5-397b-a17b-b200-bf16-sglang-tp8": (10, 30, 16),
    "qwen3.5-397b-a17b-b200-fp4-sglang-tp2": (10, 30, 5),
    "qwen3.5-397b-a17b-b200-fp8-sglang-tp4": (10, 30, 5),
    "qwen3.5-397b-a17b-b200-fp8-sglang-tp8": (10, 30, 16),
    "qwen3.5-397b-a17b-b300-bf16-sglang-tp4": (10, 30, 16),
    "qwen3.5-397b-a17b-b300-bf16-sglang-tp8": (10, 30, 16),
    "qwen3.5-397b-a17b-b300-fp4-sglang-tp4": (10, 30, 16),
    "qwen3.5-397b-a17b-b300-fp8-sglang-tp4": 10,
    "qwen3.5-397b-a17b-h100-fp8-sglang-tp8": (2, 60, 8),
}
# --max-num-seqs in InferenceX's vLLM launch scripts (SemiAnalysisAI/InferenceX at 843c625:
# benchmarks/70b_*_slurm.sh, benchmarks/single_node/fixed_seq_len/deprecated/*.sh): a number,
# CONC where the script passes the point's own concurrency ($CONC); a vLLM sweep whose script
# is not listed passes none (minimaxm2.5_fp4_b200.sh, _fp4_b300.sh, _fp8_b200.sh, _fp8_b300.sh,
# _fp8_h100.sh), so it ran vLLM's default for the part (resolve.settings.default_max_num_seqs
# over the catalog chip: 1024 on these >= 70 GiB parts). The embedded twins state 256, carried from the
# Go kernel's reference scenarios, which no run of the dump used.
CONC = -1
VLLM_MAX_NUM_SEQS = {
    "llama-3.1-70b-instruct-b200": 512,  # 70b_fp4_b200_slurm.sh, 70b_fp8_b200_slurm.sh
    "llama-3.1-70b-instruct-h100": CONC,  # 70b_fp8_h100_slurm.sh
    "llama-3.1-70b-instruct-h200": CONC,  # 70b_fp8_h200_slurm.sh
    "gpt-oss-120b-b200": 512,  # gptoss_fp4_b200.sh
    "gpt-oss-120b-h100": CONC,  # gptoss_fp4_h100.sh
    "gpt-oss-120b-h200": CONC,  # gptoss_fp4_h200.sh
    "kimi-k2.5-b200": CONC,  # kimik2.5_fp4_b200.sh
    "kimi-k2.5-b300": CONC,  # kimik2.5_fp4_b300.sh
}
# Settings one script version set that others of the same deployment did not, by (stem
# prefix, run date): each read in the script of that date (a vLLM sweep of another date
# takes the table above and vLLM's default token budget for its part, 8192 on these >= 70
# GiB parts, the twins' value). --max-num-batched-tokens "$((ISL * 2))" (ISL the
# workload's nominal 1024 or 8192; ISL2 below): kimik2.5_fp4_b200.sh at 2035a2117
# (2026-06-07), minimaxm2.5_fp4_{b200,b300}.sh at ea4f57513 (2026-06-04),
# minimaxm2.5_fp8_b200.sh at 2dca60196 (2026-05-31; its 2026-03-28 version sets none).
# single_node/fixed_seq_len/minimaxm2.5_fp8_h200.sh at d8933d70b (2026-06-05):
# MAX_NUM_SEQS 512 and MAX_NUM_BATCHED_TOKENS 32768 by default; its 2026-03-01, 03-28 and
# 05-17 versions (single_node/minimaxm2.5_fp8_h200.sh) set neither.
ISL2 = -2
VLLM_RUN_SETTINGS: dict[tuple[str, str], dict[str, int]] = {
    ("kimi-k2.5-b200-", "2026-06-07"): {"max_num_batched_tokens": ISL2},
    ("minimax-m2.5-b200-fp4-", "2026-06-04"): {"max_num_batched_tokens": ISL2},
    ("minimax-m2.5-b300-fp4-", "2026-06-04"): {"max_num_batched_tokens": ISL2},
    ("minimax-m2.5-b200-fp8-", "2026-05-31"): {"max_num_batched_tokens": ISL2},
    ("minimax-m2.5-h200-fp8-", "2026-06-05"): {"max_num_seqs": 512, "max_num_batched_tokens": 32768},
}


# Sweeps whose run laid the model out otherwise than the twin does (the twin's widths come
# from AISimulate's topology record): InferenceX .github/configs/nvidia-master.yaml at the
# runs' date (c8c6b3c04, 2026-06-04) lists minimaxm2.5-fp4-b200-vllm 1k1k at 256-1024
# clients as { tp: 2, ep: 2, dp-attn: true } and 8k1k at 128-512 as { tp: 2, ep: 2 }, and
# minimaxm2.5-fp4-b300-vllm 1k1k at 256-2048 as { tp: 2, ep: 2, dp-attn: true }; its launch
# script (benchmarks/single_node/fixed_seq_len/minimaxm2.5_fp4_{b200,b300}.sh) turns
# dp-attn into `--tensor-parallel-size=1 --data-parallel-size=$TP --enable-expert-parallel`
# and ep > 1 alone into `--tensor-parallel-size=$TP --enable-expert-parallel`: two GPUs
# either way, where the twins (tp2-ep4-dp2) hold four.
#
# The same file's older form (seq-len-configs, 2025-11-10: 58349bd4d) lists dsr1-fp4-b200-sglang
# at every client as { tp: 4, ep: 4 } and { tp: 8, ep: 8 } (SGLang's --ep-size: experts over
# the TP ranks), and the DeepSeek-R1 H200 TensorRT-LLM script of 2025-11-02
# (benchmarks/dsr1_fp8_h200_trt_slurm.sh at 94e7b1391's parent) sets EP_SIZE="$TP" for every
# run (--ep_size=8) and attention DP above 32 clients at 8k1k (enable_attention_dp: true,
# TP1 x DP8 attention): the twins state experts sharded over TP. A key "sweep@clients"
# states one point's layout (`python bench/audit_layouts.py` lists what the file holds).
RUN_LAYOUTS: dict[str, tuple[tuple[str, Any], ...]] = {
    "minimax-m2.5-b200-fp4-vllm-tp2-ep4-dp2/1k1k": (("tp", 1), ("dp", 2), ("enable_expert_parallel", True)),
    "minimax-m2.5-b200-fp4-vllm-tp2-ep4-dp2/8k1k": (("tp", 2), ("dp", 1), ("enable_expert_parallel", True)),
    "minimax-m2.5-b300-fp4-vllm-tp2-ep4-dp2/1k1k": (("tp", 1), ("dp", 2), ("enable_expert_parallel", True)),
    "deepseek-v3-b200-fp4-sglang-tp4/1k8k": (("enable_expert_parallel", True),),
    "deepseek-v3-b200-fp4-sglang-tp8/1k8k": (("enable_expert_parallel", True),),
    "deepseek-v3-h200-fp8-trt-tp8/1k1k": (("enable_expert_parallel", True),),
    "deepseek-v3-h200-fp8-trt-tp8/1k8k": (("enable_expert_parallel", True),),
    "deepseek-v3-h200-fp8-trt-tp8/8k1k": (("enable_expert_parallel", True),),
    "deepseek-v3-h200-fp8-trt-tp8/8k1k@64": (("tp", 1), ("dp", 8), ("enable_expert_parallel", True)),
}


# Compilation settings a run's launch script set that its twin does not state (the twins
# carry PIECEWISE and vLLM's split graph): benchmarks/70b_fp{4,8}_b200_docker.sh at both
# run dates (ac1998a50, 2025-10-23; 9596d23d7, 2025-10-29) pass a compilation config with
# "cudagraph_mode": "FULL_DECODE_ONLY" and "splitting_ops": [] (the whole model one compiled
# graph; its other settings, fusion passes and custom ops, are not priced).
RUN_SETTINGS: dict[str, tuple[tuple[str, Any], ...]] = {
    "llama-3.1-70b-instruct-b200-": (("cudagraph_mode", "FULL_DECODE_ONLY"), ("splitting_ops", ())),
}
# The KV cache's dtype where the run's launch script (at the run date) sets none, so the
# engine's default "auto", the model's dtype, ran (or sets "auto"); the twins state fp8
# throughout. Read in: dsr1_fp8_h200.sh (SGLang, 2026-03-25, 2026-05-17), glm5_fp8_h200.sh
# (2026-03-19, 2026-05-19), gptoss_fp4_h100.sh and gptoss_fp4_h200.sh (vLLM, 2026-03-27,
# 2026-05-17, 2026-05-30), gptoss_fp4_h200_trt{,_slurm}.sh (kv_cache_config dtype: auto;
# 2025-12-15, 2026-05-18), minimaxm2.5_fp8_h200.sh (2026-03-01, 2026-03-28, 2026-05-17; its 2026-06-05 version sets
# fp8), qwen3.5_bf16_b200.sh (2026-02-20, 2026-07-04) and qwen3.5_bf16_b300.sh (2026-05-18).
# Every other sweep's script sets fp8 (fp8_e4m3 for SGLang), but kimik2.5_fp4_b300.sh
# (2026-06-07, 2026-08-07), which sets none: its checkpoint (nvidia/Kimi-K2.5-NVFP4, ModelOpt)
# quantises the KV cache to fp8 itself, and the 8k1k run held 256 clients' contexts
# (2.78 s TTFT), which a bf16 latent cache on four B300s cannot.
KV_AUTO: dict[str, frozenset[str]] = {
    "deepseek-v3-h200-fp8-sglang-": frozenset({"2026-03-25", "2026-05-17"}),
    "glm-5-h200-fp8-sglang-": frozenset({"2026-03-19", "2026-05-19"}),
    "gpt-oss-120b-h100-fp4-vllm-": frozenset({"2026-03-27", "2026-05-17"}),
    "gpt-oss-120b-h200-fp4-vllm-": frozenset({"2026-03-27", "2026-05-30"}),
    "gpt-oss-120b-h200-fp4-trt-": frozenset({"2025-12-15", "2026-05-18"}),
    "minimax-m2.5-h200-fp8-vllm-": frozenset({"2026-03-01", "2026-03-28", "2026-05-17"}),
    "qwen3.5-397b-a17b-b200-bf16-sglang-": frozenset({"2026-02-20", "2026-07-04"}),
    "qwen3.5-397b-a17b-b300-bf16-sglang-": frozenset({"2026-05-18"}),
}


# The CUDA-graph mode of the vLLM runs whose scripts state none: vLLM's default, which
# v0.11.0 turned to FULL_AND_PIECEWISE ("This releases turns on FULL_AND_PIECEWISE as the
# CUDA graph mode default", the v0.11.0 release notes). The 2025-10 Llama-3.1-70B Hopper
# runs ran vllm/vllm-openai:v0.10.2 (.github/workflows/70b-tmpl.yml at 9596d23d7), whose
# default is the twins' PIECEWISE; every vLLM run of 2026 ran v0.13.0 or later
# (.github/configs/nvidia-master.yaml at the run dates). minimaxm2.5_fp8_h200.sh states
# "cudagraph_mode": "PIECEWISE" from its 2026-05-30 version on (the 2026-06-05 runs).
VLLM_DEFAULT_FULL_AND_PIECEWISE_SINCE = "2026-01-01"
VLLM_STATED_PIECEWISE: dict[str, str] = {"minimax-m2.5-h200-fp8-vllm-": "2026-05-30"}


def run_settings(stem: str, framework: str, run_date: str = "") -> tuple[tuple[str, Any], ...]:
    """The engine settings the sweep's run stated beside its twin: a vLLM run's compilation
    settings (RUN_SETTINGS, else the CUDA-graph mode its vLLM took by default) and the KV
    dtype where the run took the engine's default (KV_AUTO)."""
    out: list[tuple[str, Any]] = []
    if framework == "vllm":
        for prefix, settings in RUN_SETTINGS.items():
            if stem.startswith(prefix):
                out.extend(settings)
        stated = any(stem.startswith(p) and run_date >= d for p, d in VLLM_STATED_PIECEWISE.items())
        if not out and not stated and run_date >= VLLM_DEFAULT_FULL_AND_PIECEWISE_SINCE:
            out.append(("cudagraph_mode", "FULL_AND_PIECEWISE"))
    for prefix, dates in KV_AUTO.items():
        if stem.startswith(prefix) and run_date in dates:
            out.append(("cache_dtype", "auto"))
    return tuple(sorted(out))
    for prefix, settings in RUN_SETTINGS.items():
        if stem.startswith(prefix):
            return settings
    return ()


def run_layout(sweep: str, clients: int) -> tuple[tuple[str, Any], ...]:
    """The widths a point's run stated beside its twin: its own "sweep@clients" entry of
    RUN_LAYOUTS, else its sweep's, else none."""
    return RUN_LAYOUTS.get(f"{sweep}@{clients}", RUN_LAYOUTS.get(sweep, ()))


def sglang_recv_interval(stem: str, concurrency: int) -> int:
    """SGLang's --scheduler-recv-interval in the sweep's launch script (1: not set)."""
    rule = SGLANG_RECV_INTERVAL.get(stem)
    if rule is None:
        return 1
    if isinstance(rule, int):
        return rule
    low, high, from_conc = rule
    return high if concurrency >= from_conc else low


@functools.cache
def vllm_default_max_num_seqs(chip: str) -> int:
    """vLLM's OpenAI-server max_num_seqs default on a catalog chip."""
    from latencykernel.documents.chip import load_chip
    from latencykernel.repos import Repos
    from latencykernel.resolve.settings import default_max_num_seqs

    doc = load_chip(Repos.default().chip_path(chip))
    return default_max_num_seqs(doc.name, doc.MemoryGiB)


def engine_settings(
    stem: str, framework: str, label: str, concurrency: int, chip: str, run_date: str = ""
) -> dict[str, Any]:
    """Point keyword arguments for the engine settings the sweep's run stated (or, where it
    stated none, the engine default it ran with)."""
    m = re.search(r"-tp(\d+)$", stem)
    tp = int(m.group(1)) if m else 0
    out: dict[str, Any] = {}
    if framework == "trt" and stem.startswith("llama-3.1-70b-instruct-"):
        out["max_num_batched_tokens"] = 16384
        if label == "1k1k" and 0 < tp < 8:
            out |= {"batch_wait_timeout_iters": 20, "batch_wait_max_tokens_ratio": 0.9}
        return out
    if framework == "trt" and stem.startswith("deepseek-v3-"):
        budget = (concurrency + WORKLOADS[label][0] + 64 + 63) // 64 * 64
        if run_date >= DSR1_TRT_BUDGET_FLOOR_SINCE:
            budget = max(budget, 8192)
        return {"max_num_batched_tokens": budget}
    if framework == "trt" and stem.startswith("gpt-oss-120b-"):
        return {"max_num_batched_tokens": 20000, "max_num_seqs": 512 if chip == "b200" else concurrency}
    if framework == "trt" and stem.startswith("minimax-m2.5-"):
        return {"max_num_batched_tokens": 16384, "max_num_seqs": concurrency, "kv_reservation": "on_demand"}
    if framework == "sglang":
        if stem in SGLANG_CHUNKED_PREFILL:
            out["max_num_batched_tokens"] = SGLANG_CHUNKED_PREFILL[stem]
        recv = sglang_recv_interval(stem, concurrency)
        if recv > 1:
            out["scheduler_recv_interval"] = recv
        return out
    if framework == "vllm":
        key = re.sub(r"-(fp8|fp4|bf16)-vllm-.*$", "", stem)
        seqs = VLLM_MAX_NUM_SEQS.get(key) or vllm_default_max_num_seqs(chip)
        out = {"max_num_seqs": concurrency if seqs == CONC else seqs}
        for (prefix, date), run in VLLM_RUN_SETTINGS.items():
            if stem.startswith(prefix) and run_date == date:
                out |= {k: 2 * WORKLOADS[label][0] if v == ISL2 else v for k, v in run.items()}
        return out
    return {}


def inferencex_points(path: Path, lengths: str = "inferencex") -> list[Point]:
    data = json.loads(path.read_text())
    out = []
    for a in data["anchors"]:
        stem = a["scenario"].removesuffix(".yaml")
        isl, osl = WORKLOADS[a["label"]]
        ratio = 0.0
        if lengths == "inferencex":
            isl, osl = round(isl * (1 + RANGE_LOW) / 2), round(osl * (1 + RANGE_LOW) / 2)
            ratio = (1 - RANGE_LOW) / (1 + RANGE_LOW)
        sweep = f"{stem}/{a['label']}"
        for c, tpot_us in a["absolute_tpot_us"].items():
            ttft_us = a["absolute_ttft_us"].get(c)
            dep = Deployment(
                scenario="aisimulate/" + a["scenario"],
                parallel=run_layout(sweep, int(c)),
                settings=run_settings(stem, a["framework"], str(a.get("source_run_date", ""))),
            )
            out.append(
                Point(
                    sweep=sweep,
                    deployment=dep,
                    isl=isl,
                    osl=osl,
                    concurrency=int(c),
                    tpot=Stat(mean=float(tpot_us) * 1e-6),
                    ttft=Stat(mean=float(ttft_us) * 1e-6) if ttft_us else Stat(),
                    engine=a["framework"],
                    chip=a["gpu"],
                    model=model_of(stem),
                    source=f"InferenceX {data.get('release_tag', '')} via inferencex_absolutes.json",
                    range_ratio=ratio,
                    **engine_settings(
                        stem, a["framework"], a["label"], int(c), a["gpu"], str(a.get("source_run_date", ""))
                    ),
                )
            )
    return out


def report_points(path: Path, testdata: Path) -> list[Point]:
    """scoreable.json points with stated ISL/OSL and concurrency (ITL read as TPOT: the
    reports' ITL is a per-request mean over a fixed-concurrency run). Each is priced on the
    embedded twin of its reference scenario (``reports/<name>.yaml``, tools/gen_scenarios.py
    REPORT_SCENARIOS) where there is one, else on the reference file itself."""
    from latencykernel.repos import Repos

    scenarios = Repos.default().scenarios
    out = []
    for r in json.loads(path.read_text()):
        if r.get("isl") is None or r.get("osl") is None:
            continue
        stem = r["scenario"].removesuffix(".yaml")
        twin = f"reports/{r['scenario']}"
        scenario = twin if (scenarios / twin).is_file() else str(testdata / r["scenario"])
        out.append(
            Point(
                sweep=f"{stem}/{r['series']}",
                deployment=Deployment(scenario=scenario),
                isl=float(r["isl"]),
                osl=float(r["osl"]),
                concurrency=int(r["concurrency"]),
                tpot=Stat(mean=float(r["itl_ms"]) * 1e-3),
                ttft=Stat(mean=float(r["ttft_ms"]) * 1e-3) if r.get("ttft_ms") else Stat(),
                engine="vllm",
                source=f"report {r['report']}",
                # the report's prefix cache hit rate (hit_pct, per cent of prompt tokens); a
                # Point takes [0, 1), and vLLM computes a prompt's last token on any hit
                prefix_hit_rate=min(float(r.get("hit_pct") or 0.0) / 100.0, 0.999),
            )
        )
    return out


def report_unstated(path: Path) -> dict[str, int]:
    """scoreable.json series left unscored because they state no ISL/OSL (only token rates):
    series -> number of points."""
    out: dict[str, int] = {}
    for r in json.loads(path.read_text()):
        if r.get("isl") is None or r.get("osl") is None:
            key = f"{r['scenario'].removesuffix('.yaml')}/{r['series']}"
            out[key] = out.get(key, 0) + 1
    return out


def report_table(scored: list[Any]) -> str:
    """One line per report point: measured and predicted mean TPOT (the report's ITL) and
    TTFT, or why the point is not priced."""
    lines = [f"{'series':40s} {'c':>5s} {'isl':>7s} {'tpot m':>8s} {'tpot p':>8s} {'ttft m':>9s} {'ttft p':>9s}"]
    for s in scored:
        p = s.point
        head = f"{p.sweep:40s} {p.concurrency:5d} {p.isl:7.0f}"
        if s.prediction is None:
            lines.append(f"{head}  not priced: {s.error}")
            continue
        cells = []
        for m in ("tpot", "ttft"):
            meas, pred = getattr(p, m).mean, getattr(s.prediction, m).mean
            cells += [f"{meas * 1e3:8.2f}" if meas else f"{'-':>8s}", f"{pred * 1e3:8.2f}" if pred else f"{'-':>8s}"]
        lines.append(f"{head} {cells[0]} {cells[1]} {cells[2]:>9s} {cells[3]:>9s} (ms)")
    return "\n".join(lines)


def native(points: list[Point]) -> dict[str, Any]:
    rows = []
    for p in points:
        row: dict[str, Any] = {
            "sweep": p.sweep,
            "scenario": p.deployment.scenario,
            **({"parallel": dict(p.deployment.parallel)} if p.deployment.parallel else {}),
            **(
                {"settings": {k: list(v) if isinstance(v, tuple) else v for k, v in p.deployment.settings}}
                if p.deployment.settings
                else {}
            ),
            "engine": p.engine,
            "chip": p.chip,
            "model": p.model,
            "isl": p.isl,
            "osl": p.osl,
            "concurrency": p.concurrency,
            "split": half(p.sweep),
            "range_ratio": p.range_ratio,
        }
        if p.batch_wait_timeout_iters:
            row["batch_wait_timeout_iters"] = p.batch_wait_timeout_iters
            row["batch_wait_max_tokens_ratio"] = p.batch_wait_max_tokens_ratio
        if p.max_num_seqs:
            row["max_num_seqs"] = p.max_num_seqs
        if p.max_num_batched_tokens:
            row["max_num_batched_tokens"] = p.max_num_batched_tokens
        if p.kv_reservation:
            row["kv_reservation"] = p.kv_reservation
        if p.scheduler_recv_interval:
            row["scheduler_recv_interval"] = p.scheduler_recv_interval
        if p.prefix_hit_rate:
            row["prefix_hit_rate"] = p.prefix_hit_rate
        for m in METRICS:
            for st in STATS:
                v = getattr(p, m).get(st)
                if v is not None:
                    row[f"{m}_{st}_ms"] = v * 1e3
        rows.append(row)
    return {"format": NATIVE_FORMAT, "points": rows}


def plot(scored: list[Any], out: Path, method: str) -> None:
    """Predicted against measured mean TPOT and TTFT, fit and evaluation halves apart."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 5.2))
    for ax, metric, label in ((axes[0], "tpot", "mean TPOT (ms)"), (axes[1], "ttft", "mean TTFT (ms)")):
        lo, hi = math.inf, 0.0
        for name, colour in (("fit", "tab:blue"), ("eval", "tab:orange")):
            xs, ys = [], []
            for s in scored:
                if s.prediction is None or half(s.point.sweep) != name:
                    continue
                m, p = getattr(s.point, metric).mean, getattr(s.prediction, metric).mean
                if m and p:
                    xs.append(m * 1e3)
                    ys.append(p * 1e3)
            if xs:
                lo, hi = min(lo, *xs, *ys), max(hi, *xs, *ys)
                ax.scatter(xs, ys, s=7, alpha=0.55, color=colour, label=f"{name} half ({len(xs)} points)")
        if hi > 0:
            ax.plot([lo, hi], [lo, hi], color="k", lw=0.8)
            for f in (0.8, 1.25):
                ax.plot([lo, hi], [lo * f, hi * f], color="grey", lw=0.6, ls="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"measured {label}")
        ax.set_ylabel(f"predicted {label}")
        ax.grid(True, which="both", lw=0.3, alpha=0.5)
        ax.legend(loc="upper left", fontsize=8)
    fig.suptitle(f"InferenceX sweeps, predicted vs measured: {method}; dashed: ±25 %", fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", type=Path, default=REFERENCE, help="testdata directory of the reference copy")
    ap.add_argument("--write-native", type=Path, help="also write the points in validate's native JSON format")
    ap.add_argument("--json", type=Path, help="write the scored points and summaries as JSON")
    ap.add_argument("--points", action="store_true", help="print every point")
    ap.add_argument("--plot", type=Path, help="save a predicted-vs-measured chart (PNG, matplotlib Agg)")
    ap.add_argument("--groups", default="chip,engine,model,band", help="summary groupings")
    ap.add_argument(
        "--lengths",
        choices=("inferencex", "fixed"),
        default="inferencex",
        help="request lengths: InferenceX's uniform [0.8 L, L] draw (default) or L exactly",
    )
    ap.add_argument(
        "--predictor", choices=("default", "serving", "closed-form"), default="default", help="which predictor"
    )
    args = ap.parse_args(argv)
    meas = args.reference / "measurements"
    pts = inferencex_points(meas / "inferencex_absolutes.json", args.lengths)
    reports = report_points(meas / "scoreable.json", args.reference)
    if args.write_native:
        args.write_native.write_text(json.dumps(native(pts + reports), indent=1) + "\n")
    pred = {"default": None, "serving": serving_prediction, "closed-form": closed_form_prediction}[args.predictor]
    rep = validate(points=pts + reports, predictor=pred)
    by = tuple(g for g in args.groups.split(",") if g)
    ix = [s for s in rep.scored if s.point.source.startswith("InferenceX")]
    rp = [s for s in rep.scored if not s.point.source.startswith("InferenceX")]
    print(f"method: {rep.method}")
    print(
        f"split: sha256(sweep id)[0] even -> fit; {len({s.point.sweep for s in ix})} InferenceX sweeps, "
        f"{len({s.point.sweep for s in ix if half(s.point.sweep) == 'fit'})} fit"
    )
    unpriced = [s for s in ix if s.prediction is None]
    print(
        f"InferenceX points {len(ix)}, priced {len(ix) - len(unpriced)}, "
        f"sweeps not priced {len({s.point.sweep for s in unpriced})}"
    )
    for name, sel in (
        ("fit", [s for s in ix if half(s.point.sweep) == "fit"]),
        ("eval", [s for s in ix if half(s.point.sweep) == "eval"]),
        ("all", ix),
    ):
        print(
            f"\n== InferenceX {name} half: {headline(sel)}"
            if name != "all"
            else f"\n== InferenceX all: {headline(sel)}"
        )
    for name, sel in (
        ("fit", [s for s in ix if half(s.point.sweep) == "fit"]),
        ("eval", [s for s in ix if half(s.point.sweep) == "eval"]),
        ("all", ix),
    ):
        print(f"\n---------- {name} ----------")
        print(summary_table(sel, "tpot mean", "shape", f"TPOT shape ({name})", by))
        print(summary_table(sel, "tpot mean", "point", f"TPOT level, every point ({name})", by))
        print(summary_table(sel, "ttft mean", "point", f"TTFT level, every point ({name})", by))
    print("\n---------- report points (scoreable.json, stated ISL/OSL) ----------")
    print(f"{headline(rp)}")
    print(report_table(rp))
    for series, n in report_unstated(meas / "scoreable.json").items():
        print(f"not scored: {series} ({n} points): no stated ISL/OSL")
    if args.points:
        print(point_table(rep.scored))
    if args.plot:
        plot(ix, args.plot, rep.method)
    if args.json:
        from latencykernel.validation.tables import report_json

        args.json.write_text(json.dumps(report_json(rep), indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
