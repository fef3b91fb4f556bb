"""The kernel: build (``new``), open from files, and price."""

from latencykernel.kernel.build import new
from latencykernel.kernel.kernel import KERNEL_ASSUMPTION_SET, CoefficientOrigin, Kernel, Placement, Resolution
from latencykernel.kernel.memory import MemoryBreakdown
from latencykernel.kernel.opening import build, open, open_pool

__all__ = [
    "new",
    "open",
    "open_pool",
    "build",
    "Kernel",
    "CoefficientOrigin",
    "Resolution",
    "Placement",
    "MemoryBreakdown",
    "KERNEL_ASSUMPTION_SET",
]
