"""Equations as data: the ``@output`` descriptor every scenario output is declared with.

An output is a property (no argument) or a method (arguments). Its record, a
``Formula``, is readable at run time from the class or the instance::

    KvDecodeBatchScenario.step_time.equation      # "step_bytes(batch_size) / bandwidth"
    KvDecodeBatchScenario.step_time.excludes      # ("decode compute (linear layers and attention FLOPs)", ...)

The equation is an expression over the scenario's symbols (its inputs as quantities, its
other outputs, ``workload`` and ``hardware``) that ``evaluate_equation`` computes with pint,
and a test checks it against the float code for every output of every named scenario:
the equation printed by ``latencykernel explain`` and in the docs is the one the code
computes, not a second copy that may drift.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

if TYPE_CHECKING:  # pragma: no cover
    from latencykernel.scenarios.base import Scenario

__all__ = ["Formula", "Output", "BoundOutput", "output", "outputs_of", "evaluate_equation"]

T = TypeVar("T")


@dataclass(frozen=True)
class Formula:
    """What an output is: the record docs, ``explain`` and tests read.

    name:        attribute name
    kind:        "property" or "method"
    summary:     one sentence: what the number is
    equation:    expression over the scenario's symbols (see module docstring)
    unit:        the unit the value is returned in (``None``: a plain number or int)
    args:        method argument names (empty for a property)
    assumptions: what is taken as true to get this number
    excludes:    what the number leaves out
    returns:     "quantity", "int", "float", "mapping" or "text"
    """

    name: str
    kind: str
    summary: str
    equation: str
    unit: str | None
    args: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    returns: str = "quantity"
    samples: Callable[[Any], list[dict[str, Any]]] | None = field(default=None, compare=False, repr=False)

    @property
    def signature(self) -> str:
        return f"{self.name}({', '.join(self.args)})" if self.kind == "method" else self.name


class Output(Generic[T]):
    """Descriptor of one scenario output; ``Class.attr`` returns this object (with the
    ``Formula`` fields as attributes), ``instance.attr`` the value (a property) or a
    callable ``BoundOutput`` (a method)."""

    def __init__(self, fn: Callable[..., T], formula: Formula) -> None:
        self.fn = fn
        self.formula = formula
        self.__doc__ = formula.summary

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self.formula.name:  # pragma: no cover - guarded by construction
            raise TypeError(f"output {self.formula.name!r} bound to attribute {name!r}")

    @overload
    def __get__(self, obj: None, owner: type) -> Output[T]: ...
    @overload
    def __get__(self, obj: object, owner: type) -> Any: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        if self.formula.kind == "property":
            return self.fn(obj)
        return BoundOutput(self, obj)

    def __set__(self, obj: object, value: Any) -> None:
        raise AttributeError(f"{self.formula.name} is an output of the scenario; change its inputs with variant()")

    def __getattr__(self, name: str) -> Any:
        # equation, unit, summary, assumptions, excludes, args, kind, returns, signature
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.formula, name)

    def __repr__(self) -> str:
        return f"<output {self.formula.signature} [{self.formula.unit or '-'}] = {self.formula.equation}>"


class BoundOutput:
    """A method output bound to its scenario: call it; read its ``Formula`` fields."""

    __slots__ = ("_output", "_obj")

    def __init__(self, out: Output[Any], obj: object) -> None:
        self._output = out
        self._obj = obj

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._output.fn(self._obj, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._output.formula, name)

    def __repr__(self) -> str:
        return f"<bound output {self._output.formula.signature} of {type(self._obj).__name__}>"


def output(
    *,
    equation: str,
    unit: str | None = None,
    assumptions: tuple[str, ...] | list[str] = (),
    excludes: tuple[str, ...] | list[str] = (),
    returns: str | None = None,
    samples: Callable[[Any], list[dict[str, Any]]] | None = None,
) -> Callable[[Callable[..., T]], Output[T]]:
    """Declare a scenario output. The function's docstring's first line is the summary.

    ``samples(scenario)`` gives, for a method, the argument sets ``explain`` and the docs
    evaluate it at (e.g. every batch in ``batch_sizes``).
    """

    def wrap(fn: Callable[..., T]) -> Output[T]:
        params = list(inspect.signature(fn).parameters)[1:]
        doc = inspect.getdoc(fn) or ""
        summary = doc.split("\n\n")[0].replace("\n", " ").strip()
        if not summary:
            raise TypeError(f"output {fn.__name__} needs a docstring: its first paragraph is the summary")
        ret = returns or ("quantity" if unit is not None else "float")
        formula = Formula(
            name=fn.__name__,
            kind="method" if params else "property",
            summary=summary,
            equation=equation,
            unit=unit,
            args=tuple(params),
            assumptions=tuple(assumptions),
            excludes=tuple(excludes),
            returns=ret,
            samples=samples,
        )
        return Output(fn, formula)

    return wrap


def outputs_of(cls: type) -> tuple[Output[Any], ...]:
    """Every output of a scenario class, base classes first, in declaration order;
    an output redefined by a subclass appears once, at its first position, as redefined."""
    seen: dict[str, Output[Any]] = {}
    for klass in reversed(cls.__mro__):
        for name, attr in vars(klass).items():
            if isinstance(attr, Output):
                seen[name] = getattr(cls, name)  # the most derived definition
    return tuple(seen.values())


# ----------------------------------------------------------------------------- evaluation


def _dimensionless(x: Any) -> float:
    if hasattr(x, "to"):
        return float(x.to("").magnitude)
    return float(x)


def _floor(x: Any) -> int:
    return math.floor(_dimensionless(x))


def _ceil(x: Any) -> int:
    return math.ceil(_dimensionless(x))


def _sqrt(x: Any) -> Any:
    return x**0.5


_FUNCTIONS: dict[str, Any] = {
    "floor": _floor,
    "ceil": _ceil,
    "sqrt": _sqrt,
    "min": min,
    "max": max,
    "abs": abs,
    "sum": sum,
    "int": int,
    "len": len,
    "product": math.prod,
    "str": str,
}


def _largest_batch(fits: Callable[[int], bool], fallback: int) -> int:
    """Largest b >= 1 with ``fits(b)`` (``fits`` must be monotone), else ``fallback``."""
    if not fits(1):
        return fallback
    hi = 2
    while fits(hi):
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


_FUNCTIONS["largest_batch"] = _largest_batch


class _Namespace(dict):  # type: ignore[type-arg]
    """Names an equation may use, resolved lazily on first use: method arguments, the
    scenario's symbols (inputs as quantities), its outputs, and a few functions. A dict
    subclass so that it can serve as ``eval``'s globals (lambdas and comprehensions in an
    equation see it)."""

    def __init__(self, scenario: Scenario, args: Mapping[str, Any]) -> None:
        super().__init__(args)
        self["__builtins__"] = {}
        self._scenario = scenario
        self._symbols: dict[str, Any] | None = None

    def __missing__(self, key: str) -> Any:
        if self._symbols is None:
            self._symbols = self._scenario.symbols()
        if key in self._symbols:
            value = self._symbols[key]
            if value is None and key in getattr(self._scenario, "optional_inputs", ()):  # not given
                from latencykernel.errors import NotApplicableError

                raise NotApplicableError(f"the equation needs the input {key}, which is not given")
            return value
        if key in _FUNCTIONS:
            return _FUNCTIONS[key]
        attr = getattr(type(self._scenario), key, None)
        if isinstance(attr, Output):
            value = getattr(self._scenario, key)
            self[key] = value
            return value
        raise KeyError(key)


def evaluate_equation(scenario: Scenario, name: str, /, **args: Any) -> Any:
    """Compute output ``name``'s declared equation with pint, from the scenario's symbols.

    Method arguments are given as keywords, in the form the method's symbols expect
    (``batch_size=8``; ``tpot=Q_(20, "ms")``). The result is converted to the output's
    unit when it has one.
    """
    out = getattr(type(scenario), name)
    if not isinstance(out, Output):
        raise KeyError(f"{type(scenario).__name__} has no output {name!r}")
    value = eval(out.formula.equation, _Namespace(scenario, args))  # noqa: S307
    if out.formula.unit is not None and hasattr(value, "to"):
        value = value.to(out.formula.unit)
    elif out.formula.unit is None and hasattr(value, "to") and out.formula.returns in ("float", "int"):
        value = value.to("").magnitude
    return value
