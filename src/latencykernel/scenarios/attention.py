"""Attention kernels: what a whole score matrix and a tiled (Flash) kernel store, and the
smallest ring-attention chunk whose compute hides its K/V transfer."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pint

from latencykernel.errors import ScenarioInputError
from latencykernel.scenarios import registry
from latencykernel.scenarios.base import InputDoc, Scenario
from latencykernel.scenarios.hardware import Hardware
from latencykernel.scenarios.metadata import output
from latencykernel.scenarios.units import (
    Q_,
    as_quantity,
    count,
    fraction,
    magnitude_in,
    mapping,
    nonnegative_int,
    positive_int,
    quantity,
)

__all__ = ["AttentionTilingScenario", "RingAttentionScenario"]


@dataclass(frozen=True, kw_only=True)
class AttentionTilingScenario(Scenario):
    """One head's attention at ``seq_len`` tokens, whole or in square tiles, and what each kernel stores."""

    seq_len: int
    head_dim: int
    tile: int
    heads: int
    bytes_per_value: pint.Quantity
    io_tensors: int = 4
    stored_square_matrices: int = 2
    row_statistics: int = 2

    family: ClassVar[str] = "attention"
    mlsysim_type: ClassVar[str | None] = "AttentionTilingScenario"
    summary: ClassVar[str] = (
        "Standard attention writes the S×S score and probability matrices to memory; a tiled (Flash) kernel keeps "
        "tiles on chip and stores only Q, K, V, O and two statistics per row."
    )
    equation: ClassVar[str] = "standard = io·S·d·b + m·S²·b; flash = io·S·d·b + r·S·b"
    assumptions: ClassVar[tuple[str, ...]] = ("one head, one sequence", "square tiles")
    excludes: ClassVar[tuple[str, ...]] = ("recomputation in the backward pass", "on-chip memory limits on the tile")
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("seq_len", "int [tokens]", "sequence length S"),
        InputDoc("head_dim", "int", "head width d"),
        InputDoc("tile", "int [tokens]", "tile side"),
        InputDoc("heads", "int", "heads of one layer"),
        InputDoc("bytes_per_value", "Quantity [B]", "element width b"),
        InputDoc("io_tensors", "int", "S×d tensors read or written (Q, K, V, O)"),
        InputDoc("stored_square_matrices", "int", "S×S matrices standard attention stores (scores, probabilities)"),
        InputDoc("row_statistics", "int", "per-row values a tiled kernel stores (max, sum)"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.AttentionScores4096TokensFp32",
        "print(f'{s.stored_standard:.1f~P}', f'{s.stored_flash:.2f~P}', round(s.stored_ratio, 1))",
    )

    def _validate(self) -> None:
        for name in ("seq_len", "tile"):
            self._set(name, count(name, getattr(self, name), "token", minimum=1))
        for name in ("head_dim", "heads"):
            self._set(name, positive_int(name, getattr(self, name)))
        for name in ("io_tensors", "stored_square_matrices", "row_statistics"):
            self._set(name, nonnegative_int(name, getattr(self, name)))
        self._set("bytes_per_value", as_quantity("bytes_per_value", self.bytes_per_value, "B", positive=True))

    def _b(self) -> float:
        return magnitude_in(self.bytes_per_value, "B")

    def _io(self) -> float:
        return self.io_tensors * self.seq_len * self.head_dim * self._b()

    @output(equation="seq_len ** 2 * bytes_per_value", unit="MB")
    def score_matrix(self) -> pint.Quantity:
        """One head's S×S scores."""
        return quantity(self.seq_len**2 * self._b(), "B", "MB")

    @output(equation="heads * seq_len ** 2 * bytes_per_value", unit="GB")
    def all_heads_scores(self) -> pint.Quantity:
        """Every head's scores."""
        return quantity(self.heads * self.seq_len**2 * self._b(), "B", "GB")

    @output(equation="tile ** 2 * bytes_per_value", unit="KB")
    def tile_bytes(self) -> pint.Quantity:
        """One tile of scores."""
        return quantity(self.tile**2 * self._b(), "B", "KB")

    @output(equation="ceil(seq_len / tile)", returns="int")
    def tiles_per_side(self) -> int:
        """Tiles along one side of the score matrix."""
        return math.ceil(self.seq_len / self.tile)

    @output(equation="ceil(seq_len / tile) ** 2", returns="int")
    def tile_count(self) -> int:
        """Tiles of the whole score matrix."""
        return math.ceil(self.seq_len / self.tile) ** 2

    @output(equation="3 * seq_len * head_dim * bytes_per_value", unit="MB")
    def qkv_bytes(self) -> pint.Quantity:
        """Q, K and V of one head."""
        return quantity(3 * self.seq_len * self.head_dim * self._b(), "B", "MB")

    @output(equation="io_tensors * seq_len * head_dim * bytes_per_value", unit="MB")
    def io_bytes(self) -> pint.Quantity:
        """Q, K, V and O of one head."""
        return quantity(self._io(), "B", "MB")

    @output(equation="io_bytes + stored_square_matrices * score_matrix", unit="MB")
    def stored_standard(self) -> pint.Quantity:
        """What standard attention stores for one head."""
        return quantity(self._io() + self.stored_square_matrices * self.seq_len**2 * self._b(), "B", "MB")

    @output(equation="io_bytes + row_statistics * seq_len * bytes_per_value", unit="MB")
    def stored_flash(self) -> pint.Quantity:
        """What a tiled kernel stores for one head."""
        return quantity(self._io() + self.row_statistics * self.seq_len * self._b(), "B", "MB")

    @output(equation="stored_standard / stored_flash", returns="float")
    def stored_ratio(self) -> float:
        """How much less the tiled kernel stores."""
        return float((self.stored_standard / self.stored_flash).to("").magnitude)


