"""SLO parsing and checking, and the price table."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from latencykernel.errors import DocumentError, LatencyKernelError
from latencykernel.search import load_prices, parse_seconds, parse_slo
from latencykernel.search.prices import DEFAULT_PRICES_FILE


def test_keys_pick_metric_and_statistic() -> None:
    """Guards a percentile target checked against the mean: ``ttft_p99`` reads the p99 TTFT,
    a bare ``tpot`` the mean TPOT; units convert to seconds."""
    slo = parse_slo({"tpot": "50ms", "ttft_p99": 2, "e2el_median": "1.5min", "itl_p95": "800us"})
    got = {(t.metric, t.statistic): t.limit_s for t in slo.targets}
    assert got == {("tpot", "mean"): 0.05, ("ttft", "p99"): 2.0, ("e2el", "median"): 90.0, ("itl", "p95"): 0.0008}
    figs = {"tpot_mean_s": 0.05, "ttft_p99_s": 2.5, "e2el_median_s": 10.0, "itl_p95_s": 0.0001}
    assert slo.misses(figs) == ("ttft p99 <= 2000 ms",)
    assert slo.misses({**figs, "ttft_p99_s": 2.0}) == ()  # at the limit is met
    assert len(slo.misses({})) == 4  # a missing figure fails every target
    assert slo.misses({**figs, "ttft_p99_s": math.nan}) == ("ttft p99 <= 2000 ms",)


@pytest.mark.parametrize(
    "slo",
    [
        {"ttfb": 1},
        {"ttft_p50": 1},
        {"tpot": 0},
        {"tpot": -1},
        {"tpot": "fast"},
        {"tpot": True},
        {"tpot": math.inf},
        [1],
    ],
)
def test_bad_targets_are_refused(slo: object) -> None:
    """Guards silent acceptance of a mistyped or impossible target."""
    with pytest.raises(LatencyKernelError, match="slo"):
        parse_slo(slo)  # type: ignore[arg-type]


@given(st.floats(min_value=1e-6, max_value=1e4, allow_nan=False))
def test_durations_round_trip_in_every_unit(x: float) -> None:
    """Guards unit factors: x ms is x/1000 s, x us is x/1e6 s, a bare number is seconds."""
    assert parse_seconds(f"{x!r}ms", "t") == x / 1e3
    assert parse_seconds(f"{x!r}us", "t") == x / 1e6
    assert parse_seconds(f"{x!r}min", "t") == x * 60
    assert parse_seconds(x, "t") == x


def test_default_prices_name_a_source_and_date() -> None:
    """Guards undocumented defaults: every default price is positive and names its public
    source and the date it was read or published."""
    table = load_prices()
    assert table.files == (str(DEFAULT_PRICES_FILE),)
    assert {"h100", "h200", "b200"} <= set(table.prices)
    for chip, p in table.prices.items():
        assert p.usd_per_gpu_hour > 0, chip
        assert "." in p.source and len(p.source) > 20, chip  # names a site
        assert p.date[:4].isdigit(), chip


def test_user_prices_override_only_their_chips(tmp_path: Path) -> None:
    """Guards a user table that silently replaces the whole default (or is ignored)."""
    f = tmp_path / "prices.yaml"
    f.write_text("prices:\n  h200: {usd_per_gpu_hour: 2.5, source: my contract, date: '2026-11'}\n")
    default = load_prices()
    mine = load_prices(f)
    assert mine.prices["h200"].usd_per_gpu_hour == 2.5 and mine.prices["h200"].source == "my contract"
    assert mine.prices["b200"] == default.prices["b200"]
    assert load_prices({"gb300": 5}).prices["gb300"].usd_per_gpu_hour == 5.0
    for bad in ({"h200": -1}, {"h200": {"usd_per_gpu_hour": "cheap"}}, {"h200": {"usd": 3}}):
        with pytest.raises(DocumentError, match="h200"):
            load_prices(bad)


def test_space_and_price_files_are_read_like_every_document(tmp_path: Path) -> None:
    """Guards review C23/D15 (two copies of a YAML loader in search): both read files with
    PyYAML's plain loader, which keeps the last of a duplicated key silently (``tp: [4]`` then
    ``tp: [8]`` searched tp 8 only) and took a directory for an unreadable file. Both now use
    the documents' reader: a duplicate key or a directory is refused naming the file; a table
    that is neither a mapping nor a path is refused naming ``prices``."""
    from latencykernel.search import load_space

    space = tmp_path / "space.yaml"
    space.write_text("hardware: [h200]\ntp: [4]\ntp: [8]\n")
    prices = tmp_path / "prices.yaml"
    prices.write_text("prices:\n  h200: 2.0\n  h200: 3.0\n")
    for load, f in ((load_space, space), (load_prices, prices)):
        with pytest.raises(DocumentError, match=f"{f.name}.*duplicate key"):
            load(f)  # type: ignore[operator]
        with pytest.raises(DocumentError, match="is a directory"):
            load(tmp_path)  # type: ignore[operator]
    with pytest.raises(DocumentError, match="^prices: expected a price table"):
        load_prices(5)  # type: ignore[arg-type]
