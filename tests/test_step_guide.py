"""The Go guide's worked example and the step-anatomy table (blis-kernel-spec §17), on the
embedded data. Expected figures are the Go kernel's published outputs."""

from __future__ import annotations

import pytest

import latencykernel as lk
from latencykernel import Batch, ReqShape, Resource

GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"
MS = 1e-3


@pytest.fixture(scope="module")
def kernel() -> lk.Kernel:
    return lk.open(GUIDE)


def guide_batch(n: int = 32) -> Batch:
    return Batch([ReqShape(scheduled=1, computed=4095, prompt_len=4096) for _ in range(n)], decode_threshold=8)


def test_the_go_kernels_worked_decode_step_as_printed(kernel: lk.Kernel) -> None:
    """blis-kernel-spec §17: "Overlap 24.1 ms, NoOverlap 25.6 ms, bottleneck hbm; sm 4.5 ms,
    hbm 16.5 ms, nvlink 1.1 ms, host 3.5 ms" (the guide's newer run prints 25.7 and 1.2)."""
    e = kernel.step_time(guide_batch())
    per = e.per_resource
    printed = [
        f"{x / MS:.1f}"
        for x in (
            e.overlap,
            e.no_overlap,
            per[Resource.SM],
            per[Resource.HBM],
            per[Resource.NVLINK],
            per[Resource.HOST],
        )
    ]
    assert printed == ["24.1", "25.6", "4.5", "16.5", "1.1", "3.5"]


def test_guide_example_prints_its_figures(kernel: lk.Kernel) -> None:
    e = kernel.step_time(guide_batch())
    line = f"between {e.overlap / MS:.1f} and {e.no_overlap / MS:.1f} ms, bottleneck {e.bottleneck}"
    assert e.bottleneck is Resource.HBM
    assert e.overlap == pytest.approx(24.1 * MS, rel=0.05), line
    assert e.no_overlap == pytest.approx(25.7 * MS, rel=0.05), line
    per = e.per_resource
    assert per[Resource.SM] == pytest.approx(4.5 * MS, rel=0.05)
    assert per[Resource.HBM] == pytest.approx(16.5 * MS, rel=0.05)
    assert per[Resource.NVLINK] == pytest.approx(1.2 * MS, rel=0.10)
    assert per[Resource.HOST] == pytest.approx(3.5 * MS, rel=0.05)
    assert Resource.NIC not in per  # nothing leaves the node


# requests: (HBM, SM, NVLink, host, Overlap, NoOverlap) in ms, read from the Go kernel's
# step-anatomy figure (blis-kernel-spec §17).
ANATOMY = {
    1: (2.07, 3.52, 0.60, 3.54, 8.81, 9.71),
    2: (2.75, 3.55, 0.60, 3.54, 9.52, 10.45),
    4: (4.09, 3.60, 0.65, 3.54, 10.91, 11.86),
    8: (6.52, 3.74, 0.71, 3.54, 13.45, 14.48),
    16: (10.61, 3.98, 0.85, 3.54, 17.78, 18.98),
    32: (16.50, 4.47, 1.12, 3.54, 24.11, 25.64),
    64: (22.99, 5.45, 1.64, 3.54, 31.50, 33.63),
    128: (28.58, 7.42, 2.73, 3.54, 38.89, 42.27),
    256: (35.24, 11.37, 4.88, 3.54, 49.17, 55.01),
}


@pytest.mark.parametrize("n", sorted(ANATOMY))
def test_step_anatomy_cells_within_the_figures_precision(kernel: lk.Kernel, n: int) -> None:
    """Each cell within 5% (the issue's bar) and within the ±0.03 ms the figure was read at."""
    e = kernel.step_time(Batch.decode(n, 4096, decode_threshold=8))
    got = (
        e.per_resource[Resource.HBM],
        e.per_resource[Resource.SM],
        e.per_resource[Resource.NVLINK],
        e.per_resource[Resource.HOST],
        e.overlap,
        e.no_overlap,
    )
    for value, cell in zip(got, ANATOMY[n]):
        assert value == pytest.approx(cell * MS, rel=0.05)
        assert value == pytest.approx(cell * MS, abs=0.035 * MS)


def test_anatomy_bottleneck_is_host_then_hbm(kernel: lk.Kernel) -> None:
    for n in ANATOMY:
        b = kernel.step_time(Batch.decode(n, 4096)).bottleneck
        assert b is (Resource.HOST if n <= 2 else Resource.HBM), n


def test_batching_divides_time_per_request(kernel: lk.Kernel) -> None:
    one = kernel.step_time(Batch.decode(1, 4096)).no_overlap
    many = kernel.step_time(Batch.decode(256, 4096)).no_overlap
    assert 5.0 < many / one < 7.0  # "multiplies the step ≈6×"
    assert 40 < one / (many / 256) < 50  # "divides time per request ≈45×"


def test_step_time_into_fills_and_clears_the_callers_dict(kernel: lk.Kernel) -> None:
    per: dict[Resource, float] = {Resource.NIC: 99.0}
    e = kernel.step_time_into(guide_batch(), per)
    assert e.per_resource is per  # the caller's dict, reused
    assert Resource.NIC not in per  # cleared first
    assert per == kernel.step_time(guide_batch()).per_resource


def test_no_overlap_is_the_sum_of_resources_and_bounds_overlap(kernel: lk.Kernel) -> None:
    for n in (1, 7, 64, 300):
        e = kernel.step_time(Batch.decode(n, 1000))
        assert sum(e.per_resource.values()) == pytest.approx(e.no_overlap, rel=1e-12)
        assert 0 < e.overlap <= e.no_overlap