@dataclass(frozen=True, kw_only=True)
class RingAttentionScenario(Scenario):
    """Ring attention on ``accelerator``: the smallest chunk that hides each K/V tile, per link."""

    accelerator: Hardware
    precision: str
    local_efficiency: float
    element_bytes: pint.Quantity
    links: Mapping[str, pint.Quantity]

    family: ClassVar[str] = "attention"
    mlsysim_type: ClassVar[str | None] = "RingAttentionScenario"
    summary: ClassVar[str] = (
        "Each ring step computes a c-token query chunk against a c-token K/V chunk (4·c²·d FLOPs) while the next "
        "K/V chunk (2·c·d·b bytes) arrives: compute hides the transfer once c ≥ b·R / (2·BW)."
    )
    equation: ClassVar[str] = "c_min = 2·b·R / (4·BW), R = peak · efficiency (the head width d cancels)"
    assumptions: ClassVar[tuple[str, ...]] = ("compute and transfer overlap perfectly", "the link's full bandwidth")
    excludes: ClassVar[tuple[str, ...]] = ("link latency", "the causal mask's uneven work")
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("accelerator", "Hardware | str", "the device"),
        InputDoc("precision", "str", "peak key"),
        InputDoc("local_efficiency", "float in (0, 1]", "share of peak the attention sustains"),
        InputDoc("element_bytes", "Quantity [B]", "K/V element width"),
        InputDoc("links", "dict[str, Quantity [B/s or bit/s]]", "links to compare"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "{k: round(v.magnitude) for k, v in Scenarios.H100RingAttentionChunk.min_chunk_tokens.items()}",
    )

    def _validate(self) -> None:
        self._set("accelerator", registry.hardware(self.accelerator, "accelerator"))
        if not isinstance(self.precision, str):
            raise ScenarioInputError(
                f"precision={self.precision!r} must be a peak key", argument="precision", value=self.precision
            )
        self.accelerator.peak(self.precision, argument="precision")
        self._set("local_efficiency", fraction("local_efficiency", self.local_efficiency))
        self._set("element_bytes", as_quantity("element_bytes", self.element_bytes, "B", positive=True))
        self._set(
            "links",
            {k: as_quantity(f"links[{k!r}]", v, "B/s", positive=True) for k, v in mapping("links", self.links).items()},
        )

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["flops_per_pair"] = Q_(4, "flop/token")  # QKᵀ and AV: two multiply-adds per (query, key) pair per dim
        return s

    @output(
        equation="{k: 2 * element_bytes * accelerator.peak(precision) * local_efficiency / (flops_per_pair * bw) "
        "for k, bw in links.items()}",
        unit="token",
        returns="mapping",
    )
    def min_chunk_tokens(self) -> dict[str, pint.Quantity]:
        """Smallest chunk per link whose compute hides the next chunk's transfer."""
        rate = self.accelerator.peak_flops_per_s(self.precision) * self.local_efficiency
        b = magnitude_in(self.element_bytes, "B")
        return {k: quantity(2 * b * rate / (4 * magnitude_in(bw, "B/s")), "token") for k, bw in self.links.items()}
