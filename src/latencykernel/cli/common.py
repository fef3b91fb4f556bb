"""Options and helpers shared by the sub-commands.

A command that takes a deployment is decorated with ``@takes_deployment``: it gains the
optional ``DEPLOYMENT`` argument (a scenario file) and the build arguments (``--model``,
``--hardware``, ``--tp`` ... named as ``latencykernel.build`` and vLLM name them), and
receives one ``Deployment`` as its ``dep`` parameter.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import typing
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import typer

from latencykernel.errors import LatencyKernelError

ScenariosDir = typer.Option(None, "--scenarios-dir", help="Directory of scenario files (default: embedded).")
CatalogDir = typer.Option(None, "--catalog", help="A blis-catalog checkout (default: embedded).")
RegistryDir = typer.Option(None, "--registry", help="A blis-registry checkout (default: embedded).")
Json = typer.Option(False, "--json", help="Print JSON instead of a table (errors too, on stderr).")
Unchecked = typer.Option(
    False, "--unchecked", help="Price a batch the engine would not run (skip Kernel.check): what-if pricing."
)

# Inputs beyond these are refused before any work: no deployment holds them.
MAX_REQUESTS = 1 << 20  # requests in one step; vLLM's max_num_seqs is in the hundreds
MAX_TOKENS = 1 << 40  # tokens of context or prefill (issue 10: "say above 2**40 tokens")

GIB = float(1 << 30)
MIB = float(1 << 20)


def Requests(default: int, help: str = "Decoding requests in the batch.", least: int = 0) -> Any:  # noqa: N802 - an option factory
    """``--requests``: at least ``least`` (0 where the batch may hold prefills only)."""
    return typer.Option(default, "--requests", min=least, max=MAX_REQUESTS, help=help)


def Context(default: int, help: str = "Tokens of context each decode reads.") -> Any:  # noqa: N802
    return typer.Option(default, "--context", min=1, max=MAX_TOKENS, help=help)


def repos_from(scenarios: Path | None, catalog: Path | None, registry: Path | None) -> Any:
    from latencykernel.repos import Repos

    d = Repos.default()
    if scenarios is None and catalog is None and registry is None:
        return d
    return Repos(scenarios or d.scenarios, catalog or d.catalog, registry or d.registry)


def open_kernel(scenario: str, pool: int, scenarios: Path | None, catalog: Path | None, registry: Path | None) -> Any:
    """The kernel for one pool of a scenario, against the embedded data or the given roots."""
    from latencykernel.kernel import open_pool

    return open_pool(scenario, repos_from(scenarios, catalog, registry), pool)


# --------------------------------------------------------------------------- deployments

# build argument -> (option names, type, help). The first name is lk.build's keyword.
BUILD_OPTIONS: dict[str, tuple[tuple[str, ...], Any, str]] = {
    "model": (
        ("--model",),
        str | None,
        "Catalog model name, Hugging Face repo id, or a path to a config.json or graph.yaml.",
    ),
    "hardware": (("--hardware",), str | None, "Catalog chip name (or a unique prefix: gb200)."),
    "tp": (("--tp", "--tensor-parallel-size"), int | None, "Tensor parallelism [default: 1]."),
    "dp": (("--dp", "--data-parallel-size"), int | None, "Data parallelism [default: 1]."),
    "enable_expert_parallel": (("--ep", "--enable-expert-parallel"), bool, "Shard experts over tp x dp ranks."),
    "nodes": (("--nodes",), int | None, "Nodes the pool spans [default: 1]."),
    "quantization": (("--quantization",), str | None, "Weight quantization method (vLLM --quantization)."),
    "cache_dtype": (("--cache-dtype", "--kv-cache-dtype"), str | None, "KV cache dtype: auto, fp8, ..."),
    "max_model_len": (("--max-model-len",), int | None, "Longest request context (vLLM --max-model-len)."),
    "max_num_seqs": (("--max-num-seqs",), int | None, "Requests one step may hold."),
    "max_num_batched_tokens": (("--max-num-batched-tokens",), int | None, "Tokens one step may schedule."),
    "block_size": (("--block-size",), int | None, "Tokens per KV block."),
}


@dataclass(frozen=True)
class Deployment:
    """What the user named: a scenario file, or build arguments."""

    scenario: str | None = None
    pool: int = 0
    scenarios_dir: Path | None = None
    catalog: Path | None = None
    registry: Path | None = None
    model: str | None = None
    hardware: str | None = None
    tp: int | None = None
    dp: int | None = None
    enable_expert_parallel: bool = False
    nodes: int | None = None
    quantization: str | None = None
    cache_dtype: str | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int | None = None

    def build_settings(self) -> dict[str, Any]:
        """The build arguments the user gave (``False``/``None`` left out)."""
        out = {}
        for f in fields(self):
            if f.name in BUILD_OPTIONS and f.name not in ("model", "hardware"):
                v = getattr(self, f.name)
                if v is not None and v is not False:  # 0 is a value (refused downstream), not unset
                    out[f.name] = v
        return out

    def kernel(self) -> Any:
        """The kernel, opened from the scenario file or built from the arguments."""
        repos = repos_from(self.scenarios_dir, self.catalog, self.registry)
        settings = self.build_settings()
        if self.scenario is not None and "@" in self.scenario and self.model is None and not settings:
            if not Path(self.scenario).exists():  # MODEL@HARDWARE[:tp=8,...]
                roots = {"scenarios_dir": self.scenarios_dir, "catalog": self.catalog, "registry": self.registry}
                return parse_deployment(self.scenario, "DEPLOYMENT", **roots).kernel()
        if self.scenario is not None:
            if self.model is not None or self.hardware is not None or settings:
                given = ["--" + k.replace("_", "-") for k in ("model", "hardware") if getattr(self, k) is not None]
                given += ["--" + k.replace("_", "-") for k in settings]
                raise usage(
                    f"{', '.join(given)} build a deployment from names, but {self.scenario!r} is a scenario file "
                    "that states its own; give either the file or --model and --hardware, not both"
                )
            from latencykernel.kernel import open_pool

            return open_pool(self.scenario, repos, self.pool)
        if self.model is None or self.hardware is None:
            missing = " and ".join(f"--{k}" for k in ("model", "hardware") if getattr(self, k) is None)
            raise usage(f"name a deployment: a scenario file, or {missing} (see `latencykernel models` and `chips`)")
        if self.pool:
            raise usage("--pool applies to a scenario file; a built deployment has one colocated pool")
        from latencykernel.kernel import build

        return build(self.model, self.hardware, repos=repos, **settings)

    def label(self) -> str:
        if self.scenario is not None:
            return self.scenario
        extra = ", ".join(f"{k}={v}" for k, v in self.build_settings().items())
        return f"{self.model} on {self.hardware}" + (f" ({extra})" if extra else "")


def parse_deployment(text: str, option: str, **roots: Any) -> Deployment:
    """A scenario file, or ``MODEL@HARDWARE[:key=value,...]`` with ``lk.build``'s keywords
    (``deepseek-v3@h200:tp=8,enable_expert_parallel=true``)."""
    if "@" not in text or Path(text).exists():
        return Deployment(scenario=text, **roots)
    head, _, tail = text.partition(":")
    model, _, hardware = head.rpartition("@")
    if not model or not hardware:
        raise usage(f"{option} {text!r}: write a scenario file or MODEL@HARDWARE[:tp=8,dp=2,...]")
    settings: dict[str, Any] = {}
    names = {f.name: f for f in fields(Deployment)}
    for item in filter(None, tail.split(",")):
        key, eq, value = item.partition("=")
        key = key.strip().replace("-", "_")
        key = {"ep": "enable_expert_parallel", "kv_cache_dtype": "cache_dtype"}.get(key, key)
        if key not in BUILD_OPTIONS or key in ("model", "hardware"):
            known = ", ".join(k for k in BUILD_OPTIONS if k not in ("model", "hardware"))
            raise usage(f"{option} {text!r}: {key!r} is not a build setting; use one of {known}")
        typ = BUILD_OPTIONS[key][1]
        if typ is bool:
            settings[key] = value.strip().lower() in ("", "1", "true", "yes", "on") if eq else True
        elif typ == int | None:
            try:
                settings[key] = int(value)
            except ValueError:
                raise usage(f"{option} {text!r}: {key} must be a whole number, got {value!r}") from None
        else:
            settings[key] = value
    assert all(k in names for k in settings)
    return Deployment(model=model, hardware=hardware, **settings, **roots)


class UsageError(LatencyKernelError):
    """A command line that names no deployment, or names one twice."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


