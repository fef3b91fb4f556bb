"""Shared fixtures: where the team's shared/ folder is (beside the repository), if present."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DIR = Path(__file__).resolve().parents[1].parent / "shared"

needs_shared = pytest.mark.skipif(not SHARED_DIR.is_dir(), reason=f"{SHARED_DIR} is absent")


@pytest.fixture
def shared_dir() -> Path:
    """The shared/ folder beside the repository (the test is skipped when it is absent)."""
    if not SHARED_DIR.is_dir():
        pytest.skip(f"{SHARED_DIR} is absent")
    return SHARED_DIR
