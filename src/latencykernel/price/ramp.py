"""GEMM efficiency: the fraction of a dtype's dense peak a matmul achieves."""

from __future__ import annotations

__all__ = ["efficiency", "gemm_read_beyond_compute_s", "saturation", "shape_efficiency", "sm_budget_derate"]


def efficiency(m_tokens: float, eps_max: float, m_half_tokens: float) -> float:
    """Efficiency ramp in the step's token count M.

    eff(M) = eps_max · M / (M + M_half)

    0 when M <= 0 or eps_max <= 0; eps_max when M_half <= 0. Fitted per chip and dtype
    on the envelope of measured GEMM efficiency (cost-model-primitives).
    """
    if m_tokens <= 0 or eps_max <= 0:
        return 0.0
    if m_half_tokens <= 0:
        return eps_max
    return eps_max * m_tokens / (m_tokens + m_half_tokens)


def saturation(x: float, x_half: float) -> float:
    """One dimension's factor of the shape-aware ramp: how full a matmul of extent ``x`` is.

    saturation(x) = x / (x + x_half)

    1 when the half point or the extent is not positive (the factor is left out). The fused
    path folds a GEMM's N and K factors with this at construction.
    """
    if x_half <= 0 or x <= 0:
        return 1.0
    return x / (x + x_half)


def shape_efficiency(
    m_tokens: float,
    n: float,
    k: float,
    eps_max: float,
    m_half_tokens: float,
    n_half: float,
    k_half: float,
) -> float:
    """Shape-aware efficiency: the ramp in M times one in each of the rank-local N and K.

    eff(M, N, K) = eps_max · M/(M + M_half) · K/(K + K_half) · N/(N + N_half)

    A factor is left out when its half point (or its dimension) is not positive.
    """
    if m_tokens <= 0 or eps_max <= 0:
        return 0.0
    e = eps_max
    if m_half_tokens > 0:
        e *= saturation(m_tokens, m_half_tokens)
    if k_half > 0 and k > 0:
        e *= saturation(k, k_half)
    if n_half > 0 and n > 0:
        e *= saturation(n, n_half)
    return e


def sm_budget_derate(sm_count: int, sm_budget: int) -> float:
    """How much slower SM work runs when a step may use only ``sm_budget`` of the chip's SMs.

    derate = sm_count / sm_budget     when 0 < sm_budget < sm_count
           = 1                        otherwise (no budget, or a budget of the whole chip)

    ``Batch.sm_budget`` restricts a step to that many SMs; its compute-bound terms are
    assumed to scale linearly with the SMs they get (the Go kernel's rule); memory, fabric
    and host time are not derated.
    """
    budget = sm_budget if sm_budget > 0 and sm_count > 0 else sm_count
    return sm_count / budget if 0 < budget < sm_count else 1.0


def gemm_read_beyond_compute_s(compute_s: float, weight_read_s: float) -> float:
    """Weight-read seconds a GEMM adds beyond its own compute, when the two overlap.

    extra = max(0, read − compute),  so  compute + extra = max(compute, read)

    The efficiency ramp is fitted on measured GEMM kernel times (cost-model-primitives:
    the per-M envelope of achieved fraction of peak, AISimulate's GEMM sweeps), and a GEMM
    kernel streams its weights while it computes: at small M the ramp's near-constant time
    T·F/(peak·eff(T)) ≈ F·M_half/(peak·eps_max) already is that kernel's memory-bound time.
    Adding the weight read on top counts it twice. Evidence (InferenceX, fit half of the
    sha256 split, bench/analyse_fit.py): dense Llama-3.1-70B sweeps' fixed part was priced
    1.40x the measured one (median over 50 fit sweeps; TP1 H200 fp8: 32.6 ms priced, of
    which 11.2 ms GEMM ramp and 19.6 ms weight read, against 21.0 ms measured), their
    per-request slope matched once prefill interleaving was counted.

    Only the resource totals (``no_overlap``) take the extra; the overlapped layer stage
    still sees the whole read (compute and read run at once, so the stage is at least
    max(compute, read)), which keeps ``overlap`` from falling when a request adds compute.
    """
    extra = weight_read_s - compute_s
    return extra if extra > 0.0 else 0.0
