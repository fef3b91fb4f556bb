"""The base of every scenario: inputs validated at construction and at ``variant()``,
outputs declared with ``@output``, and a structured explanation of both."""

from __future__ import annotations

import dataclasses
import re
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
    variant_of: str | None = None  # the named scenario a variant descends from (set by ``variant``)

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
        self.__dict__[name] = value  # what object.__setattr__ does on a frozen dataclass, faster

    def variant(self: S, **changes: Any) -> S:
        """A copy with some inputs changed, validated like a new scenario.

        It keeps no key (it is not the named scenario any more) and no stale text: unless
        the call states them, the title becomes "variant of KEY (changed: input=value, ...)",
        listing every input that differs from the named scenario it descends from (or from
        this one, if it has no key); the description is qualified as the original's; the
        sources (figures) that name a changed input are dropped, and a changed workload's or
        hardware's own source is listed instead. With no input changed, the original's text
        is kept."""
        origin = self.key or self.variant_of
        names = _field_names(type(self))
        if not names.issuperset(changes):
            unknown = [n for n in changes if n not in names]
            from latencykernel.errors import ScenarioInputError

            raise ScenarioInputError(
                f"{unknown[0]!r} is not an input of {type(self).__name__}; its inputs are: "
                f"{', '.join(_input_names(type(self)))}",
                argument=unknown[0],
                value=changes[unknown[0]],
            )
        # A copy of the validated instance with the changes, validated again as a whole (as
        # construction does: ``_validate`` sees every input), without dataclass re-construction.
        new = object.__new__(type(self))
        state = new.__dict__
        state.update(self.__dict__)
        state.update(changes)
        state["key"] = None
        state["variant_of"] = origin
        if "sources" in changes:
            state["sources"] = tuple(changes["sources"])
        new._validate()
        reference: Scenario = self
        if origin is not None and self.key is None:
            from latencykernel.scenarios.named import get  # lazy: named imports the families

            reference = get(origin)
        before, after = reference.__dict__, state
        changed = {
            n: after[n]
            for n in _input_names(type(self))
            if after[n] is not before[n] and not _same(after[n], before[n])
        }
        base = origin or self.name or type(self).__name__
        if not changed:  # the original's text, unless the call states its own
            for field in ("name", "description", "sources"):
                if field not in changes:
                    state[field] = getattr(reference, field)
            return new
        shown = []
        added = []
        for n, v in changed.items():
            shown.append(f"{n}={_shown(v)}")
            if type(v) not in _PLAIN:  # a plain number or string has no source of its own
                src = getattr(v, "source", None)
                if isinstance(src, str):
                    added.append(f"{n}: {src}")
        label = ", ".join(shown)
        names_changed = tuple(changed)
        text = {
            "name": f"variant of {base} (changed: {label})",
            "description": (
                f"{base} with {label}; as stated for {base}'s own inputs: {reference.description}"
                if reference.description
                else f"{base} with {label}."
            ),
            "sources": (*(s for s in reference.sources if not _names_any(s, names_changed)), *added),
        }
        for field in ("name", "description", "sources"):
            if field not in changes:
                state[field] = text[field]
        return new

    @classmethod
    def outputs(cls) -> tuple[Output[Any], ...]:
        """Every output, in declaration order."""
        return outputs_of(cls)

    def inputs(self) -> dict[str, Any]:
        """The stated inputs (without key, name, description and sources)."""
        return {n: getattr(self, n) for n in _input_names(type(self))}

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


_TEXT_FIELDS = frozenset({"key", "name", "description", "sources", "variant_of"})


_FIELDS: dict[type, frozenset[str]] = {}
_INPUTS: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> frozenset[str]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    return names


def _input_names(cls: type) -> tuple[str, ...]:
    """A scenario class's stated inputs, in field order (without its text fields)."""
    names = _INPUTS.get(cls)
    if names is None:
        names = _INPUTS[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.name not in _TEXT_FIELDS)
    return names


def _same(a: Any, b: Any) -> bool:
    """Whether two validated input values are equal (values that cannot be compared differ)."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - pint or numpy refusing the comparison means "changed"
        return False


_PLAIN = (int, float, str)


def _shown(v: Any, limit: int = 40) -> str:
    """An input value as a variant's title shows it."""
    if type(v) in _PLAIN:
        text = repr(v)  # no name, units or items to show
    elif isinstance(getattr(v, "name", None), str) and v.name:
        text = v.name
    elif hasattr(v, "units") and hasattr(v, "magnitude"):
        text = f"{v:~P}"
    elif isinstance(v, tuple):
        text = repr(list(v))
    else:
        text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_NAMES_ANY: dict[tuple[str, tuple[str, ...]], bool] = {}


def _names_any(source: str, inputs: tuple[str, ...]) -> bool:
    """Whether a source's label (the text before its first colon) names one of ``inputs``."""
    key = (source, inputs)
    hit = _NAMES_ANY.get(key)
    if hit is None:
        label = source.split(":", 1)[0]
        hit = any(re.search(rf"\b{re.escape(n)}\b", label) for n in inputs)
        if len(_NAMES_ANY) > 4096:
            _NAMES_ANY.clear()
        _NAMES_ANY[key] = hit
    return hit
