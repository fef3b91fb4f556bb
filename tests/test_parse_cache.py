"""The parsed-YAML cache (documents/yaml_loader.py) returns exactly what parsing returns, and
never what a changed, corrupted or un-round-trippable file would not parse to."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from latencykernel.documents import yaml_loader
from latencykernel.documents.yaml_loader import read_yaml, read_yaml_all
from latencykernel.repos import Repos


def _plain(path: Path) -> object:
    return yaml.load(path.read_text(), Loader=yaml_loader._loader())  # noqa: S506 - the package's safe loader


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LATENCYKERNEL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "parsed-yaml-v1"


def test_cached_parse_equals_a_fresh_parse_for_every_large_embedded_file(cache: Path) -> None:
    """Guards the cache changing data: every embedded catalog and registry file reads the same
    on a miss (written) and on a hit (read from JSON) as parsing it directly."""
    repos = Repos.default()
    large = [
        p
        for root in (repos.catalog, repos.registry)
        for p in sorted(root.rglob("*.yaml"))
        if p.stat().st_size >= yaml_loader.PARSE_CACHE_MIN_BYTES
    ]
    assert len(large) >= 30  # the coefficient sets, graphs, chips, fabrics, storage
    for p in large:
        want = _plain(p)
        assert read_yaml(p) == want  # miss
        assert read_yaml(p) == want  # hit

    def round_trips(p: Path) -> bool:
        try:
            return json.loads(json.dumps(_plain(p), allow_nan=False)) == _plain(p)
        except (TypeError, ValueError):
            return False

    cacheable = {hashlib.sha256(p.read_text(encoding="utf-8").encode()).hexdigest() for p in large if round_trips(p)}
    assert {e.stem for e in cache.glob("*.json")} == cacheable and len(cacheable) >= 20


def test_an_edited_file_is_parsed_again(tmp_path: Path, cache: Path) -> None:
    """Guards a stale entry: the cache is addressed by content, so new text parses anew."""
    p = tmp_path / "big.yaml"
    body = "".join(f"k{i}: {i}\n" for i in range(6000))
    p.write_text(body)
    assert read_yaml(p)["k5"] == 5
    p.write_text(body.replace("k5: 5\n", "k5: 55\n"))
    assert read_yaml(p)["k5"] == 55


def test_a_corrupted_entry_is_ignored(tmp_path: Path, cache: Path) -> None:
    """Guards a truncated or garbled cache file breaking a load."""
    p = tmp_path / "big.yaml"
    p.write_text("".join(f"k{i}: {i}\n" for i in range(6000)))
    read_yaml(p)
    (entry,) = cache.glob("*.json")
    entry.write_text("{not json")
    assert read_yaml(p)["k7"] == 7


def test_data_json_cannot_hold_exactly_is_not_cached(tmp_path: Path, cache: Path) -> None:
    """Guards a lossy round trip: integer keys (JSON makes them strings) and dates stay as
    YAML parses them, and no entry is written for them."""
    p = tmp_path / "big.yaml"
    p.write_text("when: 2024-01-01\n" + "".join(f"{i}: {i}\n" for i in range(6000)))
    data = read_yaml(p)
    assert data[7] == 7 and not isinstance(data["when"], str)
    assert read_yaml(p)[7] == 7
    assert not list(cache.glob("*.json")) if cache.exists() else True


def test_bundles_read_through_the_cache_keep_their_documents(tmp_path: Path, cache: Path) -> None:
    """Guards read_yaml_all: a multi-document file reads back as the same list of documents."""
    p = tmp_path / "bundle.yaml"
    p.write_text("a: 1\n" + "".join(f"x{i}: {i}\n" for i in range(4000)) + "---\nb: 2\n")
    first = read_yaml_all(p)
    assert read_yaml_all(p) == first and first[1] == {"b": 2}


def test_the_cache_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards the documented switch: LATENCYKERNEL_CACHE_DIR="" writes nothing."""
    monkeypatch.setenv("LATENCYKERNEL_CACHE_DIR", "")
    assert yaml_loader.parse_cache_dir() is None
    p = tmp_path / "big.yaml"
    p.write_text("".join(f"k{i}: {i}\n" for i in range(6000)))
    assert read_yaml(p)["k1"] == 1
    assert json.dumps(read_yaml(p))  # still plain data


def test_a_load_served_from_the_cache_imports_no_yaml(tmp_path: Path) -> None:
    """Guards the first open's import cost: once a file's parse is cached, reading it again in
    a fresh process does not import PyYAML."""
    import subprocess
    import sys

    p = tmp_path / "doc.yaml"
    p.write_text("a: 1\nb: [1, 2]\n")
    env = {**__import__("os").environ, "LATENCYKERNEL_CACHE_DIR": str(tmp_path / "c")}
    code = (
        "import sys; from latencykernel.documents.yaml_loader import read_yaml; "
        f"print(read_yaml({str(p)!r}), 'yaml' in sys.modules)"
    )
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert first.split()[-1] == "True" and again.strip() == "{'a': 1, 'b': [1, 2]} False"
