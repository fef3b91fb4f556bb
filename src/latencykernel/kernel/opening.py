"""From files (or catalog names) to a kernel."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from latencykernel.kernel.build import new
from latencykernel.kernel.kernel import Kernel

if TYPE_CHECKING:
    from latencykernel.repos import Repos

__all__ = ["open", "open_pool", "build"]


def open_pool(scenario: str | os.PathLike[str], repos: Repos | None = None, pool: int = 0) -> Kernel:
    """Read ``scenario`` and everything it names, and build a kernel for pool ``pool``."""
    from latencykernel.inputs import open_inputs

    return new(open_inputs(scenario, repos, pool))


def open(scenario: str | os.PathLike[str], repos: Repos | None = None) -> Kernel:  # noqa: A001 - the guide's name
    """``open_pool(scenario, repos, 0)``: the deployment's first pool."""
    return open_pool(scenario, repos, 0)


def build(model: str, hardware: str, **settings: Any) -> Kernel:
    """A kernel for a deployment made in memory from catalog names (see ``build_inputs``);
    it goes through exactly the validation a file does."""
    from latencykernel.inputs import build_inputs

    return new(build_inputs(model, hardware, **settings))
