"""YAML reading, comment stripping, the error mapping and the document cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencykernel.documents import common
from latencykernel.documents.chip import load_chip
from latencykernel.documents.common import fmt_loc, read_yaml, read_yaml_all, strip_comment_keys
from latencykernel.errors import DocumentError, LatencyKernelError


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    p = tmp_path / "nope.yaml"
    with pytest.raises(DocumentError) as ei:
        read_yaml(p)
    assert str(p) in str(ei.value) and "not found" in str(ei.value)
    assert ei.value.file == str(p)
    assert isinstance(ei.value, LatencyKernelError) and isinstance(ei.value, ValueError)


def test_bad_yaml_names_file_and_line(tmp_path: Path) -> None:
    p = write(tmp_path, "bad.yaml", "a: 1\nb: [1, 2\n")
    with pytest.raises(DocumentError) as ei:
        read_yaml(p)
    msg = str(ei.value)
    assert str(p) in msg and "invalid YAML" in msg and "line" in msg
    assert "Traceback" not in msg and "yaml." not in msg


def test_duplicate_keys_are_rejected(tmp_path: Path) -> None:
    p = write(tmp_path, "dup.yaml", "a: 1\nb: 2\na: 3\n")
    with pytest.raises(DocumentError, match="duplicate key 'a'"):
        read_yaml(p)


def test_anchors_resolve_and_merge_keys_allowed(tmp_path: Path) -> None:
    p = write(tmp_path, "a.yaml", "x: &n {op: GEMM, n: 1}\ny: *n\nz:\n  <<: *n\n  n: 2\n")
    data = read_yaml(p)
    assert data["y"] == {"op": "GEMM", "n": 1}
    assert data["z"] == {"op": "GEMM", "n": 2}


def test_unsigned_exponent_floats_are_numbers(tmp_path: Path) -> None:
    p = write(tmp_path, "f.yaml", "a: 2.0e4\nb: 1e3\nc: 7.0e-3\nd: '2.0e4'\ne: 0.29.0\nf: 12\n")
    data = read_yaml(p)
    assert data == {"a": 20000.0, "b": 1000.0, "c": 0.007, "d": "2.0e4", "e": "0.29.0", "f": 12}
    assert isinstance(data["f"], int)


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=1e-6, max_value=1e12, allow_nan=False, allow_infinity=False))
def test_exponent_floats_round_trip(tmp_path_factory: pytest.TempPathFactory, x: float) -> None:
    text = f"{x:e}".replace("e+", "e")  # the unsigned form PyYAML's YAML 1.1 resolver misses
    p = tmp_path_factory.mktemp("f") / "x.yaml"
    p.write_text(f"v: {text}\n")
    assert read_yaml(p)["v"] == float(text)


def test_read_all_documents(tmp_path: Path) -> None:
    p = write(tmp_path, "two.yaml", "a: 1\n---\nb: 2\n")
    assert read_yaml_all(p) == [{"a": 1}, {"b": 2}]


def test_strip_comment_keys_only_comment_keys() -> None:
    m = {"_comment": "x", "_comment_sm": "y", "_commentary": 1, "comment": 2, "A": 3}
    assert strip_comment_keys(m) == {"_commentary": 1, "comment": 2, "A": 3}
    assert m["_comment"] == "x"  # not modified in place
    assert strip_comment_keys([1]) == [1]


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(0, 99), st.sampled_from(["pools", "engine", "x_y", "global"])), min_size=1, max_size=6
    )
)
def test_fmt_loc_spells_indices_in_brackets(loc: list[object]) -> None:
    text = fmt_loc(loc)
    expected = ""
    for part in loc:
        expected += f"[{part}]" if isinstance(part, int) else (f".{part}" if expected else str(part))
    assert text == expected


CHIP = """\
Provenance: vendor_spec
TFlopsPeak: 989.5
TFlopsFP8: 1979.0
BwPeakTBs: 3.35
MemoryGiB: 80.0
IntraNodeBwGBps: 450
SMCount: 132
"""


def test_cache_returns_independent_copies_and_sees_edits(tmp_path: Path) -> None:
    p = write(tmp_path, "hardware/h100.yaml", CHIP)
    a = load_chip(p)
    a.SMCount = 1
    b = load_chip(p)
    assert b.SMCount == 132 and b.name == "h100"
    p.write_text(CHIP.replace("SMCount: 132", "SMCount: 100"))
    st_ = p.stat()
    os.utime(p, ns=(st_.st_atime_ns, st_.st_mtime_ns + 10_000_000))
    assert load_chip(p).SMCount == 100
    common.clear_cache()
    assert load_chip(p).SMCount == 100


def test_messages_are_plain_sentences(tmp_path: Path) -> None:
    p = write(tmp_path, "hardware/x.yaml", CHIP.replace("SMCount: 132", "SMCount: many"))
    with pytest.raises(DocumentError) as ei:
        load_chip(p)
    msg = str(ei.value)
    assert msg == f"{p}: SMCount: expected an integer, got 'many'"
    assert "pydantic" not in msg and "Input should" not in msg
    assert ei.value.__cause__ is None and ei.value.__suppress_context__


def test_a_warm_open_parses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from latencykernel.documents import chip as chip_module

    calls: list[Path] = []
    real = chip_module._parse_chip

    def counting(path: Path):  # type: ignore[no-untyped-def]
        calls.append(path)
        return real(path)

    monkeypatch.setattr(chip_module, "_parse_chip", counting)
    p = write(tmp_path, "hardware/w.yaml", CHIP)
    for _ in range(3):
        assert load_chip(p).name == "w"
    assert len(calls) == 1
    assert load_chip(tmp_path / "hardware" / ".." / "hardware" / "w.yaml").SMCount == 132
    assert len(calls) == 1  # the same file by another spelling of its path
