"""The command line as a new user meets it: one-line errors (JSON with --json), exit codes,
--version and a fast --help, the catalog listings, deployments built from arguments or a
user's own config.json, and JSON numbers without float noise."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from latencykernel.cli.common import parse_range, parse_seconds, tidy

GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"
CATALOG = Path(__file__).resolve().parents[1] / "src" / "latencykernel" / "data" / "catalog"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencykernel", *args], capture_output=True, text=True, timeout=180)


BAD = [
    ("price", GUIDE, "--bogus"),  # unknown option
    ("price", GUIDE, "--requests", "99999999999999999999999"),  # issue 10: OverflowError traceback
    ("price", GUIDE, "--requests", "3000000000"),  # issue 10: MemoryError
    ("price", GUIDE, "--context", "1e26"),  # issue 10: priced 5.4e21 ms with exit 0
    ("price", GUIDE, "--context", str(1 << 41)),
    ("price", GUIDE, "--tp", "4"),  # a build argument on a scenario file is not silently ignored
    ("price",),  # no deployment named
    ("price", "--model", "llama-3.1-8b-instruct"),  # --hardware missing
    ("price", "--model", "no-such-model", "--hardware", "h100"),
    ("nosuchcommand",),
    ("explain", "Gpt2XlDecodeH100", "--tp", "2"),  # --tp silently ignored on a named scenario
    ("capacity", GUIDE, "--tpot", "fast"),
    ("anatomy", GUIDE, "--requests", "256..1"),
    ("anatomy", GUIDE, "-o", "chart.jpg"),
    ("compare", GUIDE, "x@y:foo=1"),
]


@pytest.mark.parametrize("args", BAD, ids=[" ".join(a) for a in BAD])
def test_bad_input_is_one_line_exit_2(args: tuple[str, ...]) -> None:
    """Guards usage errors printing three lines (usage, hint, error) and tracebacks on huge numbers."""
    r = run(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args", BAD[:4] + BAD[6:9], ids=[" ".join(a) for a in BAD[:4] + BAD[6:9]])
def test_json_errors_are_one_json_object_on_stderr(args: tuple[str, ...]) -> None:
    """Guards --json errors coming out as plain text a pipe cannot parse."""
    r = run(*args, "--json")
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    err = json.loads(lines[0])["error"]
    assert err["type"] in {"UsageError", "DocumentError", "RefusedError"} and err["message"]


def test_refused_deployment_json_names_the_setting() -> None:
    """Guards the JSON error object losing what the error knows (setting and value)."""
    r = run("price", "--model", "llama-3.1-8b-instruct", "--hardware", "h100", "--cache-dtype", "nope", "--json")
    assert r.returncode == 2
    err = json.loads(r.stderr)["error"]
    assert err["type"] == "RefusedError" and err["setting"] == "engine.cache_dtype" and err["value"] == "nope"


def test_version_and_help_are_fast_paths() -> None:
    """Guards --help importing every sub-command (pydantic, numpy, pint, matplotlib: 610 ms)."""
    code = (
        "import sys; from latencykernel.cli import main; main(['--help']); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic','numpy','pint','matplotlib','typer','rich'}))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]"
    for cmd in ("price", "models", "chips", "anatomy", "capacity", "compare", "explain"):
        assert f"\n  {cmd} " in r.stdout
    v = run("--version")
    assert v.returncode == 0 and v.stdout.strip().startswith("latencykernel 0.")


def test_top_level_help_matches_each_command() -> None:
    """Guards the static command table drifting from the commands' own help."""
    from typer.main import get_command

    from latencykernel.cli import _available, _register, app

    _register()
    group = get_command(app)
    table = _available()
    assert set(table) == set(group.commands)  # type: ignore[attr-defined]
    for name, (_, short) in table.items():
        cmd = group.commands[name]  # type: ignore[attr-defined]
        assert (cmd.help or "").strip().splitlines()[0] == short, name
        assert "Example" in (cmd.help or ""), f"{name} --help has no example"
        for sub in getattr(cmd, "commands", {}).values():
            assert "Example" in (sub.help or ""), f"{name} {sub.name} --help has no example"


def test_models_and_chips_list_the_catalog() -> None:
    """Guards models and chips being discoverable only from error messages."""
    m = json.loads(run("models", "--json").stdout)
    by = {r["name"]: r for r in m}
    assert by["deepseek-v3"]["hf_id"] == "deepseek-ai/DeepSeek-V3"
    assert 6.6e11 < by["deepseek-v3"]["parameters"] < 6.8e11 and "fp8" in by["deepseek-v3"]["weight_dtypes"]
    assert set(by) == {p.name for p in (CATALOG / "models").iterdir() if (p / "graph.yaml").is_file()}
    c = {r["name"]: r for r in json.loads(run("chips", "--json").stdout)}
    assert c["h200"]["memory_gib"] == 141 and c["h200"]["hbm_bandwidth_tb_per_s"] == 4.8
    assert c["h100"]["fp8_peak_tflop_per_s"] == 1979 and c["a100-sxm"]["fp8_peak_tflop_per_s"] is None
    assert c["a100-80"]["same_as"] == ["a100-sxm"] and c["h100"]["same_as"] == []
    t = run("chips")
    assert t.returncode == 0 and "gb200-nvl72" in t.stdout  # a pipe never cuts a name


def test_identical_aliases_resolve_and_different_chips_still_ask() -> None:
    """Guards --hardware a100 asking which of two files with the same figures."""
    from latencykernel.errors import DocumentError
    from latencykernel.repos import Repos

    r = Repos.default()
    assert r.find_chip("a100") in {"a100-80", "a100-sxm"}
    with pytest.raises(DocumentError, match="several chips"):
        r.find_chip("b")


