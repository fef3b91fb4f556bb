"""From files (or catalog names) to a kernel."""

from __future__ import annotations

import os
from typing import Any

from latencykernel.kernel.build import new
from latencykernel.kernel.kernel import Kernel

__all__ = ["open", "open_pool", "build"]


def open_pool(scenario: str | os.PathLike[str], repos: Any = None, pool: int = 0) -> Kernel:
    """Read ``scenario`` and everything it names, and build a kernel for pool ``pool``
    (the cached documents are shared with the kernel, not copied: see ``shared_documents``)."""
    from latencykernel.inputs import open_inputs, shared_documents

    with shared_documents():
        return new(open_inputs(scenario, repos, pool))


def open(scenario: str | os.PathLike[str], repos: Any = None) -> Kernel:  # noqa: A001 - the guide's name
    """``open_pool(scenario, repos, 0)``: the deployment's first pool."""
    return open_pool(scenario, repos, 0)


def build(model: str, hardware: str, **settings: Any) -> Kernel:
    """A kernel for a deployment made in memory from catalog names (see ``build_inputs``);
    it goes through exactly the validation a file does (the cached documents are shared with
    the kernel, not copied: see ``shared_documents``)."""
    from latencykernel.inputs import build_inputs, shared_documents

    with shared_documents():
        return new(build_inputs(model, hardware, **settings))