def usage(message: str) -> UsageError:
    return UsageError(message)


def _deployment_params() -> list[inspect.Parameter]:
    kw = inspect.Parameter.KEYWORD_ONLY
    ps = [
        inspect.Parameter(
            "deployment",
            kw,
            default=typer.Argument(
                None,
                metavar="DEPLOYMENT",
                help="A scenario file (path, or relative to the scenarios directory); or leave it out and "
                "give --model and --hardware.",
                show_default=False,
            ),
            annotation=str | None,
        )
    ]
    for name, (flags, typ, help_) in BUILD_OPTIONS.items():
        default: Any = False if typ is bool else None
        opt = typer.Option(default, *flags, help=help_, show_default=False, rich_help_panel="Build a deployment")
        ps.append(inspect.Parameter(name, kw, default=opt, annotation=typ))
    ps += [
        inspect.Parameter(
            "pool",
            kw,
            default=typer.Option(0, "--pool", min=0, help="Pool of a disaggregated scenario."),
            annotation=int,
        ),
        inspect.Parameter("scenarios_dir", kw, default=ScenariosDir, annotation=Path | None),
        inspect.Parameter("catalog", kw, default=CatalogDir, annotation=Path | None),
        inspect.Parameter("registry", kw, default=RegistryDir, annotation=Path | None),
    ]
    return ps


