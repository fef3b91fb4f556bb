"""The ``latencykernel`` command. Each sub-command lives in its own module and registers
itself on ``app``; this module only assembles them and maps our errors to exit code 2."""

from __future__ import annotations

import sys

import typer

app = typer.Typer(
    name="latencykernel",
    help="Price one forward step of an LLM inference engine, and the memory a deployment holds.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Sub-command modules; each does `from latencykernel.cli import app` and decorates.
_COMMANDS = ("open_cmds", "graph_cmds", "price_cmds", "memory_cmds", "explain_cmds", "serve_cmds", "search_cmds")


def _register() -> None:
    import importlib

    for name in _COMMANDS:
        try:
            importlib.import_module(f"latencykernel.cli.{name}")
        except ModuleNotFoundError as e:  # a command module not written yet
            if e.name != f"latencykernel.cli.{name}":
                raise


def main() -> None:
    from latencykernel.errors import LatencyKernelError

    _register()
    try:
        app(standalone_mode=False)
    except LatencyKernelError as e:
        typer.echo(f"error: {e}", err=True)
        sys.exit(2)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        sys.exit(1)
    except Exception as e:
        # usage errors (typer may vendor its own click, so recognise them by shape)
        if hasattr(e, "show") and hasattr(e, "exit_code"):
            e.show()
            sys.exit(2)
        raise
