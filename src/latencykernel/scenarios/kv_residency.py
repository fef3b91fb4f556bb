"""KV residency of agent-like requests in a replica's cache pool: paging against reservation,
forked and shared prefixes (``kv_pause``: state kept, moved or recomputed while a request waits).

Every scenario here draws on a ``KvAdmissionScenario`` (the pool: its cache budget and KV
bytes per token, from the one KV law) and pages with ``latencykernel.price.kv.paged_bytes``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import pint

from latencykernel.errors import ScenarioInputError
from latencykernel.scenarios.base import InputDoc, Scenario
from latencykernel.scenarios.kv_admission import KvAdmissionScenario
from latencykernel.scenarios.metadata import output as out  # "output" is also an input name below
from latencykernel.scenarios.units import Q_, as_quantity, count, fraction, magnitude_in, quantity

__all__ = ["KvForkCopyScenario", "PagedAllocationScenario", "KvBlockSharingScenario"]

_POOL = "the pool's cache budget and KV bytes per token (KvAdmissionScenario)"


def _pool(argument: str, value: Any) -> KvAdmissionScenario:
    if not isinstance(value, KvAdmissionScenario):
        raise ScenarioInputError(f"{argument}={value!r} must be a KvAdmissionScenario", argument=argument, value=value)
    return value


def _budget(pool: KvAdmissionScenario) -> float:
    return pool._budget()


def _kv(pool: KvAdmissionScenario) -> float:
    return pool._per_token()


def _paged(tokens: int, block: int, per_token: float) -> int:
    from latencykernel.price.kv import paged_bytes

    return paged_bytes(tokens, block, per_token)


def paged_bytes_q(tokens: Any, block: Any, per_token: pint.Quantity) -> pint.Quantity:
    """The kernel's paging law on quantities (for equations): ``tokens`` and ``block`` in
    tokens (or plain ints), ``per_token`` the bytes one token holds."""

    def n(x: Any) -> int:
        return int(x.to("token").magnitude) if hasattr(x, "to") else int(x)

    return Q_(_paged(n(tokens), n(block), magnitude_in(per_token, "B")), "B")


@dataclass(frozen=True, kw_only=True)
class KvForkCopyScenario(Scenario):
    """Candidates forked from one prefix, each copying the prefix's KV state without block sharing."""

    pool: KvAdmissionScenario
    prefix_tokens: int
    branches: int

    family: ClassVar[str] = "kv_residency"
    mlsysim_type: ClassVar[str | None] = "KvForkCopyScenario"
    summary: ClassVar[str] = (
        "Forking candidates from a shared prefix without block sharing copies the prefix's cache once per branch."
    )
    equation: ClassVar[str] = "copied = branches · prefix · kv_per_token"
    assumptions: ClassVar[tuple[str, ...]] = ("contiguous allocation: no copy-on-write blocks", _POOL)
    excludes: ClassVar[tuple[str, ...]] = ("the copy's time", "page rounding")
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("pool", "KvAdmissionScenario", "the replica's cache pool"),
        InputDoc("prefix_tokens", "int [tokens]", "the shared prefix"),
        InputDoc("branches", "int ≥ 1", "candidates forked from it"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "print(f'{Scenarios.ForkedCandidatesPrefixCopy.copied.to(\"GB\"):.2f~P}')",
    )

    def _validate(self) -> None:
        self._set("pool", _pool("pool", self.pool))
        self._set("prefix_tokens", count("prefix_tokens", self.prefix_tokens, "token"))
        self._set("branches", count("branches", self.branches, "sequence", minimum=1))

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["prefix_tokens"] = Q_(self.prefix_tokens, "token")
        s["per_token"] = Q_(1, "1/token")
        return s

    @out(equation="branches * prefix_tokens * per_token * pool.kv_per_token", unit="B")
    def copied(self) -> pint.Quantity:
        """Cache bytes the forks copy."""
        return quantity(self.branches * self.prefix_tokens * _kv(self.pool), "B")


