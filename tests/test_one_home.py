"""Every law has one home in ``price/``: its arithmetic is not retyped elsewhere, and the
fused and vectorised paths agree with the laws term by term (issue 9)."""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

import numpy as np
import pytest

from _deployments import DEPLOYMENTS, kernel
from latencykernel.kernel import vector
from latencykernel.price.attention import (
    causal_flops_per_qk_dim,
    decode_attention_s,
    decode_read_tokens,
    layer_kv_bytes_per_token,
    secondary_kv_bytes_per_token,
    windowed_causal_flops_per_qk_dim,
)
from latencykernel.price.collective import LARGE_MESSAGE_BYTES, collective_time_s
from latencykernel.price.context import dcp_rank_tokens
from latencykernel.price.experts import expert_miss_probability, experts_touched, routed_expert_flops
from latencykernel.price.ramp import efficiency, shape_efficiency

SRC = Path(__file__).resolve().parents[1] / "src" / "latencykernel"

# The arithmetic of a law, as it would be retyped: (law, pattern).
FINGERPRINTS = [
    ("attention.causal_flops_per_qk_dim", r"\b(\w+) \* \1 / 2"),
    ("attention.windowed_causal_flops_per_qk_dim", r"\* \((\w+) - 1\) / 2"),
    ("attention.layer_kv_bytes_per_token", r"max\([\w.]*kv_layers, 1\)"),
    ("attention.secondary_kv_bytes_per_token", r"kv_heads \* [\w.]*head_dim\) / \("),
    ("context.dcp_rank_tokens", r"//\s*(cyc|cycle)\b"),
    ("context.dcp_decode_payload_bytes_per_row", r"\(ow \+ 2\)"),
    ("experts.expert_miss_probability", r"\((\w+) - (\w+)\) / \1\b"),
    ("ramp.saturation", r"\b(\w+) / \(\1 \+ "),
    ("ramp.sm_budget_derate", r"sm_count / budget|smc / bud"),
    ("overlap.layer_stage_s", r"max\(sm - routed_sm"),
]


def _outside_price() -> list[Path]:
    """The step price's other rooms: the kernel (reference, fused, vectorised), the plan and
    resolve. (The scenario library's teaching formulas are its own subject.)"""
    return [*(SRC / "kernel").glob("*.py"), *(SRC / "resolve").glob("*.py"), SRC / "plan.py"]


def test_no_law_is_retyped_outside_price() -> None:
    """Guards a second home: a law's formula typed again in the kernel, plan or resolve. The
    vectorised path may mirror a law only on a line that names it (``# price.<module>.<law>``
    on the line, or within the three lines above, or in its helper's docstring)."""
    wrong = []
    for path in _outside_price():
        lines = path.read_text().splitlines()
        for law, pattern in FINGERPRINTS:
            for i, line in enumerate(lines):
                code = line.split("#")[0]
                if not re.search(pattern, code):
                    continue
                window = "\n".join(lines[max(0, i - 3) : i + 1])
                if path.name == "vector.py" and f"price.{law}" in window:
                    continue
                wrong.append(f"{path.relative_to(SRC)}:{i + 1} retypes price.{law}: {line.strip()}")
    assert not wrong, wrong


def test_every_mirror_comment_names_a_law() -> None:
    """Guards a stale citation: every ``price.<module>.<law>`` a kernel file names exists."""
    import importlib

    for path in (SRC / "kernel").glob("*.py"):
        for mod, fn in re.findall(r"price\.(\w+)\.(\w+)", path.read_text()):
            m = importlib.import_module(f"latencykernel.price.{mod}")
            assert fn in m.__all__, f"{path.name} names price.{mod}.{fn}, which is not a law"


RNG = np.random.default_rng(11)
S = RNG.integers(1, 2**31, 2000).astype(np.float64)
C = RNG.integers(0, 2**31, 2000).astype(np.float64)


def test_vectorised_causal_flops_are_the_law() -> None:
    """Guards the numpy causal-pair formula drifting from the law (bit for bit)."""
    got = vector._causal_flops(S, C)
    assert got.tolist() == [causal_flops_per_qk_dim(int(s), int(c)) for s, c in zip(S, C)]


@pytest.mark.parametrize("window", [1, 128, 4096, 2**20])
def test_vectorised_windowed_flops_are_the_law(window: int) -> None:
    """Guards the numpy windowed-pair formula drifting from the law (bit for bit)."""
    s = RNG.integers(1, 2**20, 2000).astype(np.float64)
    c = RNG.integers(0, 2**20, 2000).astype(np.float64)
    got = vector._windowed_causal_flops(s, c, window)
    assert got.tolist() == [windowed_causal_flops_per_qk_dim([(int(a), int(b))], window) for a, b in zip(s, c)]


@pytest.mark.parametrize(("dcp", "interleave"), [(2, 1), (4, 16), (8, 64), (3, 7)])
def test_vectorised_dcp_rank_tokens_are_the_law(dcp: int, interleave: int) -> None:
    """Guards the numpy DCP deal drifting from ``price.context.dcp_rank_tokens``."""
    n = RNG.integers(0, 2**40, 2000)
    assert vector._dcp_rank_tokens(n, dcp, interleave).tolist() == [dcp_rank_tokens(int(x), dcp, interleave) for x in n]


