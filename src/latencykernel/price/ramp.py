"""GEMM efficiency: the fraction of a dtype's dense peak a matmul achieves."""

from __future__ import annotations

__all__ = ["efficiency", "shape_efficiency"]


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
        e *= m_tokens / (m_tokens + m_half_tokens)
    if k_half > 0 and k > 0:
        e *= k / (k + k_half)
    if n_half > 0 and n > 0:
        e *= n / (n + n_half)
    return e