@dataclass(frozen=True, kw_only=True)
class PagedAllocationScenario(Scenario):
    """Requests under a length cap in a pool: reserved at the cap, or paged in blocks."""

    pool: KvAdmissionScenario
    cap: int
    mean_final: int
    small_block: int = 16
    large_block: int = 64

    family: ClassVar[str] = "kv_residency"
    mlsysim_type: ClassVar[str | None] = "PagedAllocationScenario"
    summary: ClassVar[str] = (
        "Reserving every request's cache at the length cap against allocating it in blocks as it grows: "
        "paging wastes at most a block per request and fits many more requests."
    )
    equation: ClassVar[str] = (
        "final length L = min(X, cap), X exponential with E[L] = mean_final; paged bytes = b·(1 − e^(−cap/μ)) / "
        "(1 − e^(−b/μ)) tokens of cache per request for blocks of b tokens"
    )
    assumptions: ClassVar[tuple[str, ...]] = (
        "final lengths follow a capped exponential distribution (a modeling assumption)",
        "every request is at its final length (the steady state of a full pool)",
        _POOL,
    )
    excludes: ClassVar[tuple[str, ...]] = ("the block table and allocator overhead", "prefix sharing")
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("pool", "KvAdmissionScenario", "the replica's cache pool"),
        InputDoc("cap", "int [tokens]", "the length cap a reservation holds"),
        InputDoc("mean_final", "int [tokens]", "mean final length"),
        InputDoc("small_block, large_block", "int [tokens]", "two page sizes to compare"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.CappedRequestsPagedAllocation",
        "s.reservations, s.paged_fit, s.paged_gain",
    )

    def _validate(self) -> None:
        self._set("pool", _pool("pool", self.pool))
        self._set("cap", count("cap", self.cap, "token", minimum=1))
        self._set("mean_final", count("mean_final", self.mean_final, "token", minimum=1))
        if self.mean_final >= self.cap:
            raise ScenarioInputError(
                f"mean_final={self.mean_final} must be below cap={self.cap}",
                argument="mean_final",
                value=self.mean_final,
            )
        self._set("small_block", count("small_block", self.small_block, "token", minimum=1))
        self._set("large_block", count("large_block", self.large_block, "token", minimum=1))
        mu = float(self.mean_final)  # the exponential's mean, so that the capped mean is mean_final
        for _ in range(200):
            mu = self.mean_final / (1.0 - math.exp(-self.cap / mu))
        self._set("_mu", mu)

    def _allocated(self, block: int) -> float:
        mu: float = self._mu  # type: ignore[attr-defined]
        return block * (1.0 - math.exp(-self.cap / mu)) / (1.0 - math.exp(-block / mu))

    @out(equation="cap * pool.kv_per_token", unit="B", assumptions=(_POOL,))
    def reservation(self) -> pint.Quantity:
        """One request's cache reserved at the cap."""
        return quantity(self.cap * _kv(self.pool), "B")

    @out(equation="floor(pool.kv_budget / reservation)", returns="int")
    def reservations(self) -> int:
        """Requests the pool holds when each reserves the cap."""
        return math.floor(_budget(self.pool) / (self.cap * _kv(self.pool)))

    @out(equation="mean_final / cap", returns="float")
    def final_length_efficiency(self) -> float:
        """Share of a reservation a request uses on average."""
        return self.mean_final / self.cap

    @out(equation="small_block * pool.kv_per_token", unit="B")
    def small_block_bytes(self) -> pint.Quantity:
        """One small page (mlsysim's result.small_block)."""
        return quantity(self.small_block * _kv(self.pool), "B")

    @out(equation="large_block * pool.kv_per_token", unit="B")
    def large_block_bytes(self) -> pint.Quantity:
        """One large page (mlsysim's result.large_block)."""
        return quantity(self.large_block * _kv(self.pool), "B")

    @out(equation="small_block - 1", returns="int")
    def small_tail_tokens(self) -> int:
        """Most tokens a request's last small page leaves unused."""
        return self.small_block - 1

    @out(equation="large_block - 1", returns="int")
    def large_tail_tokens(self) -> int:
        """Most tokens a request's last large page leaves unused."""
        return self.large_block - 1

    @out(equation="(small_block - 1) * pool.kv_per_token", unit="B")
    def small_tail(self) -> pint.Quantity:
        """Largest waste of a small page."""
        return quantity((self.small_block - 1) * _kv(self.pool), "B")

    @out(equation="(large_block - 1) * pool.kv_per_token", unit="B")
    def large_tail(self) -> pint.Quantity:
        """Largest waste of a large page."""
        return quantity((self.large_block - 1) * _kv(self.pool), "B")

    @out(equation="large_tail / reservation", returns="float")
    def large_tail_share(self) -> float:
        """Largest waste of a large page against a reservation."""
        return (self.large_block - 1) / self.cap

    @out(
        equation="small_block * (1 - exp(-cap / mu)) / (1 - exp(-small_block / mu))",
        returns="float",
        assumptions=("capped exponential final lengths",),
    )
    def small_allocated_tokens(self) -> float:
        """Expected tokens of small pages a request holds at its final length."""
        return self._allocated(self.small_block)

    @out(equation="(small_allocated_tokens - mean_final) / small_allocated_tokens", returns="float")
    def small_waste(self) -> float:
        """Share of small-page cache left unused."""
        a = self._allocated(self.small_block)
        return (a - self.mean_final) / a

    @out(equation="large_block * (1 - exp(-cap / mu)) / (1 - exp(-large_block / mu))", returns="float")
    def large_allocated_tokens(self) -> float:
        """Expected tokens of large pages a request holds at its final length."""
        return self._allocated(self.large_block)

    @out(equation="(large_allocated_tokens - mean_final) / large_allocated_tokens", returns="float")
    def large_waste(self) -> float:
        """Share of large-page cache left unused."""
        a = self._allocated(self.large_block)
        return (a - self.mean_final) / a

    @out(equation="floor(pool.kv_budget / (small_allocated_tokens * pool.kv_per_token))", returns="int")
    def paged_fit(self) -> int:
        """Requests the pool holds with small pages."""
        return math.floor(_budget(self.pool) / (self._allocated(self.small_block) * _kv(self.pool)))

    @out(equation="paged_fit / reservations", returns="float")
    def paged_gain(self) -> float:
        """How many more requests paging fits."""
        return self.paged_fit / self.reservations

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["mu"] = self._mu  # type: ignore[attr-defined]
        s["exp"] = math.exp
        return s


