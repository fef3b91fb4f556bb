"""price.attention.decode_read_tokens: the cached tokens one decode reads in one layer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from latencykernel.price.attention import decode_read_tokens


def oracle(ctx: int, top_k: int, window: int, ratio: int) -> float:
    """Walk the cache token by token: a sparse layer reads each of its top-k selected tokens
    whole and the rest as compressed entries (1/ratio each, none without a compressed
    cache); a windowed layer reads the last `window` tokens; otherwise every token."""
    read = 0.0
    for position in range(ctx):
        if top_k > 0:
            read += 1.0 if position < top_k else (1.0 / ratio if ratio > 0 else 0.0)
        elif window > 0:
            read += 1.0 if position >= ctx - window else 0.0
        else:
            read += 1.0
    return read


def test_values() -> None:
    assert decode_read_tokens(4096, 0, 0, 0) == 4096  # full attention
    assert decode_read_tokens(4096, 0, 128, 0) == 128  # a sliding window
    assert decode_read_tokens(100, 0, 128, 0) == 100  # a window longer than the context
    assert decode_read_tokens(65536, 2048, 0, 0) == 2048  # sparse top-k
    assert decode_read_tokens(1000, 2048, 0, 0) == 1000  # top-k above the context
    assert decode_read_tokens(10_000, 1024, 0, 4) == 1024 + (10_000 - 1024) / 4  # + compressed entries


@given(
    st.integers(0, 3000),
    st.sampled_from([0, 1, 64, 512, 2048]),
    st.sampled_from([0, 1, 128, 1000]),
    st.sampled_from([0, 1, 4, 128]),
)
def test_matches_a_token_by_token_walk(ctx: int, top_k: int, window: int, ratio: int) -> None:
    got = decode_read_tokens(ctx, top_k, window, ratio)
    assert abs(got - oracle(ctx, top_k, window, ratio)) <= 1e-9 * max(1.0, got)
