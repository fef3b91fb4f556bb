"""What a deployment holds in memory and how many requests fit: the ``Kernel``'s memory and
capacity methods (a mixin over the kernel's resolved constants and memory breakdown)."""

from __future__ import annotations

import math
from typing import Any

from latencykernel.batch import whole_number
from latencykernel.errors import LatencyKernelError, RefusedError
from latencykernel.kernel.constants import StepConstants
from latencykernel.kernel.memory import MemoryBreakdown
from latencykernel.limits import blocks_for_tokens
from latencykernel.price.attention import layer_kv_bytes_per_token
from latencykernel.price.hybrid_kv import hybrid_blocks_per_request, hybrid_group_size
from latencykernel.price.kv import paged_bytes
from latencykernel.price.memory import recurrent_state_bytes

__all__ = ["KernelMemory"]


class KernelMemory:
    """Memory and capacity of one pool of a deployment, per rank (``Kernel`` holds the state)."""

    __slots__ = ()
    _c: StepConstants
    _memory: MemoryBreakdown
    _pre: int
    _inputs: Any
    _pool: Any
    _info: dict[str, Any]

    # ----- memory ----------------------------------------------------------------------
    def fixed_bytes(self) -> MemoryBreakdown:
        """Bytes per rank that do not depend on requests."""
        return self._memory

    def pre_snapshot_bytes(self) -> int:
        """Bytes the engine holds before it measures its memory budget: the NCCL
        communicator and the engine workspace (CUDA context, cuBLAS workspace)."""
        return self._pre

    def kv_bytes_per_token(self) -> float:
        """KV cache bytes one token holds on one rank (before paging and DCP)."""
        return self._c.kv_bytes_per_token

    def _slot_bytes(self) -> int:
        """Under the hybrid KV-cache manager, the bytes one pool block takes: a page of
        block_size tokens in each of group_size layers (``price/hybrid_kv.py``); 0 when the
        manager does not size this deployment's cache."""
        if not self._info.get("hybrid_kv"):
            return 0
        c = self._c
        kinds = self._info["kv_kinds"]
        per_layer = layer_kv_bytes_per_token(c.kv_bytes_per_token, c.kv_layers)
        return int(per_layer * c.block_size * hybrid_group_size([n for n, _ in kinds]))

    def blocks_for(self, tokens: int) -> int:
        """KV blocks one request of ``tokens`` tokens holds on one rank, as vLLM's allocator
        counts them: ceil(tokens / block_size) (DCP-sharded tokens), or under the hybrid
        manager the sum over layer groups, windowed groups holding only their window."""
        t = whole_number("tokens", tokens)
        if t <= 0:
            return 0
        c = self._c
        if self._info.get("hybrid_kv"):
            return hybrid_blocks_per_request(t, c.block_size, self._info["kv_kinds"])
        if c.dcp > 1 and c.dcp_shards_all_kv_layers:
            t = math.ceil(t / c.dcp)
        return blocks_for_tokens(t, c.block_size)

    def sequence_variable_bytes(self, tokens: int) -> int:
        """One request's KV cache per rank at ``tokens`` tokens, in whole pages; DCP shards
        the tokens before the page rounding. Under vLLM's hybrid KV-cache manager (a stack
        with sliding-window layers, the manager on) a windowed layer holds only its window's
        blocks: blocks_for(tokens) pool blocks of block_size tokens × group_size layers."""
        tokens = whole_number("tokens", tokens)
        if tokens <= 0:
            return 0
        c = self._c
        slot = self._slot_bytes()
        if slot:
            return self.blocks_for(tokens) * slot
        # KNOWN DIVERGENCE D6: a hybrid sliding-window + full stack under DCP keeps its capacity
        # unsharded (vLLM refuses that layout by default).
        t = math.ceil(tokens / c.dcp) if c.dcp > 1 and c.dcp_shards_all_kv_layers else tokens
        total = paged_bytes(t, c.block_size, c.kv_bytes_per_token)
        if self._info.get("mamba_mode") == "all":
            for lp in c.plan.layers:
                if lp.recurrent_state_bytes > 0:
                    total += int(
                        recurrent_state_bytes(
                            lp.recurrent_state_bytes, "all", tokens, c.block_size, self._info.get("spec_tokens", 0), 0
                        )
                        * lp.count
                    )
        return total

    def sequence_fixed_bytes(self) -> int:
        """One request's length-independent recurrent state (0 for pure attention)."""
        mode = self._info.get("mamba_mode", "none")
        if mode == "all":
            return 0
        c = self._c
        max_len = self._pool.engine.max_model_len or 0
        return int(
            sum(
                recurrent_state_bytes(
                    lp.recurrent_state_bytes, mode, max_len, c.block_size, self._info.get("spec_tokens", 0), 0
                )
                * lp.count
                for lp in c.plan.layers
            )
        )

    # ----- capacity ---------------------------------------------------------------------
    def kv_budget_bytes(self, gpu_memory_utilization: float | None = None) -> int:
        """Bytes per rank left for KV cache: the chip's memory × utilization (the deployment's
        value by default, vLLM's 0.92 when unstated) minus fixed and pre-snapshot bytes."""
        util = self._info["gpu_memory_utilization"] if gpu_memory_utilization is None else gpu_memory_utilization
        if isinstance(util, bool) or not isinstance(util, int | float) or not 0 < util <= 1:
            raise LatencyKernelError(f"gpu_memory_utilization must be a number in (0, 1], got {util!r}")
        total = self._inputs.chip.MemoryGiB * (1 << 30)
        budget = self._raw_budget(util)
        if budget <= 0:
            raise RefusedError(
                f"gpu_memory_utilization {util!r} leaves no KV budget: {int(total * util)} bytes of {self._inputs.chip.name} "
                f"against {self._memory.total + self._pre} bytes of fixed and pre-snapshot memory per rank",
                setting="gpu_memory_utilization",
                value=util,
            )
        return budget

    def _raw_budget(self, util: float) -> int:
        """The budget at ``util``, possibly negative (``new`` refuses a deployment where it
        holds no block; the public helpers refuse a utilization that leaves nothing)."""
        return int(self._inputs.chip.MemoryGiB * (1 << 30) * util) - self._memory.total - self._pre

    def kv_blocks(self, gpu_memory_utilization: float | None = None) -> int:
        """Whole KV blocks that fit the budget (vLLM's num_gpu_blocks): pages of block_size
        tokens of every KV layer, or under the hybrid KV-cache manager pages of block_size
        tokens in group_size layers (``budget // (page_bytes_per_layer · group_size)``)."""
        page = self._slot_bytes() or self.sequence_variable_bytes(self._c.block_size)
        if page <= 0:
            return 0
        return max(self.kv_budget_bytes(gpu_memory_utilization) // page, 0)

    def max_sequences(self, tokens: int, gpu_memory_utilization: float | None = None) -> int:
        """How many sequences of ``tokens`` tokens fit the KV budget at once (memory only;
        the engine also caps the batch at max_num_seqs). ``tokens`` is a whole number from 1
        to ``MAX_TOKENS``."""
        tokens = whole_number("tokens", tokens, lo=1)
        per = self.sequence_variable_bytes(tokens) + self.sequence_fixed_bytes()
        budget = self.kv_budget_bytes(gpu_memory_utilization)
        if per <= 0:
            return 0 if budget <= 0 else 2**31 - 1
        return max(budget // per, 0)