@dataclass(frozen=True, kw_only=True)
class KvBlockSharingScenario(Scenario):
    """Requests with an output allowance in whole blocks, with and without a shared prefix, as a turn rate."""

    pool: KvAdmissionScenario
    headroom: float
    context: int
    output: int
    common: int
    block_tokens: int
    generation: pint.Quantity
    wait: pint.Quantity

    family: ClassVar[str] = "kv_residency"
    mlsysim_type: ClassVar[str | None] = "KvBlockSharingScenario"
    summary: ClassVar[str] = (
        "Requests holding context plus output in whole blocks: sharing the common prefix's blocks fits more, "
        "and releasing the cache while a request waits turns it over faster (Little's law)."
    )
    equation: ClassVar[str] = (
        "fit = floor(usable / blocks(context + output)); shared: floor((usable − common) / private); "
        "rate = fit / residence"
    )
    assumptions: ClassVar[tuple[str, ...]] = (
        _POOL,
        "a request holds its blocks for its generation (and its wait if retained)",
    )
    excludes: ClassVar[tuple[str, ...]] = ("recompute or reload after a release",)
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("pool", "KvAdmissionScenario", "the replica's cache pool"),
        InputDoc("headroom", "float in [0, 1)", "share of the budget kept free"),
        InputDoc("context, output, common", "int [tokens]", "input, output allowance, and shareable prefix"),
        InputDoc("block_tokens", "int [tokens]", "page size"),
        InputDoc("generation, wait", "Quantity [time]", "time generating, and waiting (on a tool), per turn"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.RepairBlockSharingResidency",
        "s.fit_unshared, s.fit_shared, round(s.share_gain, 3)",
    )

    def _validate(self) -> None:
        self._set("pool", _pool("pool", self.pool))
        self._set("headroom", fraction("headroom", self.headroom, low_open=False, high=0.999999))
        for name in ("context", "output", "common"):
            self._set(name, count(name, getattr(self, name), "token"))
        self._set("block_tokens", count("block_tokens", self.block_tokens, "token", minimum=1))
        if self.common % self.block_tokens or self.common > self.context:
            raise ScenarioInputError(
                f"common={self.common} must be whole blocks within the context", argument="common", value=self.common
            )
        self._set("generation", as_quantity("generation", self.generation, "s", positive=True))
        self._set("wait", as_quantity("wait", self.wait, "s", nonnegative=True))

    def _block_bytes(self) -> int:
        return _paged(self.block_tokens, self.block_tokens, _kv(self.pool))

    def _usable_blocks(self) -> int:
        return math.floor(_budget(self.pool) * (1.0 - self.headroom) / self._block_bytes())

    def _blocks(self, tokens: int) -> int:
        return math.ceil(tokens / self.block_tokens)

    def _fits(self) -> tuple[int, int]:
        total = self._blocks(self.context + self.output)
        common = self.common // self.block_tokens
        usable = self._usable_blocks()
        return usable // total, (usable - common) // (total - common)

    def _s(self, q: pint.Quantity) -> float:
        return magnitude_in(q, "s")

    @out(equation="paged_bytes(block_tokens, block_tokens, pool.kv_per_token)", unit="B")
    def block_bytes(self) -> pint.Quantity:
        """One page of cache."""
        return quantity(float(self._block_bytes()), "B")

    @out(equation="floor(pool.kv_budget * (1 - headroom) / block_bytes)", returns="int")
    def usable_blocks(self) -> int:
        """Pages the pool offers after the headroom."""
        return self._usable_blocks()

    @out(equation="usable_blocks * block_bytes", unit="B")
    def usable(self) -> pint.Quantity:
        """Bytes of those pages."""
        return quantity(float(self._usable_blocks() * self._block_bytes()), "B")

    @out(equation="ceil((context + output) / block_tokens)", returns="int")
    def unshared_blocks(self) -> int:
        """Pages one request holds alone."""
        return self._blocks(self.context + self.output)

    @out(equation="common // block_tokens", returns="int")
    def common_blocks(self) -> int:
        """Pages of the shareable prefix."""
        return self.common // self.block_tokens

    @out(equation="unshared_blocks - common_blocks", returns="int")
    def private_blocks(self) -> int:
        """Pages a sharing request holds for itself."""
        return self._blocks(self.context + self.output) - self.common // self.block_tokens

    @out(equation="unshared_blocks * block_bytes", unit="B")
    def unshared_bytes(self) -> pint.Quantity:
        """Cache of one request alone."""
        return quantity(float(self.unshared_blocks * self._block_bytes()), "B")

    @out(equation="common_blocks * block_bytes", unit="B")
    def common_bytes(self) -> pint.Quantity:
        """Cache of the shared prefix."""
        return quantity(float(self.common_blocks * self._block_bytes()), "B")

    @out(equation="private_blocks * block_bytes", unit="B")
    def private_bytes(self) -> pint.Quantity:
        """Cache a sharing request holds for itself."""
        return quantity(float(self.private_blocks * self._block_bytes()), "B")

    @out(equation="usable_blocks // unshared_blocks", returns="int")
    def fit_unshared(self) -> int:
        """Requests that fit without sharing."""
        return self._fits()[0]

    @out(equation="(usable_blocks - common_blocks) // private_blocks", returns="int")
    def fit_shared(self) -> int:
        """Requests that fit sharing the prefix (stored once)."""
        return self._fits()[1]

    @out(equation="generation + wait", unit="s")
    def retained_time(self) -> pint.Quantity:
        """Residence of a request that keeps its cache while it waits."""
        return (self.generation + self.wait).to("s")

    @out(equation="fit_unshared / retained_time", unit="1/s", assumptions=("Little's law",))
    def retained_rate(self) -> pint.Quantity:
        """Turns per second, unshared, cache kept through the wait."""
        return quantity(self._fits()[0] / (self._s(self.generation) + self._s(self.wait)), "1/s")

    @out(equation="fit_unshared / generation", unit="1/s", assumptions=("Little's law",))
    def released_rate(self) -> pint.Quantity:
        """Turns per second, unshared, cache released during the wait."""
        return quantity(self._fits()[0] / self._s(self.generation), "1/s")

    @out(equation="fit_shared / retained_time", unit="1/s")
    def shared_retained_rate(self) -> pint.Quantity:
        """Turns per second, sharing, cache kept through the wait."""
        return quantity(self._fits()[1] / (self._s(self.generation) + self._s(self.wait)), "1/s")

    @out(equation="fit_shared / generation", unit="1/s")
    def shared_released_rate(self) -> pint.Quantity:
        """Turns per second, sharing, cache released during the wait."""
        return quantity(self._fits()[1] / self._s(self.generation), "1/s")

    @out(equation="retained_time / generation", returns="float")
    def residency_factor(self) -> float:
        """How much longer a kept cache stays resident than it generates."""
        return (self._s(self.generation) + self._s(self.wait)) / self._s(self.generation)

    @out(equation="common / (context + output)", returns="float")
    def shared_fraction(self) -> float:
        """Share of a request's tokens in the shared prefix."""
        return self.common / (self.context + self.output)

    @out(equation="fit_shared / fit_unshared", returns="float")
    def share_gain(self) -> float:
        """How many more requests sharing fits."""
        unshared, shared = self._fits()
        return shared / unshared

    @out(equation="1 / (1 - shared_fraction)", returns="float")
    def share_bound(self) -> float:
        """Sharing's gain as the pool grows without bound."""
        return 1.0 / (1.0 - self.common / (self.context + self.output))

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["paged_bytes"] = paged_bytes_q
        return s
