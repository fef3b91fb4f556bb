"""Group placement (blis-kernel-spec §4.7, §8.1, §14): which parallel groups leave their node,
and how many of a group's members share the busiest node — checked against an oracle that
lays ranks out the way vLLM's ``initialize_model_parallel`` does.

vLLM numbers ranks ``DP × PP × PCP × TP`` (TP innermost) and builds each axis's groups by
moving that axis last and cutting the rank array into rows:

* TP:  rows of ``tp`` consecutive ranks;
* PCP: ``transpose(PCP, TP)`` then rows of ``pcp`` (members ``tp`` apart);
* DCP: with DCP on, ``transpose(PCP, TP)`` then rows of ``dcp`` — DCP spans the PCP axis
  first, then TP (without PCP: consecutive ranks inside a TP group);
* EP:  ``transpose(DP, PP)`` then rows of ``dp · pcp · tp`` (the whole DP × PCP × TP
  block of one pipeline stage).

A node holds ``gpus_per_node`` consecutive ranks (a rack that is one NVLink domain counts as
one node of ``rack`` ranks).
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from latencykernel.resolve.layout import Group, Layout, Op, resolve_layout

# --------------------------------------------------------------------------------------
# Oracle
# --------------------------------------------------------------------------------------


def vllm_groups(tp: int, pp: int, dp: int, pcp: int, dcp: int) -> dict[str, list[list[int]]]:
    world = dp * pp * pcp * tp
    ranks = np.arange(world).reshape(1, dp, pp, pcp, tp)
    groups = {
        "tp": ranks.reshape(-1, tp),
        "pcp": ranks.transpose(0, 1, 2, 4, 3).reshape(-1, pcp),
        "dcp": (ranks.transpose(0, 1, 2, 4, 3) if dcp > 1 else ranks).reshape(-1, dcp),
        "ep": ranks.transpose(0, 2, 1, 3, 4).reshape(-1, dp * pcp * tp),
    }
    return {k: [list(map(int, row)) for row in v] for k, v in groups.items()}


def crosses(groups: list[list[int]], node_size: int) -> bool:
    """Does any group have members on more than one node?"""
    return any(len({r // node_size for r in g}) > 1 for g in groups)


def busiest_node_members(groups: list[list[int]], node_size: int) -> int:
    """Most members of one group sharing one node, over all groups."""
    return max(max(Counter(r // node_size for r in g).values()) for g in groups)


def make_layout(tp: int, pp: int, dp: int, pcp: int, dcp: int, ep: bool, gpn: int, rack: int = 0) -> Layout:
    return resolve_layout(
        tp=tp,
        pp=pp,
        dp=dp,
        pcp=pcp,
        dcp=dcp,
        ep_enabled=ep,
        gpus_per_node=gpn,
        rack_gpus=rack,
        all2all_backend=None,
        sp_moe_backends=frozenset(),
        custom_all_reduce_widths=frozenset({2, 4, 6, 8, 16}),
        disable_custom_all_reduce=None,
        allreduce_backend=None,
    )


def admissible_dcp(tp: int, pcp: int) -> list[int]:
    if pcp <= 1:
        return [d for d in range(1, tp + 1) if tp % d == 0]
    return sorted({1, pcp, tp * pcp})


def grid(pps=(1,)):
    for gpn, tp, pcp, dp, pp, ep in itertools.product((4, 8), (1, 2, 4, 8), (1, 2, 4), (1, 2), pps, (False, True)):
        for dcp in admissible_dcp(tp, pcp):
            yield gpn, tp, pcp, dp, pp, dcp, ep


def expert_group_modelled(dp: int, pcp: int, pp: int, ep: bool) -> bool:
    """Cases where the layout's expert-group model (width tp·max(dp, pcp) with EP on,
    tp·pcp·dp with EP off and DP > 1, one contiguous block) can match vLLM: the MoE tokens
    are exchanged at all (EP on, or DP > 1), one pipeline stage, and not DP and PCP together
    with EP on (see the xfail tests below)."""
    if not (ep or dp > 1):
        return False
    if pp > 1:
        return False
    return not (ep and dp > 1 and pcp > 1)


AXES = {"tp": Group.TP, "pcp": Group.PCP, "dcp": Group.DCP}

# --------------------------------------------------------------------------------------
# Grid comparisons
# --------------------------------------------------------------------------------------


def test_group_widths_match_vllm() -> None:
    for gpn, tp, pcp, dp, pp, dcp, ep in grid(pps=(1, 2)):
        layout = make_layout(tp, pp, dp, pcp, dcp, ep, gpn)
        groups = vllm_groups(tp, pp, dp, pcp, dcp)
        for name, group in AXES.items():
            assert layout.group_size(group) == len(groups[name][0]), (name, tp, pcp, dp, dcp)


def test_crosses_nodes_matches_vllm_placement() -> None:
    checked = 0
    for gpn, tp, pcp, dp, pp, dcp, ep in grid(pps=(1, 2)):
        layout = make_layout(tp, pp, dp, pcp, dcp, ep, gpn)
        groups = vllm_groups(tp, pp, dp, pcp, dcp)
        where = dict(gpn=gpn, tp=tp, pcp=pcp, dp=dp, pp=pp, dcp=dcp, ep=ep)
        for name, group in AXES.items():
            assert layout.crosses_nodes(group) == crosses(groups[name], gpn), (name, where)
            checked += 1
        if expert_group_modelled(dp, pcp, pp, ep):
            assert layout.group_size(Group.EXPERT) == len(groups["ep"][0]), where
            assert layout.crosses_nodes(Group.EXPERT) == crosses(groups["ep"], gpn), where
            checked += 1
    assert checked > 500


def test_per_node_is_members_on_the_busiest_node() -> None:
    """Where a group leaves its node, ``per_node`` is how many of its members share the
    busiest node (what the ring and all-to-all spans are computed from); where it stays,
    ``per_node`` is at least the group's width."""
    compared = 0
    for gpn, tp, pcp, dp, pp, dcp, ep in grid(pps=(1, 2)):
        layout = make_layout(tp, pp, dp, pcp, dcp, ep, gpn)
        groups = vllm_groups(tp, pp, dp, pcp, dcp)
        axes = dict(AXES)
        if expert_group_modelled(dp, pcp, pp, ep):
            axes["ep"] = Group.EXPERT
        for name, group in axes.items():
            where = (name, dict(gpn=gpn, tp=tp, pcp=pcp, dp=dp, pp=pp, dcp=dcp, ep=ep))
            if crosses(groups[name], gpn):
                assert layout.per_node(group) == busiest_node_members(groups[name], gpn), where
                compared += 1
            else:
                assert layout.per_node(group) >= len(groups[name][0]), where
    assert compared > 100


