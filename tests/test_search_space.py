"""The search space: YAML/mapping loading, enumeration order and the layouts it forms."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencykernel.errors import DocumentError
from latencykernel.search import Deployment, deployments, load_space


def test_enumeration_is_the_product_in_written_order() -> None:
    """Guards a search whose order depends on hashing or dict order (results must be
    reproducible): chips first, then tp, dp, expert parallel, then engine settings, the last
    key varying fastest; indices count up from 0."""
    sp = load_space(
        {
            "hardware": ["b200", "h200"],
            "tp": [8, 4],
            "dp": [1, 2],
            "expert_parallel": [False, True],
            "cache_dtype": [None, "fp8"],
        }
    )
    deps = deployments(sp)
    assert len(deps) == 2 * 2 * 2 * 2 * 2
    assert [d.index for d in deps] == list(range(32))
    keys = [(d.hardware, d.layout.tp, d.layout.dp, d.layout.expert_parallel, d.cache_dtype) for d in deps]
    expected = [
        (hw, tp, dp, ep, kv)
        for hw in ["b200", "h200"]
        for tp in [8, 4]
        for dp in [1, 2]
        for ep in [False, True]
        for kv in [None, "fp8"]
    ]
    assert keys == expected
    assert deployments(sp) == deps  # the same twice


def test_gpu_counts_set_dp_from_tp() -> None:
    """Guards GPU counts that do not add up: with ``gpus`` and ``tp`` only, each layout has
    exactly tp × dp = gpus, and tp values that do not divide a count are left out."""
    deps = deployments(load_space({"hardware": ["h200"], "gpus": [8, 12], "tp": [1, 4, 8]}))
    assert [(d.layout.tp, d.layout.dp) for d in deps] == [(1, 8), (4, 2), (8, 1), (1, 12), (4, 3)]
    assert all(d.gpus == d.layout.tp * d.layout.dp for d in deps)


def test_ep_filter_keeps_only_listed_expert_widths() -> None:
    """Guards the ``ep`` key being ignored: expert-parallel layouts whose tp × dp is not
    listed are left out, layouts without expert parallelism are kept."""
    deps = deployments(
        load_space({"hardware": ["h200"], "tp": [4, 8], "dp": [1, 2], "expert_parallel": [False, True], "ep": [8]})
    )
    for d in deps:
        assert not d.layout.expert_parallel or d.layout.gpus == 8
    assert sum(d.layout.expert_parallel for d in deps) == 2  # (4, 2) and (8, 1)
    assert sum(not d.layout.expert_parallel for d in deps) == 4


def test_disaggregated_points_count_every_pool_gpu() -> None:
    """Guards xPyD deployments priced per GPU with only one pool counted."""
    sp = load_space(
        {
            "hardware": ["h200"],
            "colocated": False,
            "disaggregation": {
                "prefill": {"tp": [4]},
                "decode": {"tp": [8]},
                "prefill_workers": [1, 3],
                "decode_workers": [2],
            },
        }
    )
    deps = deployments(sp)
    assert [(d.prefill_workers, d.decode_workers, d.gpus) for d in deps] == [(1, 2, 4 + 16), (3, 2, 12 + 16)]
    assert all(d.disaggregated for d in deps)
    assert deps[1].label() == "h200 3P(tp4 dp1)+2D(tp8 dp1)"


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"hardware": []}, "hardware"),
        ({"hardware": ["h200"], "tp": [0]}, "tp.0"),
        ({"hardware": ["h200"], "tpp": [1]}, "tpp"),
        ({"hardware": ["h200"], "max_num_seqs": [-4]}, "max_num_seqs.0"),
        ({"tp": [1]}, "hardware"),
    ],
)
def test_bad_space_names_the_key(data: dict[str, object], key: str) -> None:
    """Guards raw pydantic errors escaping: a bad space is a DocumentError naming its key."""
    with pytest.raises(DocumentError) as e:
        load_space(data)
    assert e.value.key.startswith(key)
    assert key.split(".")[0] in str(e.value)


def test_space_from_yaml_file(tmp_path: Path) -> None:
    """Guards the YAML loader: ``null`` in a list is an unstated setting, files that are not
    a mapping are refused naming the file."""
    f = tmp_path / "space.yaml"
    f.write_text("hardware: [h200]\ntp: [8]\nquantization: [null, fp8]\n")
    deps = deployments(load_space(f))
    assert [d.quantization for d in deps] == [None, "fp8"]
    assert deps[0].engine() == {} and deps[1].engine() == {"quantization": "fp8"}
    bad = tmp_path / "bad.yaml"
    bad.write_text("- h200\n")
    with pytest.raises(DocumentError, match="bad.yaml"):
        load_space(bad)
    with pytest.raises(DocumentError, match="not found"):
        load_space(tmp_path / "absent.yaml")


@settings(max_examples=50, deadline=None)
@given(
    tps=st.lists(st.sampled_from([1, 2, 4, 8, 16]), min_size=1, max_size=4, unique=True),
    dps=st.lists(st.sampled_from([1, 2, 4]), min_size=1, max_size=3, unique=True),
    seqs=st.lists(st.one_of(st.none(), st.integers(1, 4096)), min_size=1, max_size=3),
)
def test_count_is_the_product_of_the_choices(tps: list[int], dps: list[int], seqs: list[int | None]) -> None:
    """Guards dropped or duplicated combinations: without ``gpus``/``ep`` filters the space
    holds exactly the product of its list lengths, each deployment once."""
    deps = deployments(load_space({"hardware": ["h100", "b200"], "tp": tps, "dp": dps, "max_num_seqs": seqs}))
    assert len(deps) == 2 * len(tps) * len(dps) * len(seqs)
    assert all(isinstance(d, Deployment) for d in deps)
    assert len({(d.hardware, d.layout, d.max_num_seqs, i % len(seqs)) for i, d in enumerate(deps)}) == len(deps)
