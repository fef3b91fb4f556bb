"""The fabric a deployment's collectives cross and the collective costs its step pays:
for each (op, group) the step runs, the measured width it is priced at and its floor,
peak rate and transition rate lifted from the coefficients."""

from __future__ import annotations

from typing import Any, NamedTuple

from latencykernel.kernel.checks import refuse
from latencykernel.kernel.constants import CollectiveCost
from latencykernel.kernel.lifting import US, usable
from latencykernel.resolve.coefficients import Coefficients
from latencykernel.resolve.layout import Group, Layout, Op
from latencykernel.resolve.startup import check_cluster_size

__all__ = ["OP_STEM", "SEARCH_WIDTHS", "Fabric", "fabric_facts", "collectives"]

OP_STEM = {
    Op.ALL_REDUCE: "all_reduce",
    Op.ALL_GATHER: "all_gather",
    Op.REDUCE_SCATTER: "reduce_scatter",
    Op.ALL2ALL: "alltoall",
}
SEARCH_WIDTHS = (2, 4, 8, 16)


class Fabric(NamedTuple):
    """Intra- and inter-node bandwidth (GB/s), their ratio, the GPUs of a rack that forms
    one domain (0 when none does), and GPUs per node."""

    intra_gbps: float
    inter_gbps: float
    ratio: float
    rack_gpus: int
    gpus_per_node: int

    @property
    def nvlink_bytes_per_s(self) -> float:
        return self.intra_gbps * 1e9

    @property
    def nic_bytes_per_s(self) -> float:
        return self.inter_gbps * 1e9 if self.inter_gbps > 0 else self.nvlink_bytes_per_s


def fabric_facts(chip: Any, fabric: Any, cluster: Any) -> Fabric:
    """Fabric facts, with vLLM's check of the cluster's size."""
    intra = float(chip.IntraNodeBwGBps)
    inter = float(fabric.InterNodeBwGBps) if fabric is not None else 0.0
    ratio = intra / inter if intra > 0 and inter > 0 else 1.0
    rack_is_one_domain = bool(chip.GPUsPerRack) and bool(chip.IntraRackBwGBps)
    rack_gpus = (cluster.gpus_per_rack or chip.GPUsPerRack or 0) if rack_is_one_domain else 0
    gpus_per_node = int(cluster.gpus_per_node)
    check_cluster_size(gpus_per_node, int(cluster.nodes))
    return Fabric(intra, inter, ratio, rack_gpus, gpus_per_node)


def _group_width(coeffs: Coefficients, op: Op, chip_key: str, width: int) -> int:
    """The measured width a collective over ``width`` ranks is priced at: the narrowest
    measured one for a narrower group, the widest for one past the searched widths, the next
    wider one otherwise; a searched width that is not measured is refused."""
    measured = coeffs.measured_widths(OP_STEM[op], chip_key)
    if not measured:
        raise refuse(
            f"no {OP_STEM[op]} collective is measured for {chip_key} at any width (needs "
            f"collective_floor/peak_rate/transition_rate_{OP_STEM[op]}_fp16_<N>rank_{chip_key}); "
            f"list cost-model-collectives",
            "coefficients",
            f"collective_floor_{OP_STEM[op]}_fp16_{width}rank_{chip_key}",
        )
    if width <= measured[0]:
        return measured[0]
    if width in measured:
        return width
    if width > SEARCH_WIDTHS[-1]:
        return measured[-1]
    if width in SEARCH_WIDTHS:
        raise refuse(
            f"{OP_STEM[op]} over {width} ranks is not measured on {chip_key} (measured widths: "
            f"{measured}); borrowing a narrower width would understate it",
            "coefficients",
            f"collective_floor_{OP_STEM[op]}_fp16_{width}rank_{chip_key}",
        )
    wider = [w for w in measured if w >= width]
    return wider[0] if wider else measured[-1]


def _collective(
    coeffs: Coefficients, layout: Layout, op: Op, group: Group, chip_key: str, ratio: float
) -> CollectiveCost:
    w = _group_width(coeffs, op, chip_key, layout.group_size(group))
    stem = f"{OP_STEM[op]}_fp16_{w}rank_{chip_key}"
    need = f"a {layout.group_size(group)}-rank {OP_STEM[op]}"
    floor = usable(f"collective_floor_{stem}", coeffs.require(f"collective_floor_{stem}", need), positive=False)
    peak = usable(f"collective_peak_rate_{stem}", coeffs.require(f"collective_peak_rate_{stem}", need), positive=True)
    trans = usable(
        f"collective_transition_rate_{stem}", coeffs.require(f"collective_transition_rate_{stem}", need), positive=False
    )
    crosses = layout.crosses_nodes(group)
    return CollectiveCost(
        floor * US, peak * 1e6, trans * 1e6, crosses, layout.span_for(op, group, ratio) if crosses else 1.0
    )


def collectives(
    coeffs: Coefficients, layout: Layout, chip_name: str, ratio: float, combine: str
) -> dict[tuple[Op, Group], CollectiveCost | None]:
    """The collectives a step runs: TP's three, the expert all-to-all, and under context
    parallelism DCP's gather and combine (``combine``: a2a, or ag_rs whose reduce is an
    all-reduce under PCP) and PCP's gather."""
    dcp, pcp = layout.dcp, layout.pcp
    chip_key = chip_name.replace("-", "_")
    keys: list[tuple[Op, Group]] = [
        (Op.ALL_REDUCE, Group.TP),
        (Op.ALL_GATHER, Group.TP),
        (Op.REDUCE_SCATTER, Group.TP),
        (Op.ALL2ALL, Group.EXPERT),
    ]
    if dcp > 1:
        keys.append((Op.ALL_GATHER, Group.DCP))
        keys.append(
            (Op.ALL2ALL, Group.DCP)
            if combine == "a2a"
            else (Op.ALL_REDUCE, Group.DCP)
            if pcp > 1
            else (Op.REDUCE_SCATTER, Group.DCP)
        )
    if pcp > 1:
        keys.append((Op.ALL_GATHER, Group.PCP))
    return {key: _collective(coeffs, layout, key[0], key[1], chip_key, ratio) for key in keys}