@pytest.mark.parametrize("rack", [16, 32, 72])
def test_rack_that_is_one_domain_counts_as_one_node(rack: int) -> None:
    for gpn, tp, pcp, dp, pp, dcp, ep in grid():
        if dp * pp * pcp * tp > rack:
            continue  # the deployment fits one domain, so no group can leave it
        layout = make_layout(tp, pp, dp, pcp, dcp, ep, gpn, rack=rack)
        groups = vllm_groups(tp, pp, dp, pcp, dcp)
        for name, group in AXES.items():
            assert layout.crosses_nodes(group) is False, (name, gpn, tp, pcp, dp, dcp)
            assert crosses(groups[name], rack) is False
        assert layout.crosses_nodes(Group.EXPERT) is False


def test_no_node_size_never_crosses() -> None:
    layout = make_layout(8, 1, 2, 2, 2, True, 0)
    for group in Group:
        assert layout.crosses_nodes(group) is False
        assert layout.per_node(group) == float("inf")


def test_span_for_uses_ring_for_tp_and_all_to_all_for_routed_ep() -> None:
    """16 ranks on 8-GPU nodes over a 9× fabric: a TP all-reduce (ring) 23/15, a routed EP
    all-to-all 79/15; a naive (all-gather) EP dispatch is a ring."""
    tp16 = make_layout(16, 1, 1, 1, 1, False, 8)
    assert tp16.crosses_nodes(Group.TP)
    assert tp16.span_for(Op.ALL_REDUCE, Group.TP, 9) == pytest.approx(23 / 15, rel=1e-15)
    routed = resolve_layout(
        tp=8,
        pp=1,
        dp=2,
        pcp=1,
        dcp=1,
        ep_enabled=True,
        gpus_per_node=8,
        rack_gpus=0,
        all2all_backend="deepep_low_latency",
        sp_moe_backends=frozenset(),
        custom_all_reduce_widths=frozenset(),
        disable_custom_all_reduce=None,
        allreduce_backend=None,
    )
    assert routed.group_size(Group.EXPERT) == 16
    assert routed.crosses_nodes(Group.EXPERT)
    assert routed.span_for(Op.ALL2ALL, Group.EXPERT, 9) == pytest.approx(79 / 15, rel=1e-15)
    naive = make_layout(8, 1, 2, 1, 1, True, 8)
    assert naive.span_for(Op.ALL2ALL, Group.EXPERT, 9) == pytest.approx(23 / 15, rel=1e-15)
    # a non-expert all-to-all is always priced as one
    assert tp16.span_for(Op.ALL2ALL, Group.TP, 9) == pytest.approx(79 / 15, rel=1e-15)


# --------------------------------------------------------------------------------------
# Disagreements with vLLM (law bugs)
# --------------------------------------------------------------------------------------


def test_expert_width_with_dp_and_pcp_is_never_asked_of_the_law() -> None:
    """vLLM's EP group is the whole DP x PCP x TP block, while the layout law takes
    tp·max(dp, pcp): they differ only when both dp and pcp exceed 1, which the deployment
    documents refuse, so the law is never asked."""
    import latencykernel as lk

    inputs = lk.open_inputs("aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml")
    par = inputs.deployment.pools[0].parallel
    par.tp, par.dp, par.pcp = 2, 2, 2
    with pytest.raises(lk.DocumentError, match="pcp"):
        lk.validate_inputs(inputs)


def test_expert_group_under_pipeline_parallel_is_never_asked_of_the_law() -> None:
    """With PP > 1 a stage's DP replicas are pp·pcp·tp ranks apart, which the contiguous
    expert-block law does not model; the kernel refuses pp > 1, so it is never asked."""
    import latencykernel as lk

    inputs = lk.open_inputs("aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml")
    inputs.scenario.cluster.gpus_per_node = 16
    inputs.deployment.pools[0].parallel.pp = 2
    with pytest.raises(lk.RefusedError) as info:
        lk.new(inputs)
    assert info.value.setting == "parallel.pp"


def test_rack_rule_with_a_domain_not_a_multiple_of_the_block() -> None:
    tp, pp, dp, pcp, dcp, gpn, rack = 8, 1, 5, 2, 1, 4, 72
    layout = make_layout(tp, pp, dp, pcp, dcp, False, gpn, rack=rack)
    groups = vllm_groups(tp, pp, dp, pcp, dcp)
    assert crosses(groups["pcp"], rack) is True
    assert layout.crosses_nodes(Group.PCP) is True
