"""The docs pages are generated from the metadata (and their examples run); ``latencykernel
explain`` prints the metadata with the values, floor and calibrated side by side."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from latencykernel.scenarios import KvDecodeBatchScenario, Scenarios
from latencykernel.scenarios.docs import pages

DOCS = Path(__file__).resolve().parents[1] / "docs" / "scenarios"
PAGES = pages()


def test_committed_pages_are_the_generated_ones() -> None:
    committed = {p.name for p in DOCS.glob("*.md")}
    assert committed == set(PAGES), "regenerate with: python -m latencykernel.scenarios.docs"
    for name, text in PAGES.items():
        assert (DOCS / name).read_text(encoding="utf-8") == text, (
            f"docs/scenarios/{name} differs from its metadata; regenerate with: python -m latencykernel.scenarios.docs"
        )


@pytest.mark.parametrize("name", sorted(n for n, t in PAGES.items() if ">>> " in t))
def test_page_examples_run(name: str) -> None:
    text = PAGES[name]
    test = doctest.DocTestParser().get_doctest(text, {}, name, name, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert test.examples


def test_page_carries_every_equation_and_the_named_values() -> None:
    page = PAGES["KvDecodeBatchScenario.md"]
    for out in KvDecodeBatchScenario.outputs():
        assert f"`{out.equation}`" in page
    assert "### `Gpt2XlChatDecodeBatchesH100`" in page and "| `max_batch_in_memory` |  | 263 |" in page
    index = PAGES["index.md"]
    assert "Llama3_70B_ServingH100" in index and "framework tax" in index  # left out, with the reason


def _app():  # the CLI with its sub-commands registered, as ``main()`` does
    from latencykernel.cli import _register, app

    _register()
    return app


def test_explain_prints_equations_values_and_the_calibrated_side() -> None:
    r = CliRunner().invoke(_app(), ["explain", "Gpt2XlChatDecodeBatchesH100"], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    s = Scenarios.Gpt2XlChatDecodeBatchesH100
    assert "step_bytes(batch_size) / bandwidth" in r.output
    assert "floor((tpot * bandwidth - weights) / kv_per_sequence)" in r.output
    assert "3.88271 ms" in r.output and "263" in r.output  # prefill_time, max_batch_in_memory
    assert all(a in r.output for a in s.assumptions) and "leaves out" in r.output
    assert "calibrated step" in r.output and "Kernel(gpt2-xl on h100" in r.output


def test_explain_json_has_both_answers() -> None:
    r = CliRunner().invoke(_app(), ["explain", "Gpt2XlChatDecodeBatchesH100", "--json", "--batch", "1,64"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    rows = {(x["name"], x["args"]): x for x in data["scenario"]["rows"]}
    assert rows[("step_time", "64")]["value"] == "6.90527 ms"
    assert [row["batch"] for row in data["calibrated"]["step"]] == [1, 64]  # rows are objects of numbers now
    formulas = {f["name"]: f for f in data["scenario"]["formulas"]}
    assert formulas["step_time"]["equation"] == "step_bytes(batch_size) / bandwidth"


def test_explain_a_deployment_and_the_listing() -> None:
    r = CliRunner().invoke(
        _app(),
        ["explain", "examples/llama-3.1-70b-instruct-h100-bf16-tp4.yaml", "--context", "8192", "--batch", "1,32"],
        env={"COLUMNS": "250"},
    )
    assert r.exit_code == 0, r.output
    assert "CalibratedDecodeBatch" in r.output and "SparseKvDecodeBatchScenario" in r.output
    assert "calibrated step" in r.output
    r = CliRunner().invoke(_app(), ["explain", "--list"], env={"COLUMNS": "250"})
    assert r.exit_code == 0 and "Gpt2XlChatDecodeBatchesH100" in r.output and "left out" in r.output


def test_explain_refusals_exit_2_with_the_reason() -> None:
    for name, expect in (("Llama3_70B_ServingH100", "framework tax"), ("NoSuchScenario", "neither a named scenario")):
        p = subprocess.run([sys.executable, "-m", "latencykernel", "explain", name], capture_output=True, text=True)
        assert p.returncode == 2, p.stderr
        assert expect in p.stderr


def test_explain_passes_errors_inside_a_real_file_through(tmp_path: Path) -> None:
    """Only a name that resolves to no file is re-worded as "neither a named scenario ...";
    a bad key inside a real bundle and a bad --pool come through as themselves."""
    from latencykernel.errors import DocumentError
    from latencykernel.repos import Repos
    from latencykernel.scenarios.errors import UnknownScenarioError

    src = Repos.default().scenario_path("examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text(src.read_text().replace("      tp: 1\n", "      tp: one\n"))
    r = CliRunner().invoke(_app(), ["explain", str(bad)])
    assert isinstance(r.exception, DocumentError) and not isinstance(r.exception, UnknownScenarioError)
    assert "pools[0].parallel.tp: expected an integer" in str(r.exception)
    assert "neither a named scenario" not in str(r.exception)
    r = CliRunner().invoke(_app(), ["explain", str(src), "--pool", "3"])
    assert isinstance(r.exception, DocumentError) and "pool 3 was requested" in str(r.exception)
    assert "neither a named scenario" not in str(r.exception)
    r = CliRunner().invoke(_app(), ["explain", "Gpt2XlChatDecodeBatchesH10"])
    assert isinstance(r.exception, UnknownScenarioError)
    assert "neither a named scenario" in str(r.exception)
    assert "(closest first): Gpt2XlChatDecodeBatchesH100," in str(r.exception)
