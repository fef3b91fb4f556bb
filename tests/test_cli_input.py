"""How the commands read what the user types: one duration rule for every command (a unit is
required), one list parser, and arguments that cannot mean anything refused naming them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from latencykernel.cli import main
from latencykernel.cli.common import UsageError, parse_ints, parse_range, parse_reals, parse_seconds
from latencykernel.search import parse_slo

MODEL = ["--model", "llama-3.1-8b-instruct", "--hardware", "h100"]
SEARCH_BASE = ["search", *MODEL, "--isl", "128", "--osl", "16", "--tp", "1"]
SEARCH_BASE += ["--simulator", "_search_standin:simulate", "--workers", "1"]
SEARCH = [*SEARCH_BASE, "--concurrency", "1"]
COMMANDS = {
    "capacity": ["capacity", *MODEL, "--context", "1024"],
    "compare": ["compare", "llama-3.1-8b-instruct@h100", "llama-3.1-8b-instruct@h100:tp=2"],
    "search": SEARCH,
}


def _cli(args: list[str], capsys: Any) -> tuple[int, str, str]:
    try:
        main(args)
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_bare_number_is_refused_by_every_command(command: str, capsys: Any) -> None:
    """Guards review A1: ``--tpot 50`` meant 50 ms to capacity and compare but 50 s to search
    (where every candidate then met the SLO). A bare number is now refused by all three with
    the same advice, and ``50ms`` is 0.05 s in all three."""
    code, _, err = _cli([*COMMANDS[command], "--tpot", "50"], capsys)
    assert code == 2 and "--tpot '50': a duration needs a unit; write 50ms or 0.05s" in err, err
    code, out, err = _cli([*COMMANDS[command], "--tpot", "50ms", "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    got = data["provenance"]["slo"]["tpot_mean"] if command == "search" else data["tpot_s"]
    assert got == 0.05


def test_one_duration_rule_for_the_cli_and_the_library() -> None:
    """Guards review A1 (two parsers, two units): the CLI and ``search.parse_slo`` read text
    alike (unit required, negative named as such), and a library number is seconds."""
    for text, seconds in (("50ms", 0.05), ("0.05s", 0.05), ("50 ms", 0.05), ("200us", 2e-4), ("1.5min", 90.0)):
        assert parse_seconds(text, "--tpot") == seconds
        assert parse_slo({"tpot": text}).targets[0].limit_s == seconds
    assert parse_slo({"tpot": 0.05}).targets[0].limit_s == 0.05
    for bad, why in (("50", "needs a unit"), ("-5ms", "must be positive"), ("5 parsecs", "unknown unit")):
        with pytest.raises(UsageError, match=why):
            parse_seconds(bad, "--tpot")
        with pytest.raises(ValueError, match=f"slo.tpot.*{why}"):
            parse_slo({"tpot": bad})
    with pytest.raises(UsageError, match="at most 3600 s"):
        parse_seconds("61min", "--tpot")


@pytest.mark.parametrize(
    ("text", "why"),
    [("1,,4", "an empty item"), ("1.5", "'1.5' is not a whole number"), ("x", "'x' is not a number"), ("", "no value")],
)
def test_one_list_parser_names_what_is_wrong(text: str, why: str) -> None:
    """Guards review C21/A18: ``1,,4`` passed silently and ``1.5`` was called "not a list of
    numbers"; the one parser refuses each, saying which item is wrong and why."""
    with pytest.raises(UsageError, match=why):
        parse_ints(text, "--concurrency")
    assert parse_ints("16, 1,4", "--concurrency") == [16, 1, 4]  # the order written
    assert parse_reals("0.5,2", "--request-rate") == [0.5, 2.0]
    with pytest.raises(UsageError, match="positive"):
        parse_reals("0,2", "--request-rate")
    assert parse_range("1,8,64", "--requests") == [1, 8, 64]


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["--concurrency", "1,,4"], "--concurrency"),
        (["--concurrency", "1.5"], "--concurrency"),
        (["--request-rate", "2,,8"], "--request-rate"),
        (["--gpus", "2,x"], "--gpus"),
        (["--concurrency", "1", "--hardware", "h100,,b200"], "--hardware"),
    ],
)
def test_search_lists_are_read_by_the_one_parser(args: list[str], name: str, capsys: Any) -> None:
    """Guards review C21: search's own list parsers skipped empty items (``1,,4`` read as 1,4)."""
    code, _, err = _cli([*SEARCH_BASE, *args, "--tpot", "50ms"], capsys)
    assert code == 2 and name in err and "Traceback" not in err, err


