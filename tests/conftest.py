"""Shared fixtures: where the team's shared/ folder is (beside the repository), if present.

A test that needs shared/ (``@needs_shared``, ``@needs_shared(path)``, the ``shared_dir``
fixture or ``require_shared(path)``) is skipped on a machine without it, but fails where CI
runs (environment ``CI`` set to true): CI always has ``../shared``, so a missing folder there
is a broken checkout, not a reason to pass quietly.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# The parsed-YAML cache (documents/yaml_loader.py) writes to a directory of this run, never
# to the user's ~/.cache; subprocesses the tests start inherit it.
os.environ.setdefault("LATENCYKERNEL_CACHE_DIR", tempfile.mkdtemp(prefix="latencykernel-test-cache-"))

SHARED_DIR = Path(__file__).resolve().parents[1].parent / "shared"

needs_shared = pytest.mark.needs_shared


def in_ci() -> bool:
    """Whether the tests run under CI (``CI=true``, as CI services and ``.ci/run`` set it)."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def require_shared(path: Path = SHARED_DIR) -> Path:
    """``path`` (inside shared/) if it exists; else fail under CI, skip elsewhere."""
    if path.exists():
        return path
    message = f"{path} is absent"
    if in_ci():
        pytest.fail(f"{message}, but CI=true: CI always has ../shared, so this test may not skip", pytrace=False)
    pytest.skip(message)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "needs_shared(path=None): needs ../shared (or that path in it); skipped without it, failed under CI"
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers(name="needs_shared"):
        require_shared(Path(mark.args[0]) if mark.args else SHARED_DIR)


@pytest.fixture
def shared_dir() -> Path:
    """The shared/ folder beside the repository (skipped when absent, failed under CI)."""
    return require_shared(SHARED_DIR)
