"""A request paused on a tool: keep its KV state, move it to host memory and back, or drop
it and recompute; and what that does to an agent workload's turn rate."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import pint

from latencykernel.errors import NotApplicableError, ScenarioInputError
from latencykernel.scenarios.base import InputDoc, Scenario
from latencykernel.scenarios.kv_admission import KvAdmissionScenario
from latencykernel.scenarios.kv_residency import paged_bytes_q
from latencykernel.scenarios.metadata import output
from latencykernel.scenarios.prefill import PrefixRebuildScenario
from latencykernel.scenarios.units import Q_, as_quantity, count, fraction, magnitude_in, quantity

__all__ = ["PausedKvStateScenario", "KvResidencyArchetypeScenario"]

_RECOMPUTE = "recompute = linear FLOPs of the context at the prefill's sustained rate"
_NO_ATTN = "attention FLOPs of the recompute (the quadratic term)"


@dataclass(frozen=True, kw_only=True)
class PausedKvStateScenario(Scenario):
    """A request paused on a tool: keep, move over the host links, or drop and recompute its KV state."""

    pool: KvAdmissionScenario
    prefill: PrefixRebuildScenario
    context_tokens: int
    block_tokens: int
    wait: pint.Quantity
    link_fraction: float
    returns: int
    host_link: pint.Quantity | None = None

    family: ClassVar[str] = "kv_residency"
    mlsysim_type: ClassVar[str | None] = "PausedKvStateScenario"
    summary: ClassVar[str] = (
        "While a request waits, its cache can stay in HBM, go to host memory and come back over the PCIe "
        "links, or be dropped and recomputed: the bytes, the times, and a burst of requests returning together."
    )
    equation: ClassVar[str] = (
        "state = paged KV of the context; copy = state / link; recompute = 2·P·context / R; "
        "burst = returns · state / link"
    )
    assumptions: ClassVar[tuple[str, ...]] = (
        "the node's host links move state in parallel (accelerators × host link)",
        _RECOMPUTE,
    )
    excludes: ClassVar[tuple[str, ...]] = (_NO_ATTN, "host memory capacity and bandwidth", "copy overlap with compute")
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("pool", "KvAdmissionScenario", "the cache pool (KV bytes per token)"),
        InputDoc("prefill", "PrefixRebuildScenario", "the node and its sustained prefill rate"),
        InputDoc("context_tokens", "int [tokens]", "the paused request's context"),
        InputDoc("block_tokens", "int [tokens]", "page size"),
        InputDoc("wait", "Quantity [time]", "the pause"),
        InputDoc("link_fraction", "float in (0, 1]", "share of the links a copy gets under contention"),
        InputDoc("returns", "int ≥ 1", "requests returning at once"),
        InputDoc("host_link", "Quantity [B/s] | None", "the node's host bandwidth (default: accelerators × host link)"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.RepairToolWaitPausedState",
        "print(f'{s.copy_out:.2f~P}', f'{s.recompute:.3f~P}', round(s.recompute_over_reload, 1))",
    )

    def _validate(self) -> None:
        if not isinstance(self.pool, KvAdmissionScenario):
            raise ScenarioInputError(
                f"pool={self.pool!r} must be a KvAdmissionScenario", argument="pool", value=self.pool
            )
        if not isinstance(self.prefill, PrefixRebuildScenario):
            raise ScenarioInputError(
                f"prefill={self.prefill!r} must be a PrefixRebuildScenario", argument="prefill", value=self.prefill
            )
        self._set("context_tokens", count("context_tokens", self.context_tokens, "token", minimum=1))
        self._set("block_tokens", count("block_tokens", self.block_tokens, "token", minimum=1))
        self._set("wait", as_quantity("wait", self.wait, "s", nonnegative=True))
        self._set("link_fraction", fraction("link_fraction", self.link_fraction))
        self._set("returns", count("returns", self.returns, "sequence", minimum=1))
        if self.host_link is not None:
            link = as_quantity("host_link", self.host_link, "B/s", positive=True)
        else:
            per = self.prefill.hardware.host_link_bandwidth
            if per is None:
                raise NotApplicableError(f"{self.prefill.hardware.name} states no host link; give host_link")
            link = (self.prefill.accelerators * per).to("GB/s")
        self._set("host_link", link)

    def state_bytes(self) -> float:
        from latencykernel.price.kv import paged_bytes

        return float(paged_bytes(self.context_tokens, self.block_tokens, self.pool._per_token()))

    def link_bytes_per_s(self) -> float:
        return magnitude_in(self.host_link, "B/s")  # type: ignore[union-attr]

    def recompute_s(self) -> float:
        return self.prefill.linear_s(self.context_tokens)

    def _wait_s(self) -> float:
        return magnitude_in(self.wait, "s")

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["context_tokens"] = Q_(self.context_tokens, "token")
        s["paged_bytes"] = paged_bytes_q
        return s

    @output(equation="host_link", unit="GB/s")
    def link(self) -> pint.Quantity:
        """Host bandwidth the node's copies share."""
        return self.host_link.to("GB/s")  # type: ignore[union-attr]

    @output(equation="ceil(context_tokens / block_tokens / token)", returns="int")
    def blocks(self) -> int:
        """Pages of the paused request."""
        return math.ceil(self.context_tokens / self.block_tokens)

    @output(
        equation="paged_bytes(context_tokens, block_tokens, pool.kv_per_token)",
        unit="B",
        assumptions=("the pool's KV bytes per token, in whole pages (the kernel's paging law)",),
    )
    def state(self) -> pint.Quantity:
        """The paused request's cache."""
        return quantity(self.state_bytes(), "B")

    @output(equation="state / link", unit="ms")
    def copy_out(self) -> pint.Quantity:
        """Moving the state to host memory."""
        return quantity(self.state_bytes() / self.link_bytes_per_s(), "s", "ms")

    @output(equation="state / link", unit="ms")
    def copy_in(self) -> pint.Quantity:
        """Bringing it back."""
        return quantity(self.state_bytes() / self.link_bytes_per_s(), "s", "ms")

    @output(equation="copy_out + copy_in", unit="ms")
    def round_trip(self) -> pint.Quantity:
        """Out and back."""
        return quantity(2 * self.state_bytes() / self.link_bytes_per_s(), "s", "ms")

    @output(
        equation="prefill.workload.flops_per_token * context_tokens / prefill.sustained_rate",
        unit="s",
        assumptions=(_RECOMPUTE,),
        excludes=(_NO_ATTN,),
    )
    def recompute(self) -> pint.Quantity:
        """Dropping the state and prefilling the context again."""
        return quantity(self.recompute_s(), "s")

    @output(equation="recompute / copy_in", returns="float")
    def recompute_over_reload(self) -> float:
        """How much longer recomputing takes than reloading."""
        return self.recompute_s() * self.link_bytes_per_s() / self.state_bytes()

    @output(
        equation="recompute / (copy_in / link_fraction)",
        returns="float",
        assumptions=("a reload gets link_fraction of the links",),
    )
    def recompute_over_reload_derated(self) -> float:
        """The same when a reload gets only part of the links."""
        return self.recompute_s() * self.link_bytes_per_s() * self.link_fraction / self.state_bytes()

    @output(equation="state * wait", unit="B·s")
    def held_occupancy(self) -> pint.Quantity:
        """HBM held through the wait, as byte-seconds."""
        return quantity(self.state_bytes() * self._wait_s(), "B·s")

    @output(equation="wait - copy_in", unit="s")
    def released_on_demand(self) -> pint.Quantity:
        """HBM free time when the state comes back after the request returns."""
        return quantity(self._wait_s() - self.state_bytes() / self.link_bytes_per_s(), "s")

    @output(equation="wait - copy_out - copy_in", unit="s")
    def released_prefetch(self) -> pint.Quantity:
        """HBM free time when the state is prefetched to be back as the request returns."""
        return quantity(self._wait_s() - 2 * self.state_bytes() / self.link_bytes_per_s(), "s")

    @output(equation="returns * state", unit="B")
    def burst(self) -> pint.Quantity:
        """State of the requests returning at once."""
        return quantity(self.returns * self.state_bytes(), "B")

    @output(equation="burst / link", unit="s")
    def burst_time(self) -> pint.Quantity:
        """Reloading them all over the shared links."""
        return quantity(self.returns * self.state_bytes() / self.link_bytes_per_s(), "s")

    @output(equation="burst_time / copy_in", returns="float")
    def burst_slowdown(self) -> float:
        """How much later the last of them is back than a lone reload."""
        return float(self.returns)


