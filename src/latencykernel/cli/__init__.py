"""The ``latencykernel`` command.

Each sub-command lives in its own module and registers itself on ``app`` (a ``typer.Typer``
made on first use). ``main`` loads only the module of the command asked for, so
``latencykernel --help`` and ``--version`` import neither typer nor pydantic, numpy, pint or
matplotlib: the top-level help is printed from ``COMMANDS`` (a test holds it equal to the
commands' own help).

Every failure is one line on stderr and exit status 2: a refused deployment or bad document
(``LatencyKernelError``), and a usage error (an unknown option, a value that does not parse).
With ``--json`` the line is a JSON object ``{"error": {"type", "message", ...}}``.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["COMMANDS", "app", "main"]

# command -> (module under latencykernel.cli, one-line help). The order is the help's order.
COMMANDS: dict[str, tuple[str, str]] = {
    "scenarios": ("open_cmds", "List the scenario files (embedded ones by default)."),
    "show": ("open_cmds", "The deployment as resolved: model, chip, widths, dtypes, layer kinds, parameters."),
    "models": ("catalog_cmds", "List the models in the catalog: name, Hugging Face id, parameters, dtypes."),
    "chips": ("catalog_cmds", "List the chips in the catalog: memory, bandwidth, peaks."),
    "price": ("price_cmds", "Price one step: overlap and no-overlap, the bottleneck, and a row per resource."),
    "memory": ("memory_cmds", "Fixed memory per rank, the KV budget, and how many sequences of a context fit."),
    "evidence": ("memory_cmds", "What the price rests on: values by method, and the kernel's own assumptions."),
    "anatomy": ("chart_cmds", "Step time per resource against batch size, with the bottleneck marked."),
    "capacity": ("chart_cmds", "Largest batch that fits KV memory and meets a TPOT target, against context."),
    "compare": ("compare_cmds", "Two deployments side by side: step per resource, memory, capacity."),
    "serve": ("serve_cmds", "Simulate serving: TTFT and TPOT at a concurrency or request rate."),
    "search": ("search_cmds", "Find the deployment that meets a latency target at the lowest cost."),
    "validate": ("validate_cmds", "Score the price against measured serving runs: per point, per sweep, by group."),
    "explain": ("explain_cmds", "Print a scenario's equations, assumptions and exclusions with its values."),
    "graph": ("graph_cmds", "Model graphs: derive one from a Hugging Face config.json, count its parameters."),
}
HELP = "Price one forward step of an LLM inference engine, and the memory a deployment holds."
EPILOG = (
    "Example: latencykernel price aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml --requests 32 --context 4096\n"
    "         latencykernel price --model deepseek-v3 --hardware h200 --tp 8 --requests 32"
)

_APP: Any = None


def _make_app() -> Any:
    import typer

    a = typer.Typer(
        name="latencykernel",
        help=HELP,
        epilog=EPILOG,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )

    @a.callback()
    def _root() -> None:  # a callback keeps typer in group mode when one command is loaded
        """Price one forward step of an LLM inference engine, and the memory a deployment holds."""

    return a


def __getattr__(name: str) -> Any:
    global _APP
    if name == "app":
        if _APP is None:
            _APP = _make_app()
        return _APP
    raise AttributeError(f"module 'latencykernel.cli' has no attribute {name!r}")


def _available() -> dict[str, tuple[str, str]]:
    """The commands whose module is present (serve and search come from other work)."""
    import importlib.util

    return {c: (m, h) for c, (m, h) in COMMANDS.items() if importlib.util.find_spec(f"latencykernel.cli.{m}")}


def _register(modules: list[str] | None = None) -> None:
    import importlib

    names = modules if modules is not None else sorted({m for m, _ in _available().values()})
    for name in names:
        importlib.import_module(f"latencykernel.cli.{name}")


def _version() -> str:
    from latencykernel import __version__

    return f"latencykernel {__version__}"


def _top_help() -> str:
    cmds = _available()
    width = max(len(c) for c in cmds) + 2
    lines = [
        "Usage: latencykernel [OPTIONS] COMMAND [ARGS]...",
        "",
        f"  {HELP}",
        "",
        "Options:",
        "  --version  Print the version and exit.",
        "  --help     Show this message and exit.",
        "",
        "Commands:",
        *(f"  {c:<{width}}{h}" for c, (_, h) in cmds.items()),
        "",
        *(f"  {line}" for line in EPILOG.splitlines()),
        "",
        "  `latencykernel COMMAND --help` shows a command's options and an example.",
    ]
    return "\n".join(lines)


def _command_of(argv: list[str]) -> str | None:
    for a in argv:
        if not a.startswith("-"):
            return a
    return None


def _fail(message: str, kind: str, as_json: bool, extra: dict[str, Any] | None = None) -> None:
    """One line on stderr (a JSON object with ``--json``), then exit 2."""
    one_line = " ".join(str(message).split())
    if as_json:
        import json

        body: dict[str, Any] = {"type": kind, "message": one_line}
        for k, v in (extra or {}).items():
            body[k] = v if isinstance(v, (str, int, float, bool, type(None))) else repr(v)
        sys.stderr.write(json.dumps({"error": body}) + "\n")
    else:
        sys.stderr.write(f"error: {one_line}\n")
    sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    """Run the command line on ``argv`` (default ``sys.argv[1:]``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    command = _command_of(args)
    if command is None:
        if "--version" in args:
            print(_version())
            return
        print(_top_help())
        return
    table = _available()
    if command in table:
        _register([table[command][0]])
    else:
        _register()
    from latencykernel.errors import DocumentError, LatencyKernelError, RefusedError

    try:
        __getattr__("app")(args=args, prog_name="latencykernel", standalone_mode=False)
    except LatencyKernelError as e:
        extra: dict[str, Any] = {}
        if isinstance(e, RefusedError):
            extra = {"setting": e.setting, "value": e.value}
        elif isinstance(e, DocumentError):
            extra = {k: v for k, v in (("file", e.file), ("key", e.key), ("value", e.value)) if v not in ("", None)}
        _fail(str(e), type(e).__name__, as_json, extra)
    except SystemExit:
        raise
    except Exception as e:
        # typer vendors its own click, so its exceptions are recognised by name and shape
        kind = type(e).__name__
        if kind == "Exit":
            sys.exit(getattr(e, "exit_code", 0))
        if kind == "Abort":
            sys.exit(1)
        if hasattr(e, "format_message") and hasattr(e, "exit_code"):  # usage errors
            ctx = getattr(e, "ctx", None)
            cmd = getattr(ctx, "command_path", None) or "latencykernel"
            _fail(f"{e.format_message()} (see `{cmd} --help`)", "UsageError", as_json)
        raise