_DEPLOYMENT_NAMES = ("deployment", *BUILD_OPTIONS, "pool", "scenarios_dir", "catalog", "registry")


def takes_deployment(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Give ``fn`` (which takes ``dep: Deployment``) the deployment argument and build options."""
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn)
    own = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in sig.parameters.values() if p.name != "dep"]
    extra = _deployment_params()

    @functools.wraps(fn)
    def wrapper(**kw: Any) -> Any:
        d = {n: kw.pop(n) for n in _DEPLOYMENT_NAMES}
        d["scenario"] = d.pop("deployment")
        d["scenarios_dir"], d["catalog"], d["registry"] = d["scenarios_dir"], d["catalog"], d["registry"]
        return fn(dep=Deployment(**d), **kw)

    params = own + extra
    wrapper.__signature__ = sig.replace(parameters=params, return_annotation=None)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    del wrapper.__wrapped__  # typer must read the new signature, not fn's
    return wrapper


# --------------------------------------------------------------------------- checks


def check_batch(kernel: Any, batch: Any, unchecked: bool) -> None:
    """Refuse a batch the engine would not run (``Kernel.check``) unless ``--unchecked``."""
    if not unchecked:
        kernel.check(batch)


# --------------------------------------------------------------------------- output


def console() -> Any:
    """A rich console: the terminal's width on a terminal; in a pipe, wide enough that no
    table cell is cut (rich would otherwise assume 80 columns and elide names)."""
    import sys

    from rich.console import Console

    return Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def progress(items: Any, label: str, *, quiet: bool = False) -> Any:
    """``items`` with a progress bar on a terminal's stderr (for work that takes seconds);
    plain in a pipe, under ``--json`` (``quiet``), and in tests."""
    import sys

    if quiet or not sys.stderr.isatty():
        return iter(items)
    from rich.progress import track

    return track(list(items), description=label, console=_err_console(), transient=True)


def _err_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


Output = typer.Option(None, "-o", "--output", help="Save the chart here: a .png or .svg file.")


def saved(fig: Any, path: Path, as_json: bool) -> None:
    """Save a chart and say where (on stderr under ``--json``, so stdout stays JSON)."""
    import sys

    from latencykernel.charts import save

    p = save(fig, path)
    (sys.stderr if as_json else sys.stdout).write(f"wrote {p}\n")


def sig(x: float, digits: int = 6) -> float:
    """``x`` to ``digits`` significant figures (the precision the model has, and no float noise)."""
    if x == 0 or not math.isfinite(x):
        return x
    return float(f"{x:.{digits}g}")


def seconds(x: float) -> float:
    """Seconds to the nanosecond: sums of rounded rows stay exact to the nanosecond."""
    return round(float(x), 9)


def tidy(obj: Any, key: str = "") -> Any:
    """A JSON-ready copy: seconds (keys ending ``_s`` but not ``_per_s``, and the values of a map so named) to
    the nanosecond, other floats to six significant figures, numpy scalars as Python numbers,
    non-finite floats as null."""
    if isinstance(obj, dict):
        # inside a map named ``..._s`` (per_resource_s) every value is seconds
        return {k: tidy(v, key if key.endswith("_s") else str(k)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [tidy(v, key) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, int):
        return obj
    if hasattr(obj, "item") and not isinstance(obj, (list, tuple, dict)):  # numpy scalar
        return tidy(obj.item(), key)
    if isinstance(obj, float):
        if not math.isfinite(obj):
            return None
        return seconds(obj) if key.endswith("_s") and not key.endswith("_per_s") else sig(obj)
    return obj


def print_json(obj: Any) -> None:
    typer.echo(json.dumps(tidy(obj), indent=2, sort_keys=False))


def parse_ints(text: str, option: str, *, lo: int = 1, hi: int = MAX_TOKENS) -> list[int]:
    """``"1,8,64"`` as whole numbers in ``lo..hi``, in the order written; an empty item
    (``"1,,4"``), a fraction (``"1.5"``) or no value is refused naming ``option``."""
    out = []
    for item in _items(text, option, "whole numbers"):
        try:
            v = int(item)
        except ValueError:
            kind = "a whole number" if _is_real(item) else "a number"
            raise usage(f"{option} {text!r}: {item!r} is not {kind}") from None
        if not lo <= v <= hi:
            raise usage(f"{option} {text!r}: {v} is outside {lo}..{hi}")
        out.append(v)
    return out


def parse_reals(text: str, option: str) -> list[float]:
    """``"0.5,2,8"`` as positive finite numbers, in the order written (same refusals as
    ``parse_ints``)."""
    out = []
    for item in _items(text, option, "numbers"):
        if not _is_real(item):
            raise usage(f"{option} {text!r}: {item!r} is not a number")
        v = float(item)
        if not (math.isfinite(v) and v > 0):
            raise usage(f"{option} {text!r}: {item} must be positive and finite")
        out.append(v)
    return out


def parse_names(text: str, option: str) -> list[str]:
    """``"h200,b200"`` as names in the order written (same refusals as ``parse_ints``)."""
    return _items(text, option, "names")


def _items(text: str, option: str, what: str) -> list[str]:
    items = [x.strip() for x in text.split(",")]
    if not any(items):
        raise usage(f"{option} {text!r} names no value; write {what} separated by commas, e.g. 1,4,16")
    if not all(items):
        raise usage(f"{option} {text!r}: an empty item; write {what} separated by commas, e.g. 1,4,16")
    return items


def _is_real(item: str) -> bool:
    try:
        float(item)
    except ValueError:
        return False
    return True


def parse_range(text: str, option: str, *, lo: int = 1, hi: int = MAX_TOKENS) -> list[int]:
    """``"1..256"`` (powers of two between), ``"1,8,64"`` or ``"4096"`` as a sorted list of ints."""
    t = text.replace(" ", "")
    if not t:
        raise usage(f"{option} {text!r} names no value")
    if ".." not in t:
        return sorted(set(parse_ints(t, option, lo=lo, hi=hi)))
    a_s, b_s = t.split("..", 1)
    try:
        a, b = int(a_s), int(b_s)
    except ValueError:
        raise usage(f"{option} {text!r} must be N, N,M,... or N..M (whole numbers)") from None
    if a > b:
        raise usage(f"{option} {text!r}: the range must run upwards")
    out = []
    v = a
    while v < b:
        out.append(v)
        v = v * 2 if v > 0 else 1
    out.append(b)
    for v in out:
        if not lo <= v <= hi:
            raise usage(f"{option} {text!r}: {v} is outside {lo}..{hi}")
    return sorted(set(out))


def parse_seconds(text: str, option: str) -> float:
    """``"50ms"``, ``"0.05s"``, ``"50 ms"``, ``"200us"`` as seconds, at most an hour; a bare
    number is refused ("write 50ms or 0.05s"): ``latencykernel.durations.parse_seconds``,
    the parser ``search`` reads its targets with too."""
    from latencykernel.durations import parse_seconds as seconds_of

    try:
        return seconds_of(text, option, most_s=3600.0)
    except LatencyKernelError as e:
        raise usage(str(e)) from None