@dataclass(frozen=True, kw_only=True)
class KvResidencyArchetypeScenario(Scenario):
    """One agent workload's sharing gain, residency tax, and reload against recompute."""

    paused: PausedKvStateScenario
    context_tokens: int
    shared_prefix: int
    generation: pint.Quantity
    wait: pint.Quantity

    family: ClassVar[str] = "kv_residency"
    mlsysim_type: ClassVar[str | None] = "KvResidencyArchetypeScenario"
    summary: ClassVar[str] = (
        "An agent archetype in the paused request's pool: how many fit with and without a shared prefix, how "
        "much longer a kept cache stays resident than it works, and reload against recompute."
    )
    equation: ClassVar[str] = (
        "fit = floor(budget / kv(context)); shared: floor((budget − kv(prefix)) / kv(context − prefix)); "
        "residency = 1 + wait / generation; rate = fit / residence"
    )
    assumptions: ClassVar[tuple[str, ...]] = ("the prefix is stored once and shared", _RECOMPUTE, "Little's law")
    excludes: ClassVar[tuple[str, ...]] = (_NO_ATTN, "page rounding of the fits")
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("paused", "PausedKvStateScenario", "pool, node and host links"),
        InputDoc("context_tokens", "int [tokens]", "the archetype's context"),
        InputDoc("shared_prefix", "int [tokens]", "its shareable prefix"),
        InputDoc("generation, wait", "Quantity [time]", "time generating, and waiting, per turn"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.SupportAgentResidency",
        "s.fit_unshared, s.fit_shared, s.residency_factor",
    )

    def _validate(self) -> None:
        if not isinstance(self.paused, PausedKvStateScenario):
            raise ScenarioInputError(
                f"paused={self.paused!r} must be a PausedKvStateScenario", argument="paused", value=self.paused
            )
        self._set("context_tokens", count("context_tokens", self.context_tokens, "token", minimum=1))
        self._set("shared_prefix", count("shared_prefix", self.shared_prefix, "token"))
        if self.shared_prefix >= self.context_tokens:
            raise ScenarioInputError(
                f"shared_prefix={self.shared_prefix} must be below context_tokens",
                argument="shared_prefix",
                value=self.shared_prefix,
            )
        self._set("generation", as_quantity("generation", self.generation, "s", positive=True))
        self._set("wait", as_quantity("wait", self.wait, "s", nonnegative=True))

    def _kv(self) -> float:
        return self.paused.pool._per_token()

    def _fits(self) -> tuple[int, int]:
        budget, kv = self.paused.pool._budget(), self._kv()
        unshared = math.floor(budget / (kv * self.context_tokens))
        shared = math.floor((budget - kv * self.shared_prefix) / (kv * (self.context_tokens - self.shared_prefix)))
        return unshared, shared

    def _g(self) -> float:
        return magnitude_in(self.generation, "s")

    def _w(self) -> float:
        return magnitude_in(self.wait, "s")

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["context_tokens"] = Q_(self.context_tokens, "token")
        s["shared_prefix"] = Q_(self.shared_prefix, "token")
        s["pool"] = self.paused.pool
        s["per_token"] = Q_(1, "1/token")
        return s

    @output(equation="shared_prefix / context_tokens", returns="float")
    def shared_fraction(self) -> float:
        """Share of the context in the shared prefix."""
        return self.shared_prefix / self.context_tokens

    @output(equation="floor(pool.kv_budget / (pool.kv_per_token * context_tokens * per_token))", returns="int")
    def fit_unshared(self) -> int:
        """Requests that fit, each holding its whole context."""
        return self._fits()[0]

    @output(
        equation="floor((pool.kv_budget - pool.kv_per_token * shared_prefix * per_token) / "
        "(pool.kv_per_token * (context_tokens - shared_prefix) * per_token))",
        returns="int",
    )
    def fit_shared(self) -> int:
        """Requests that fit with the prefix stored once."""
        return self._fits()[1]

    @output(equation="fit_shared / fit_unshared", returns="float")
    def share_gain(self) -> float:
        """How many more requests sharing fits."""
        unshared, shared = self._fits()
        return shared / unshared

    @output(equation="1 + wait / generation", returns="float")
    def residency_factor(self) -> float:
        """How much longer a kept cache stays resident than it generates."""
        return 1.0 + self._w() / self._g()

    @output(equation="generation + wait", unit="s")
    def turn_cycle(self) -> pint.Quantity:
        """One turn: generation and wait."""
        return quantity(self._g() + self._w(), "s")

    @output(
        equation="paused.prefill.workload.flops_per_token * context_tokens / paused.prefill.sustained_rate",
        unit="s",
        assumptions=(_RECOMPUTE,),
        excludes=(_NO_ATTN,),
    )
    def recompute(self) -> pint.Quantity:
        """Prefilling the context again."""
        return quantity(self.paused.prefill.linear_s(self.context_tokens), "s")

    @output(equation="pool.kv_per_token * context_tokens * per_token / paused.link", unit="ms")
    def reload(self) -> pint.Quantity:
        """Bringing the context's cache back from host memory."""
        return quantity(self._kv() * self.context_tokens / self.paused.link_bytes_per_s(), "s", "ms")

    @output(equation="recompute / turn_cycle", returns="float")
    def recompute_share(self) -> float:
        """Share of a turn a recompute would take."""
        return self.paused.prefill.linear_s(self.context_tokens) / (self._g() + self._w())

    @output(equation="fit_shared / turn_cycle", unit="1/s", assumptions=("Little's law",))
    def shared_retained_rate(self) -> pint.Quantity:
        """Turns per second, sharing, cache kept through the wait."""
        return quantity(self._fits()[1] / (self._g() + self._w()), "1/s")

    @output(equation="fit_shared / generation", unit="1/s", assumptions=("Little's law",))
    def shared_released_rate(self) -> pint.Quantity:
        """Turns per second, sharing, cache released during the wait."""
        return quantity(self._fits()[1] / self._g(), "1/s")