@pytest.mark.parametrize(("top_k", "window", "ratio"), [(2048, 0, 0), (2048, 0, 4), (0, 4096, 0)])
def test_vectorised_decode_reads_are_the_law(top_k: int, window: int, ratio: int) -> None:
    """Guards the numpy generic read bound drifting from ``decode_read_tokens``."""
    from latencykernel.kernel.fast import T_GENERIC, ReadLaw

    ctx = RNG.integers(0, 2**20, 500)
    st = np.arange(500)
    got = vector._transform(ReadLaw(T_GENERIC, top_k, window, ratio, 1, 1), ctx, st, st, lambda v: v, 500)
    assert got.tolist() == [decode_read_tokens(int(x), top_k, window, ratio) for x in ctx]


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-18)


@pytest.mark.parametrize("name", sorted(DEPLOYMENTS))
def test_fused_coefficients_are_the_laws(name: str) -> None:
    """Guards a fused coefficient folded from a formula that is not the law: each term of
    every layer kind, evaluated at random token counts, equals the law evaluated directly."""
    k = kernel(name)
    c, fp = k.constants, k._fast
    assert fp is not None
    rng = random.Random(name)
    layout = c.layout
    funnel = layout.dp if (layout.moe_group > 1 and layout.dp > 1) else 1
    dp_slice = c.expert_tensor_shards / c.tp if layout.expert_width <= 1 else 1.0
    kvpt = layer_kv_bytes_per_token(c.kv_bytes_per_token, c.kv_layers)
    for lp, kc in zip(c.plan.layers, fp.kinds):
        for _ in range(5):
            T = rng.randint(1, 2**20)
            Y = (T + fp.m_half) * fp.inv_pe
            ramp = efficiency(T, c.eps_max, c.m_half)
            # the dense linears (and shared experts) at their own half point: fast.py's Yl
            Yl = (T + fp.linear_m_half) * fp.inv_pe
            linear_ramp = efficiency(T, c.eps_max, c.linear_m_half)
            if c.shape_aware:
                want = 0.0
                for g in lp.gemms:
                    n, kk = (g.n / c.tp, g.k) if g.shard_n else (g.n, g.k / c.tp)
                    want += (
                        T
                        * g.flops_per_token
                        / c.tp
                        / (
                            c.peak_flops_per_s
                            * shape_efficiency(T, n, kk, c.eps_max, c.linear_m_half, c.n_half, c.k_half)
                        )
                    )
                shared = (
                    T * lp.shared_expert_flops_per_token / c.tp if lp.expert_flops_per_token_per_expert > 0 else 0.0
                )
                want += shared / (c.peak_flops_per_s * linear_ramp)
            else:
                flops = T * lp.dense_flops_per_token / c.tp
                if lp.expert_flops_per_token_per_expert > 0:
                    flops += T * lp.shared_expert_flops_per_token / c.tp
                want = flops / (c.peak_flops_per_s * linear_ramp)
            assert close(kc.dense_g * Yl, want)
            if kc.expert is not None:
                routed = routed_expert_flops(
                    T * funnel,
                    lp.top_k,
                    c.local_expert_share,
                    lp.expert_flops_per_token_per_expert,
                    c.moe_imbalance,
                    dp_slice,
                )
                assert close(kc.routed_g * Y, routed / (c.peak_flops_per_s * ramp))
                touched = experts_touched(
                    T * funnel, c.total_experts, lp.top_k, c.experts_per_rank, c.moe_concentration
                )
                want = lp.expert_weight_bytes_per_expert / c.expert_tensor_shards * touched / c.hbm_bytes_per_s
                q, z, a, r = kc.expert
                assert q == expert_miss_probability(c.total_experts, lp.top_k)
                if a > 0.0:  # the skewed form of expert_miss_fraction, its rate -ln q / alpha folded
                    assert a == c.moe_concentration and close(r * a, -math.log(q))
                    assert close(z * (1.0 - (1.0 + T * funnel * r) ** -a), want)
                else:
                    assert close(z * (1.0 - q ** (T * funnel)), want)
            if kc.attn is not None and kc.attn.hbm_s_per_read_token is None:
                a = lp.primary
                assert a is not None
                floor, rate = c.attention_pair(a.kind)
                tok = rng.randint(0, 2**30)
                assert close(
                    kc.attn.floor_s + tok * kc.attn.s_per_read_token, decode_attention_s(tok, kvpt, floor, rate)
                )
                secs = [s for s in lp.attentions if not s.holds_kv and c.attention_pair(s.kind)[1] > 0]
                for s2, sc in zip(secs, kc.attn.secondaries):
                    f2, r2 = c.attention_pair(s2.kind)
                    per = secondary_kv_bytes_per_token(kvpt, s2.kv_heads, s2.head_dim, a.kv_heads, a.head_dim)
                    assert close(sc.floor_s + tok * sc.s_per_read_token, decode_attention_s(tok, per, f2, r2))
    for ch in fp.colls:
        T = rng.randint(1, 2**20)
        b = T * ch.bytes_per_unit
        transition = 1 / ch.inv_transition_s_per_byte if ch.inv_transition_s_per_byte else 0.0
        itr, ipk, k = ch.inv_transition_s_per_byte, ch.inv_peak_s_per_byte, LARGE_MESSAGE_BYTES
        first = ch.floor_s + (k * itr + (b - k) * ipk if b > k and itr > ipk else b * itr)
        assert close(max(first, b * ipk), collective_time_s(b, transition, 1 / ipk, ch.floor_s))
