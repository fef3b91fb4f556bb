"""Run the Python examples of docs/guide.md and docs/concepts/*.md and write what each prints
into the ```text block under it (tests/test_docs_guide.py compares the two):

    python tools/run_doc_examples.py            # rewrite the outputs
    python tools/run_doc_examples.py --check    # exit 1 if any page would change
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"```(python|text)\n(.*?)```", re.S)


def rewrite(page: Path) -> str:
    text = page.read_text()
    ns: dict[str, object] = {}
    out: list[str] = []
    pos = 0
    last_output: str | None = None
    for m in BLOCK.finditer(text):
        kind, body = m.group(1), m.group(2)
        out.append(text[pos : m.start()])
        if kind == "python":
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compile(body, str(page), "exec"), ns)  # noqa: S102 - our own documentation
            last_output = buf.getvalue()
            out.append(m.group(0))
        elif last_output is not None:
            out.append(f"```text\n{last_output}```")
            last_output = None
        else:
            out.append(m.group(0))
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def main() -> None:
    pages = [DOCS / "guide.md", *sorted((DOCS / "concepts").glob("*.md"))]
    changed = []
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # the chart examples write their files here
        try:
            for page in pages:
                new = rewrite(page)
                if new != page.read_text():
                    changed.append(page)
                    if "--check" not in sys.argv:
                        page.write_text(new)
        finally:
            os.chdir(here)
    for p in changed:
        print(("stale: " if "--check" in sys.argv else "rewrote: ") + str(p))
    if "--check" in sys.argv and changed:
        sys.exit(1)


if __name__ == "__main__":
    main()
