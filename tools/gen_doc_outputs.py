"""Re-run the executed examples of docs/guide.md and docs/concepts/*.md and write what each
```python block prints into the ```text block that follows it.

    python tools/gen_doc_outputs.py           # rewrite the pages
    python tools/gen_doc_outputs.py --check   # exit 1 when a page is stale

The pages are checked by tests/test_docs_guide.py; run this after a law or a default moves a
printed figure, and read the diff before committing it.
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
FENCE = re.compile(r"```(python|text)\n(.*?)```", re.S)


def refresh(page: Path) -> str:
    """The page's text with every shown output replaced by what its code prints now."""
    text = page.read_text()
    ns: dict[str, object] = {}
    out: list[str] = []
    last = 0
    printed: str | None = None
    for m in FENCE.finditer(text):
        kind, body = m.group(1), m.group(2)
        if kind == "python":
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compile(body, f"{page.name}", "exec"), ns)  # noqa: S102 - our own documentation
            printed = buf.getvalue()
            continue
        if printed is not None:
            out.append(text[last : m.start()])
            out.append(f"```text\n{printed}```")
            last = m.end()
        printed = None
    out.append(text[last:])
    return "".join(out)


def main() -> int:
    check = "--check" in sys.argv[1:]
    pages = [DOCS / "guide.md", *sorted((DOCS / "concepts").glob("*.md"))]
    stale = []
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # chart examples write their files here
        try:
            for page in pages:
                new = refresh(page)
                if new != page.read_text():
                    stale.append(page)
                    if not check:
                        page.write_text(new)
        finally:
            os.chdir(here)
    for page in stale:
        print(f"{'stale' if check else 'rewrote'}: {page.relative_to(DOCS.parent)}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
