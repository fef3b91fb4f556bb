"""Tests needing ../shared fail under CI when it is missing, and skip only elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
from pathlib import Path
from conftest import needs_shared, require_shared

MISSING = Path("/nonexistent/shared/for-this-probe")

@needs_shared(MISSING)
def test_marked():
    pass

def test_called():
    require_shared(MISSING)
"""


def _run(tmp_path: Path, ci: str | None) -> str:
    probe = tmp_path / "test_probe.py"
    probe.write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest", str(probe)],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": f"{ROOT / 'tests'}:{env.get('PYTHONPATH', '')}"},
        cwd=tmp_path,
    )
    return out.stdout


def test_missing_shared_skips_without_ci(tmp_path: Path) -> None:
    """Guards failing on a developer's machine without ../shared."""
    tail = _run(tmp_path, None).strip().splitlines()[-1]
    assert "2 skipped" in tail and "failed" not in tail, tail


def test_missing_shared_fails_under_ci(tmp_path: Path) -> None:
    """Guards CI passing quietly when its ../shared is missing (a skip would hide it)."""
    tail = _run(tmp_path, "true").strip().splitlines()[-1]
    # the marked test fails in its setup (pytest counts it an error), the other in its body
    assert "1 failed" in tail and "1 error" in tail and "skipped" not in tail and "passed" not in tail, tail
