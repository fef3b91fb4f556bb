"""docs/laws.md is generated from the laws' docstrings and is current; every law has one."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _generator():  # tools/ is not a package
    spec = importlib.util.spec_from_file_location("gen_laws", ROOT / "tools" / "gen_laws.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_laws_page_is_current() -> None:
    gen = _generator()
    assert (ROOT / "docs" / "laws.md").read_text() == gen.render(), "run: python tools/gen_laws.py"


def test_every_law_states_its_formula() -> None:
    gen = _generator()
    for name in gen.MODULES:
        mod = importlib.import_module(f"latencykernel.price.{name}")
        for fname in mod.__all__:
            doc = getattr(mod, fname).__doc__ or ""
            assert len(doc.strip()) > 40, f"price.{name}.{fname} needs a docstring with its formula"


def test_laws_import_nothing_of_ours() -> None:
    for path in (ROOT / "src" / "latencykernel" / "price").glob("*.py"):
        imports = [
            line.strip() for line in path.read_text().splitlines() if line.strip().startswith(("from ", "import "))
        ]
        assert not [i for i in imports if "latencykernel" in i], path.name
