"""The base of every scenario: inputs validated at construction and at ``variant()``,
outputs declared with ``@output``, and a structured explanation of both."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, TypeVar

from latencykernel.errors import LatencyKernelError
from latencykernel.scenarios.metadata import Output, outputs_of

__all__ = ["Scenario", "Evaluation", "InputDoc"]

S = TypeVar("S", bound="Scenario")


class InputDoc(NamedTuple):
    """One input of a scenario class: its name, type as written, and meaning with unit."""

    name: str
    type: str
    meaning: str


class Evaluation(NamedTuple):
    """One output evaluated for ``explain`` and the docs: its value, or why it has none."""

    output: Output[Any]
    args: dict[str, Any]
    value: Any
    error: str | None


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """Base of the scenario classes.

    Subclasses are frozen keyword-only dataclasses whose fields are the stated inputs; they
    validate and normalise them in ``_validate`` (called at construction and by
    ``variant``), and declare outputs with ``@output``. Class-level metadata:

    family:      the module's family name (docs page grouping)
    summary:     one sentence: what the scenario models
    equation:    the scenario's central relation, in words and symbols
    assumptions: what every output takes as true
    excludes:    what every output leaves out
    inputs_doc:  ``InputDoc`` per input
    examples:    statements whose printed results the docs page shows (and a test runs)
    optional_inputs: inputs that may be None, meaning "not given": outputs that need them
                 are then refused with NotApplicableError
    """

    key: str | None = None
    name: str = ""
    description: str = ""
    sources: tuple[str, ...] = ()

    family: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    equation: ClassVar[str] = ""
    assumptions: ClassVar[tuple[str, ...]] = ()
    excludes: ClassVar[tuple[str, ...]] = ()
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = ()
    examples: ClassVar[tuple[str, ...]] = ()
    optional_inputs: ClassVar[frozenset[str]] = frozenset()
    mlsysim_type: ClassVar[str | None] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", tuple(self.sources))
        self._validate()

    # -- to be provided by subclasses -------------------------------------------------------
    def _validate(self) -> None:  # pragma: no cover - every subclass overrides
        """Check and normalise the inputs; cache floats the outputs compute from."""

    def symbols(self) -> dict[str, Any]:
        """The names an output's equation may use besides other outputs: inputs as
        quantities (counts of tokens as ``token`` quantities), ``workload``, ``hardware``."""
        from latencykernel.scenarios.units import Q_

        s: dict[str, Any] = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        s["token"] = Q_(1, "token")
        return s

    # -- common behaviour -------------------------------------------------------------------
    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def variant(self: S, **changes: Any) -> S:
        """A copy with some inputs changed, validated like a new scenario; it keeps no
        key (it is not the named scenario any more)."""
        changes.setdefault("key", None)
        return dataclasses.replace(self, **changes)

    @classmethod
    def outputs(cls) -> tuple[Output[Any], ...]:
        """Every output, in declaration order."""
        return outputs_of(cls)

    def inputs(self) -> dict[str, Any]:
        """The stated inputs (without key, name, description and sources)."""
        skip = {"key", "name", "description", "sources"}
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in skip}

    def evaluate(self) -> list[Evaluation]:
        """Every output at the scenario's own sample arguments, errors recorded (not raised)
        when they are the scenario's documented refusals."""
        rows: list[Evaluation] = []
        for out in self.outputs():
            f = out.formula
            arg_sets = f.samples(self) if (f.kind == "method" and f.samples is not None) else [{}]
            for args in arg_sets:
                try:
                    value = getattr(self, f.name)(**args) if f.kind == "method" else getattr(self, f.name)
                    rows.append(Evaluation(out, dict(args), value, None))
                except LatencyKernelError as e:
                    rows.append(Evaluation(out, dict(args), None, f"{type(e).__name__}: {e}"))
        return rows

    @property
    def title(self) -> str:
        return self.name or self.key or type(self).__name__
