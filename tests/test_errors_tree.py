"""One error tree: every error class this package raises lives in latencykernel.errors, and the
package's namespace lists its exports only."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys

import latencykernel
from latencykernel import errors


def _modules() -> list[str]:
    names = ["latencykernel"]
    for info in pkgutil.walk_packages(latencykernel.__path__, "latencykernel."):
        names.append(info.name)
    return names


# Internal signals that never leave the package (each caught where it is raised), by where
# they are defined: a validator's message carrier that pydantic wraps and the documents
# layer translates into DocumentError, and the fused path's "fall back to the reference" cue.
INTERNAL_SIGNALS = {"Invalid", "_Uncovered"}


def test_every_error_class_is_defined_in_errors_py() -> None:
    """Guards a second error tree: an exception class defined anywhere but latencykernel.errors
    (as the scenario library's own errors.py once was), apart from the internal signals."""
    elsewhere = []
    for name in _modules():
        if name.startswith("latencykernel.cli") or name == "latencykernel.__main__":
            continue  # the CLI imports typer/rich; it defines no errors of its own either way
        mod = importlib.import_module(name)
        for attr, obj in vars(mod).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == name:
                if name != "latencykernel.errors" and attr not in INTERNAL_SIGNALS:
                    elsewhere.append(f"{name}.{attr}")
    assert not elsewhere, f"error classes outside latencykernel/errors.py: {elsewhere}"


def test_scenario_errors_are_in_the_tree_and_still_importable_from_scenarios() -> None:
    """Guards the compatibility names: the scenario library's errors are the ones in errors.py,
    subclasses of LatencyKernelError (hence ValueError), importable from both places."""
    from latencykernel import scenarios
    from latencykernel.scenarios import errors as scenario_errors

    for name in ("ScenarioInputError", "UnknownPrecisionError", "UnknownScenarioError", "NotApplicableError"):
        cls = getattr(errors, name)
        assert issubclass(cls, errors.LatencyKernelError) and issubclass(cls, ValueError)
        assert getattr(scenarios, name) is cls
        assert getattr(scenario_errors, name) is cls
        assert getattr(latencykernel, name) is cls
        assert name in errors.__all__
    assert issubclass(errors.UnknownPrecisionError, errors.ScenarioInputError)


def test_dir_lists_the_exports_only() -> None:
    """Guards `dir(latencykernel)` showing helpers (Any, TYPE_CHECKING, importlib) or submodules."""
    code = "import latencykernel, latencykernel.scenarios as s; s.Scenarios; print(' '.join(dir(latencykernel)))"
    listed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert listed == sorted([*latencykernel.__all__, "__version__"])
    for helper in ("Any", "TYPE_CHECKING", "importlib", "annotations", "kernel", "scenarios", "errors"):
        assert helper not in listed
    for name in latencykernel.__all__:
        assert getattr(latencykernel, name) is not None
