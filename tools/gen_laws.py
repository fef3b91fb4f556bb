"""Write docs/laws.md from the docstrings of the laws in latencykernel.price.

python tools/gen_laws.py           # rewrite docs/laws.md
python tools/gen_laws.py --check   # exit 1 if the committed page differs
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

MODULES = ("ramp", "collective", "experts", "kv", "hybrid_kv", "attention", "context", "overlap", "memory", "host")
PAGE = Path(__file__).resolve().parents[1] / "docs" / "laws.md"


def render() -> str:
    out = [
        "# The laws",
        "",
        "Every price is built from these small pure functions in `latencykernel.price`. This page is",
        "generated from their docstrings by `python tools/gen_laws.py`; edit the docstrings, not this page.",
        "Units ride in the argument names (`_s` seconds, `_bytes`, `_per_s`, `_tokens`).",
        "",
    ]
    for name in MODULES:
        mod = importlib.import_module(f"latencykernel.price.{name}")
        out += [f"## `price.{name}`", "", inspect.cleandoc(mod.__doc__ or ""), ""]
        for fname in mod.__all__:
            fn = getattr(mod, fname)
            out += [f"### `{fname}{inspect.signature(fn)}`", "", "```", inspect.cleandoc(fn.__doc__ or ""), "```", ""]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if PAGE.read_text() == text else 1)
    PAGE.write_text(text)