def test_build_arguments_price_like_the_scenario_file() -> None:
    """Guards build arguments being named differently from lk.build, or building another deployment."""
    a = json.loads(run("price", "--model", "llama-3.1-8b-instruct", "--hardware", "h100", "--tp", "1", "--json").stdout)
    import latencykernel as lk
    from latencykernel.batch import Batch

    k = lk.build("llama-3.1-8b-instruct", "h100", tp=1)
    e = k.step_time(Batch.from_columns([1] * 32, [4095] * 32, 8))
    assert a["overlap_s"] == pytest.approx(e.overlap, abs=1e-9)
    b = run("show", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--hardware", "h100", "--tensor-parallel-size", "2")
    assert b.returncode == 0 and "tp 2" in b.stdout


def test_a_config_json_outside_the_catalog_builds(tmp_path: Path) -> None:
    """Guards a user's own config.json needing the whole catalog copied by hand."""
    import latencykernel as lk
    from latencykernel.batch import Batch

    own = tmp_path / "my-qwen"
    own.mkdir()
    shutil.copy(CATALOG / "models" / "qwen3-32b" / "config.json", own / "config.json")
    k = lk.build(str(own / "config.json"), "h100", tp=2)
    ref = lk.build("qwen3-32b", "h100", tp=2)
    assert k.model == "my-qwen"
    assert k.kv_bytes_per_token() == ref.kv_bytes_per_token()
    b = Batch.decode(16, 2048, 8)
    assert k.step_time(b).no_overlap == pytest.approx(ref.step_time(b).no_overlap, rel=1e-9)
    g = lk.build(str(CATALOG / "models" / "qwen3-32b" / "graph.yaml"), "h100", tp=2)
    assert g.fixed_bytes().weights == ref.fixed_bytes().weights
    r = run("memory", "--model", str(own / "config.json"), "--hardware", "h100", "--tp", "2", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["scenario"] == "my-qwen-on-h100"


def test_json_numbers_have_no_float_noise() -> None:
    """Guards 0.30000000000000004-style tails and numpy scalars in --json output."""
    import numpy as np

    assert tidy({"a_s": 0.1 + 0.2, "x": 1 / 3, "n": np.int64(3), "per_s": {"sm": 1e-3 + 2e-12}}) == {
        "a_s": 0.3,
        "x": 0.333333,
        "n": 3,
        "per_s": {"sm": 0.001},
    }
    assert tidy({"bad": float("nan")}) == {"bad": None}
    d = json.loads(run("price", GUIDE, "--json").stdout)
    for v in [d["overlap_s"], d["no_overlap_s"], *d["per_resource_s"].values()]:
        assert round(v, 9) == v


def test_ranges_and_times_parse_or_refuse() -> None:
    """Guards the range and time options accepting what they cannot mean."""
    from latencykernel.cli.common import UsageError

    assert parse_range("1..16", "--requests") == [1, 2, 4, 8, 16]
    assert parse_range("1..12", "--requests") == [1, 2, 4, 8, 12]
    assert parse_range("64,1,8", "--requests") == [1, 8, 64]
    assert parse_seconds("50ms", "--tpot") == pytest.approx(0.05)
    assert parse_seconds("0.2s", "--tpot") == pytest.approx(0.2)
    assert parse_seconds("200us", "--tpot") == pytest.approx(2e-4)
    for bad in ("16..1", "a..b", "", "0..4"):
        with pytest.raises(UsageError):
            parse_range(bad, "--requests")
    for bad in ("-5ms", "nan", "fast", "0"):
        with pytest.raises(UsageError):
            parse_seconds(bad, "--tpot")


def test_explain_json_is_numbers_and_never_negative() -> None:
    """Guards the calibrated side holding '1.07 ms' strings, negative max batches, and the
    floor pricing an fp8 deployment on the bf16 peak."""
    r = run("explain", GUIDE, "--json", "--batch", "1,64")
    assert r.returncode == 0, r.stderr
    cal = json.loads(r.stdout)["calibrated"]
    for row in cal["step"]:
        assert isinstance(row["floor_step_s"], float) and row["floor_step_s"] <= row["calibrated_step_s"]
    for row in cal["tpot"]:
        assert row["floor_max_batch"] >= 0 and row["calibrated_max_batch"] >= 0
        assert row["calibrated_max_batch"] <= row["floor_max_batch"]
    assert cal["floor_peak_precision"] == "fp8_dense"
    for row in json.loads(r.stdout)["scenario"]["rows"]:  # each value also as a number in its unit
        if row["number"] is not None and row["unit"]:
            assert row["value"] == f"{row['number']:g} {row['unit']}" or row["value"].startswith(f"{row['number']:.6g}")
    t = run("explain", "examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml")
    assert "does not fit" in t.stdout and "bf16_dense" in t.stdout


def test_price_and_memory_check_the_batch_unless_unchecked() -> None:
    """Guards the commands pricing a batch the engine would not run (issue 10: Kernel.check),
    and --unchecked not reaching the what-if price."""
    over = run("price", GUIDE, "--requests", "300")  # the guide deployment's max_num_seqs is 256
    assert over.returncode == 2 and "max_num_seqs" in over.stderr and len(over.stderr.splitlines()) == 1
    what_if = run("price", GUIDE, "--requests", "300", "--unchecked", "--json")
    assert what_if.returncode == 0 and json.loads(what_if.stdout)["checked"] is False
    long = run("memory", GUIDE, "--context", "40000", "--json")  # beyond max_model_len 32,768
    assert long.returncode == 2 and json.loads(long.stderr)["error"]["type"] == "RefusedError"
    assert run("memory", GUIDE, "--context", "40000", "--unchecked").returncode == 0
