"""A name in a document is a name, never a path (issue 10). Each test failed before: the
escaping names opened (``hardware: ../networks/ib-400g`` read a network file as a chip) and
bad scenario paths raised ``OSError`` or said "neither /x nor /x exists"."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import latencykernel as lk
from latencykernel import DocumentError

LLAMA = "examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml"


def _variant(tmp_path: Path, pattern: str, replacement: str) -> Path:
    src = lk.Repos.default().scenario_path(LLAMA).read_text()
    text, n = re.subn(pattern, replacement, src, count=1, flags=re.M)
    assert n == 1
    out = tmp_path / "variant.yaml"
    out.write_text(text)
    return out


@pytest.mark.parametrize(
    ("pattern", "replacement", "key"),
    [
        (r"^model: .*$", "model: ../models/llama-3.1-8b-instruct", "model"),
        (r"^  hardware: .*$", "  hardware: ../networks/ib-400g", "cluster.hardware"),
        (r"^  hardware: .*$", "  hardware: {abs}", "cluster.hardware"),
        (r"^coefficients: \[", "coefficients: [../coefficients/cost-model-memory, ", "coefficients[0]"),
        (r"^model: .*$", "model: " + "a" * 300, "model"),
        (r"^  hardware: .*$", "  hardware: " + "h" * 300, "cluster.hardware"),
    ],
)
def test_a_name_that_is_a_path_is_refused(tmp_path: Path, pattern: str, replacement: str, key: str) -> None:
    """Defect: these documents opened (or raised OSError: File name too long)."""
    abs_chip = str(lk.Repos.default().catalog / "hardware" / "h100")
    path = _variant(tmp_path, pattern, replacement.replace("{abs}", abs_chip))
    with pytest.raises(DocumentError) as info:
        lk.open(str(path))
    assert info.value.key == key
    assert "\n" not in str(info.value)


def test_the_plain_names_still_open(tmp_path: Path) -> None:
    """The twin: the same document with plain names opens."""
    path = _variant(tmp_path, r"^model: .*$", "model: llama-3.1-8b-instruct")
    assert lk.open(str(path)).model == "llama-3.1-8b-instruct"


@pytest.mark.parametrize(
    ("kw", "key"),
    [
        ({"model": "../models/llama-3.1-8b-instruct"}, "model"),
        ({"hardware": "../networks/ib-400g"}, "hardware"),
        ({"hardware": "/etc/h100"}, "hardware"),
        ({"coefficients": ["../coefficients/cost-model-memory"]}, "coefficients[0]"),
        ({"model": "m" * 300}, "model"),
    ],
)
def test_build_refuses_paths_as_names(kw: dict[str, object], key: str) -> None:
    """Defect: build() resolved these outside the catalog."""
    args = {"model": "llama-3.1-8b-instruct", "hardware": "h100", **kw}
    with pytest.raises(DocumentError) as info:
        lk.build(args.pop("model"), args.pop("hardware"), **args)  # type: ignore[arg-type]
    assert info.value.key == key


def test_a_very_long_scenario_name_is_this_packages_error() -> None:
    """Defect: lk.open("a"*300) raised OSError: File name too long."""
    with pytest.raises(DocumentError, match="longer than a file name"):
        lk.open("a" * 300)


@pytest.mark.parametrize("kind", ["directory", "devnull", "loop"])
def test_a_scenario_that_is_not_a_regular_file_says_so(tmp_path: Path, kind: str) -> None:
    """Defect: a directory, /dev/null or a symlink loop said "neither /x nor /x exists"."""
    if kind == "directory":
        target, words = str(tmp_path), "a directory"
    elif kind == "devnull":
        target, words = os.devnull, "not a regular file"
    else:
        target = str(tmp_path / "loop.yaml")
        os.symlink(target, target)
        words = "symbolic link"
    with pytest.raises(DocumentError) as info:
        lk.open(target)
    assert words in str(info.value)
    assert "neither" not in str(info.value)


def test_a_string_pool_index_is_named_as_a_string() -> None:
    """Defect: open_pool(..., pool="1") said "pool 1 was requested"."""
    with pytest.raises(DocumentError) as info:
        lk.open_pool(LLAMA, pool="1")  # type: ignore[arg-type]
    assert "'1'" in str(info.value) and "whole-number index" in str(info.value)
