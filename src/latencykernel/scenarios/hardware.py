"""Accelerators as the scenarios see them: bandwidth, capacity and named peak rates.

Two sources, one type:

* ``Hardware.catalog("h100")``: the chip document of the shared catalog (the same one the
  kernel prices with): ``BwPeakTBs``, ``MemoryGiB``, ``TFlopsPeak`` (dense BF16),
  ``TFlopsFP8``, ``TFlopsNVFP4``, ``IntraNodeBwGBps``.
* ``Hardware.recorded("H100")``: the figures mlsysim 0.3.0 registers for a device, as its
  golden file records them (``data/scenario_library/recorded_hardware.yaml``, each device
  with its source). Named scenarios that reproduce mlsysim use these, and say so.

A precision key the device lacks is an ``UnknownPrecisionError`` that lists the keys it has.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pint

if TYPE_CHECKING:
    from latencykernel.documents.chip import Chip

from latencykernel.errors import UnknownPrecisionError, UnknownScenarioError
from latencykernel.scenarios.reference_data import RECORDED_HARDWARE  # package data, read on first use
from latencykernel.scenarios.units import Q_, magnitude_in

__all__ = ["Hardware", "RECORDED_HARDWARE"]


@dataclass(frozen=True)
class Hardware:
    """One accelerator (or one device's memory system and arithmetic peaks).

    memory_bandwidth: registered peak memory bandwidth, in the unit it was stated in
    memory_capacity:  registered memory, in the unit it was stated in (binary GiB for HBM)
    peaks:            precision key -> peak FLOP/s (dense unless the key says sparse)
    headline_peak:    the device's unnamed headline peak (mlsysim's ``peak_flops``; the
                      catalog's ``TFlopsPeak``), used when no precision is named
    link_bandwidth:   intra-node interconnect, one direction, per device (``None``: not stated)
    host_link_bandwidth: the device's link to host memory (PCIe), one direction (``None``: not stated)
    source:           where the figures come from
    """

    name: str
    memory_bandwidth: pint.Quantity
    memory_capacity: pint.Quantity
    peaks: tuple[tuple[str, pint.Quantity], ...]
    headline_peak: pint.Quantity | None
    source: str
    catalog_name: str | None = None
    link_bandwidth: pint.Quantity | None = None
    host_link_bandwidth: pint.Quantity | None = None
    extra: tuple[tuple[str, Any], ...] = field(default=(), compare=False)

    # ---------------------------------------------------------------- floats (SI) for the cores
    @functools.cached_property
    def bandwidth_bytes_per_s(self) -> float:
        return magnitude_in(self.memory_bandwidth, "B/s")

    @functools.cached_property
    def capacity_bytes(self) -> float:
        return magnitude_in(self.memory_capacity, "B")

    @property
    def precision_keys(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.peaks)

    def peak(self, key: str | None, *, argument: str = "peak_precision") -> pint.Quantity:
        """Peak FLOP/s at precision ``key`` (``None``: the headline peak)."""
        if key is None:
            if self.headline_peak is None:
                raise UnknownPrecisionError(
                    f"{argument}=None: {self.name} states no headline peak; name one of its "
                    f"precisions: {', '.join(self.precision_keys) or 'none registered'}",
                    argument=argument,
                    value=None,
                    available=self.precision_keys,
                )
            return self.headline_peak
        for k, v in self.peaks:
            if k == key:
                return v
        have = ", ".join(self.precision_keys) or "none"
        raise UnknownPrecisionError(
            f"{argument}={key!r}: {self.name} registers no peak at that precision; it has: {have}",
            argument=argument,
            value=key,
            available=self.precision_keys,
        )

    def peak_flops_per_s(self, key: str | None, *, argument: str = "peak_precision") -> float:
        return float(self.peak(key, argument=argument).to("flop/s").magnitude)

    def __str__(self) -> str:
        return self.name

    # ---------------------------------------------------------------- constructors
    @classmethod
    def catalog(cls, chip_name: str, repos: Any = None, *, setting: str = "hardware") -> Hardware:
        """The shared catalog's chip ``chip_name`` (``h100``, ``b200``, ...); ``setting`` is
        the input a missing chip's error names."""
        from latencykernel.documents.chip import load_chip  # lazy: the catalog layer
        from latencykernel.repos import Repos

        repos = repos if repos is not None else Repos.default()
        chip = load_chip(repos.chip_path(chip_name, setting=setting), shared=True)  # read only
        return cls.from_chip(chip, catalog_name=chip_name)

    @classmethod
    def from_chip(cls, chip: Chip, catalog_name: str | None = None) -> Hardware:
        """Adapt a validated catalog ``Chip`` document.

        Keys: ``bf16_dense`` and ``fp16_dense`` are ``TFlopsPeak`` (the datasheet's dense
        16-bit tensor rate, the same for FP16 and BF16 on these parts); ``fp8_dense`` is
        ``TFlopsFP8`` and ``nvfp4_dense`` is ``TFlopsNVFP4``, each only when stated (0 or
        absent: the part has no such peak). ``TFlopsPeak``, ``BwPeakTBs``, ``MemoryGiB`` and
        ``IntraNodeBwGBps`` are required (positive) chip fields.
        """
        tf = Q_(float(chip.TFlopsPeak), "TFLOPs/s")
        peaks: list[tuple[str, pint.Quantity]] = [("bf16_dense", tf), ("fp16_dense", tf)]
        if chip.TFlopsFP8:
            peaks.append(("fp8_dense", Q_(float(chip.TFlopsFP8), "TFLOPs/s")))
        if chip.TFlopsNVFP4:
            peaks.append(("nvfp4_dense", Q_(float(chip.TFlopsNVFP4), "TFLOPs/s")))
        name = chip.name or catalog_name or "chip"
        return cls(
            name=name,
            memory_bandwidth=Q_(float(chip.BwPeakTBs), "TB/s"),
            memory_capacity=Q_(float(chip.MemoryGiB), "GiB"),
            peaks=tuple(peaks),
            headline_peak=tf,
            source=f"shared catalog chip {catalog_name or name!r} (datasheet figures)",
            catalog_name=catalog_name,
            link_bandwidth=Q_(float(chip.IntraNodeBwGBps), "GB/s"),
        )

    @classmethod
    def recorded(cls, key: str) -> Hardware:
        """The device mlsysim 0.3.0 registers as ``Hardware.*.<key>`` (``H100``, ``H200``, ...)."""
        try:
            return RECORDED_HARDWARE[key]
        except KeyError:
            raise UnknownScenarioError(
                f"no recorded hardware {key!r}; recorded: {', '.join(sorted(RECORDED_HARDWARE))}"
            ) from None
