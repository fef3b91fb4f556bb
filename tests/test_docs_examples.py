"""The README's Python examples run, and print what the README says they print."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_readme_has_a_python_example() -> None:
    assert python_blocks()


def test_readme_examples_run() -> None:
    out = io.StringIO()
    for block in python_blocks():
        with contextlib.redirect_stdout(out):
            exec(compile(block, "README.md", "exec"), {})  # noqa: S102 - our own documentation
    lines = out.getvalue().splitlines()
    assert lines[0] == "between 24.1 and 25.6 ms, bottleneck hbm"  # the guide's step (spec §17 figures)
    assert [line.split()[0] for line in lines[1:5]] == ["sm", "hbm", "nvlink", "host"]
    assert lines[5].startswith("TTFT median ") and len(lines) == 6  # the serving example
