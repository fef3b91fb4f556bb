"""Configuration search: every deployment of a space, built in memory and simulated at every
load point; the refused ones kept with their reasons; the Pareto fronts; the cheapest
deployment meeting an SLO; and the fewest GPUs that serve a request rate.

    import latencykernel.search as search
    r = search.run("deepseek-v3", {"isl": 1024, "osl": 1024, "concurrency": [16, 64]},
                   {"tpot": "50ms", "ttft_p99": "2s"}, {"hardware": ["h200", "b200"], "tp": [4, 8]})
    r.best, r.front, r.refused

See docs/search.md.
"""

from latencykernel.search.evaluate import LoadPoint
from latencykernel.search.prices import Price, PriceTable, load_prices
from latencykernel.search.result import Candidate, Refusal, RefusalGroup, SearchResult, Sizing
from latencykernel.search.run import fewest_gpus, load_points, run
from latencykernel.search.slo import Slo, Target, parse_seconds, parse_slo
from latencykernel.search.space import Deployment, Disaggregation, Layout, PoolSpace, Space, deployments, load_space

__all__ = [
    "run",
    "fewest_gpus",
    "load_points",
    "LoadPoint",
    "Space",
    "PoolSpace",
    "Disaggregation",
    "Layout",
    "Deployment",
    "deployments",
    "load_space",
    "Slo",
    "Target",
    "parse_slo",
    "parse_seconds",
    "Price",
    "PriceTable",
    "load_prices",
    "Candidate",
    "Refusal",
    "RefusalGroup",
    "SearchResult",
    "Sizing",
]