def test_compare_needs_a_request(capsys: Any) -> None:
    """Guards review: ``compare --requests 0`` priced "0 decodes" side by side, and ``price
    --requests 0`` without a prefill priced an empty batch at 0.0 ms; a prefill alone still
    prices."""
    code, _, err = _cli([*COMMANDS["compare"], "--requests", "0"], capsys)
    assert code == 2 and "--requests" in err, err
    code, _, err = _cli(["price", *MODEL, "--requests", "0"], capsys)
    assert code == 2 and "the batch is empty" in err, err
    code, out, err = _cli(["price", *MODEL, "--requests", "0", "--prefill", "512", "--json"], capsys)
    assert code == 0 and json.loads(out)["overlap_s"] > 0, err


@pytest.mark.parametrize("command", ["models", "chips"])
def test_a_missing_catalog_is_refused(command: str, capsys: Any, tmp_path: Any) -> None:
    """Guards review A17: ``models --catalog /nonexist`` printed "0 models in the catalog"
    with exit 0; a catalog folder without ``models/`` or ``hardware/`` is not a catalog."""
    for root in ("/nonexist", str(tmp_path)):
        code, out, err = _cli([command, "--catalog", root], capsys)
        assert code == 2 and out == "" and "not a blis-catalog checkout" in err, (out, err)


def test_search_says_when_it_had_no_slo_and_which_chips_have_no_price(capsys: Any) -> None:
    """Guards review A5 and A15 on the command line: without --tpot/--ttft every candidate
    "met" and best was the cheapest, unsaid; a chip without a price met the SLO at "—" and was
    left out of best, unsaid. Both are printed under the table, and in --json's provenance."""
    args = [a if a != "h100" else "gb300,h100" for a in SEARCH]
    code, out, err = _cli(args, capsys)
    assert code == 0, err
    assert "no SLO given: best is the cheapest" in out
    assert "gb300: no price in the table; left out of best (give --prices)" in out
    code, out, err = _cli([*args, "--tpot", "1s", "--json"], capsys)
    prov = json.loads(out)["provenance"]
    assert code == 0 and "slo_note" not in prov and list(prov["unpriced"]) == ["gb300"]


@pytest.mark.parametrize(
    "args",
    [
        ["anatomy", *MODEL, "--tp", "0", "--requests", "1"],
        ["memory", *MODEL, "--nodes", "0"],
        ["memory", *MODEL, "--block-size", "0"],
        ["memory", *MODEL, "--max-num-seqs", "0"],
        ["compare", "llama-3.1-8b-instruct@h100", "llama-3.1-8b-instruct@h100:tp=0"],
    ],
    ids=lambda a: " ".join(a[:1] + a[-2:]),
)
def test_a_build_argument_of_zero_is_refused_not_dropped(args: list[str], capsys: Any) -> None:
    """Guards review A2: ``if v not in (None, False)`` dropped every 0 (``0 == False``), so
    ``--tp 0`` and ``MODEL@HW:tp=0`` quietly priced the default tp=1 with exit 0."""
    code, out, err = _cli(args, capsys)
    assert code == 2 and out == "" and err.startswith("error: "), (out, err)


@pytest.mark.parametrize("text", ["1,,64", "0,64", "1.5", "x"])
def test_explain_batches_are_read_by_the_one_parser(text: str, capsys: Any) -> None:
    """Guards review C21 (a third list parser, in explain): ``--batch 1,,64`` read as 1,64 and
    ``--batch 0`` explained an empty batch; both are now refused naming ``--batch``."""
    code, out, err = _cli(["explain", "Gpt2XlChatDecodeBatchesH100", "--batch", text], capsys)
    assert code == 2 and out == "" and "--batch" in err, (out, err)
