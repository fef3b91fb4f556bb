"""The one pint registry of the scenario library, and the checks at its edge.

Every kind of quantity is its own dimension (see ``DEFINITIONS``): bytes ([information]),
FLOPs ([compute]), parameters, tokens, sequences, time, energy, currency. So
``Q_(1, "GB") + Q_(1, "param")`` raises instead of returning 1.000000000125 GB, and a
bare number where bytes are expected is refused instead of being read as bits.

Sizes: ``KB MB GB TB`` are decimal (1e3, 1e6, ...), ``KiB MiB GiB TiB`` binary (2**10, ...).
Quantities print in short form (``str(q.units) == "GB"``).

pint is imported only here and in the rest of ``latencykernel.scenarios``; the top-level
package never imports this module.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from numbers import Real
from typing import Any

import pint

from latencykernel.errors import ScenarioInputError

__all__ = [
    "ureg",
    "Q_",
    "magnitude_in",
    "Quantity",
    "quantity",
    "as_quantity",
    "count",
    "nonnegative_int",
    "positive_int",
    "fraction",
    "number",
    "items",
    "int_list",
    "mapping",
    "text",
    "MAX_COUNT",
    "MAX_ROOT_MAGNITUDE",
]


DEFINITIONS = """\
# The scenario library's units (pint definitions).
#
# Unlike pint's defaults (where bit = [] and a byte is dimensionless), every kind of
# quantity here is its own dimension, so bytes, FLOPs, parameters, tokens and sequences
# cannot be added to one another or read as one another by accident.

#### PREFIXES ####
pico- = 1e-12 = p-
nano- = 1e-9 = n-
micro- = 1e-6 = µ- = μ- = u-
milli- = 1e-3 = m-
kilo- = 1e3 = k- = K-
mega- = 1e6 = M-
giga- = 1e9 = G-
tera- = 1e12 = T-
peta- = 1e15 = P-
exa- = 1e18 = E-
kibi- = 2**10 = Ki-
mebi- = 2**20 = Mi-
gibi- = 2**30 = Gi-
tebi- = 2**40 = Ti-
pebi- = 2**50 = Pi-

#### BASE UNITS (one dimension each) ####
second = [time] = s = sec
bit = [information] = b
flop = [compute]
token = [token] = _ = tokens
parameter = [parameter] = param = params
sequence = [sequence] = _ = sequences
joule = [energy] = J
dollar = [currency] = _ = USD

#### DERIVED UNITS ####
minute = 60 * second = min
hour = 60 * minute = h = hr
day = 24 * hour = d
byte = 8 * bit = B
bps = bit / second
watt = joule / second = W
watt_hour = watt * hour = Wh
# Spelled as mlsysim spells them, so reproduced values print the same unit strings.
KB = 1e3 * byte
TFLOPs = 1e12 * flop
PFLOPs = 1e15 * flop
TOPS = 1e12 * flop / second
Bparam = 1e9 * parameter
"""


def _registry() -> pint.UnitRegistry:
    reg: pint.UnitRegistry = pint.UnitRegistry(None)
    reg.load_definitions(DEFINITIONS.splitlines())
    try:  # pint >= 0.24
        reg.formatter.default_format = "~P"
    except AttributeError:  # pragma: no cover - older pint
        reg.default_format = "~P"
    return reg


ureg: pint.UnitRegistry = _registry()
Q_ = ureg.Quantity
Quantity = pint.Quantity

# Conversion factors are cached: a float core converts once per unit pair.
_FACTORS: dict[tuple[str, str], float] = {}


def factor(from_unit: str, to_unit: str) -> float:
    """Multiply a magnitude in ``from_unit`` by this to express it in ``to_unit``."""
    key = (from_unit, to_unit)
    f = _FACTORS.get(key)
    if f is None:
        f = float(Q_(1.0, from_unit).to(to_unit).magnitude)
        _FACTORS[key] = f
    return f


# Conversion factors by (the quantity's units, target unit): pint's own factor, looked up once.
_UNIT_FACTORS: dict[tuple[Any, str], float] = {}


def magnitude_in(q: Any, unit: str) -> float:
    """``float(q.to(unit).magnitude)``, the same number (pint multiplies by the same factor),
    with the factor looked up once per unit pair instead of parsed on every call."""
    key = (q._units, unit)
    f = _UNIT_FACTORS.get(key)
    if f is None:
        f = _UNIT_FACTORS[key] = float(q._REGISTRY.Quantity(1.0, q._units).to(unit).magnitude)
    return float(q.magnitude) * f


# The largest input any scenario takes (issue 10: huge inputs gave ZeroDivisionError, inf
# and negative figures). A count (tokens, sequences, requests, blocks) above 2**40 is more
# than any deployment holds; a quantity above 1e24 in root units (125 ZB, 3e16 years,
# 1e24 FLOP/s) is beyond anything priced, and products of a few such inputs stay finite.
MAX_COUNT = 2**40
MAX_ROOT_MAGNITUDE = 1e24


def _root_magnitude(q: Any) -> float:
    key = (q._units, "<root>")
    f = _UNIT_FACTORS.get(key)
    if f is None:
        f = _UNIT_FACTORS[key] = float(q._REGISTRY.Quantity(1.0, q._units).to_root_units().magnitude)
    return abs(float(q.magnitude)) * f


def _too_large(argument: str, value: Any, shown: str, limit: str) -> ScenarioInputError:
    return ScenarioInputError(
        f"{argument}={shown} is refused: it exceeds {limit}, beyond anything a deployment holds",
        argument=argument,
        value=value,
    )


_UNITS: dict[str, Any] = {}
_DIMS: dict[str, Any] = {}


def _dim(unit: str) -> Any:
    d = _DIMS.get(unit)
    if d is None:
        d = _DIMS[unit] = Q_(1.0, unit).dimensionality
    return d


def quantity(value_in_base: float, base_unit: str, display_unit: str | None = None) -> pint.Quantity:
    """A float known in ``base_unit`` as a Quantity expressed in ``display_unit`` (default:
    the same unit). Units are parsed once and cached: this is the float core's only cost."""
    display = display_unit or base_unit
    u = _UNITS.get(display)
    if u is None:
        u = _UNITS[display] = ureg.Unit(display)
    if display != base_unit:
        value_in_base *= factor(base_unit, display)
    return Q_(value_in_base, u)


def as_quantity(
    argument: str,
    value: Any,
    expected: str,
    *,
    per: str | None = None,
    positive: bool = False,
    nonnegative: bool = False,
) -> pint.Quantity:
    """``value`` as a Quantity of our registry with the dimension of ``expected``.

    Accepts a pint Quantity (of this or another registry: the unit is re-read here, so a
    byte from pint's default registry, where bytes are dimensionless, becomes a byte) or a
    string such as ``"2 B"``. A bare number is refused: it would have no unit.

    ``per``: when given (``"param"``), a value in ``expected`` alone (``2 B``) is read as
    ``expected / per`` (``2 B/param``); a value already ``expected / per`` is kept.
    """
    memo_key = (id(value), expected, per, positive, nonnegative)
    hit = _ACCEPTED.get(memo_key)
    if hit is not None and hit[0] is value:  # this very object passed these checks before
        return hit[1]
    q = _as_quantity(argument, value, expected, per=per, positive=positive, nonnegative=nonnegative)
    if type(getattr(value, "magnitude", None)) in (int, float):  # scalars only: arrays change in place
        if len(_ACCEPTED) >= _ACCEPTED_SIZE:
            _ACCEPTED.clear()
        _ACCEPTED[memo_key] = (value, q)  # holding ``value`` keeps its id from being reused
    return q


# Inputs that passed ``as_quantity``/``int_list``, by object identity and the checks asked:
# a variant re-validates every input, and the unchanged ones are the very objects checked
# before (scalar quantities and tuples are not changed in place: ``q *= 2`` makes a new
# object), so their checks are not repeated. Strings and array quantities are not kept.
_ACCEPTED: dict[tuple[Any, ...], tuple[Any, Any]] = {}
_ACCEPTED_SIZE = 4096


def _as_quantity(
    argument: str,
    value: Any,
    expected: str,
    *,
    per: str | None,
    positive: bool,
    nonnegative: bool,
) -> pint.Quantity:
    if isinstance(value, bool) or isinstance(value, Real):
        raise ScenarioInputError(
            f"{argument}={value!r} has no unit; write it as a quantity, e.g. "
            f"Q_({value!r}, {expected!r}) or the string '{value} {expected}'",
            argument=argument,
            value=value,
        )
    q: Any
    if isinstance(value, str):
        try:
            q = Q_(value)
        except Exception as e:  # pint raises several error types for bad strings
            raise ScenarioInputError(
                f"{argument}={value!r} is not a quantity pint can read ({e})", argument=argument, value=value
            ) from None
    elif isinstance(value, pint.Quantity):
        q = value if value._REGISTRY is ureg else Q_(value.magnitude, str(value.units))
    else:
        raise ScenarioInputError(
            f"{argument}={value!r} is a {type(value).__name__}; a quantity in {expected} is expected",
            argument=argument,
            value=value,
        )
    if not isinstance(q, pint.Quantity):  # Q_("3") is a plain number
        raise ScenarioInputError(f"{argument}={value!r} has no unit", argument=argument, value=value)
    if per is not None and q.dimensionality == _dim(expected):
        q = q / quantity(1.0, per)
    want = _dim(f"{expected}/{per}") if per is not None else _dim(expected)
    if q.dimensionality != want:
        shown = f"{expected}/{per}" if per else expected
        raise ScenarioInputError(
            f"{argument}={q:~P} has the dimension {q.dimensionality}; it must be convertible to {shown}",
            argument=argument,
            value=value,
        )
    mag = float(q.magnitude)
    if (positive and not mag > 0) or (nonnegative and not mag >= 0) or mag != mag:
        need = "positive" if positive else "at least zero"
        raise ScenarioInputError(f"{argument}={q:~P} is refused: it must be {need}", argument=argument, value=value)
    if not math.isfinite(mag):
        raise ScenarioInputError(f"{argument}={q:~P} is refused: it must be finite", argument=argument, value=value)
    if _root_magnitude(q) > MAX_ROOT_MAGNITUDE:
        raise _too_large(argument, value, f"{q:~P}", f"{MAX_ROOT_MAGNITUDE:g} in root units")
    return q


def _numpy_int(value: Any) -> Any:
    """A numpy integer as the Python int it holds; anything else as it is."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        return value
    return int(value) if isinstance(value, np.integer) else value


def count(argument: str, value: Any, unit: str, *, minimum: int = 0) -> int:
    """An integer count of ``unit`` (tokens, sequences, ...), at least ``minimum``.

    Accepts a Python int, or a Quantity in ``unit`` with an integral magnitude. Floats,
    booleans and quantities of another dimension are refused.
    """
    if type(value) is int:  # the common case: a plain int needs none of the conversions below
        pass
    elif isinstance(value, pint.Quantity):
        q = value if value._REGISTRY is ureg else Q_(value.magnitude, str(value.units))
        if q.dimensionality != Q_(1, unit).dimensionality:
            raise ScenarioInputError(f"{argument}={q:~P} must be a count of {unit}s", argument=argument, value=value)
        mag = q.to(unit).magnitude
        if not math.isfinite(float(mag)) or abs(float(mag)) > MAX_COUNT:
            raise _too_large(argument, value, f"{q:~P}", f"2**40 {unit}s")
        if float(mag) != int(mag):
            raise ScenarioInputError(
                f"{argument}={q:~P} must be a whole number of {unit}s", argument=argument, value=value
            )
        value = int(mag)
    if type(value) is not int:
        value = _numpy_int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioInputError(
            f"{argument}={value!r} must be a whole number of {unit}s (an int)", argument=argument, value=value
        )
    if value < minimum:
        raise ScenarioInputError(
            f"{argument}={value} is refused: it must be at least {minimum}", argument=argument, value=value
        )
    if value > MAX_COUNT:
        raise _too_large(argument, value, str(value), f"2**40 {unit}s")
    return value


def nonnegative_int(argument: str, value: Any) -> int:
    """A plain count (a batch size, a number of requests): an int, refused when negative."""
    if type(value) is not int:
        value = _numpy_int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioInputError(
            f"{argument}={value!r} must be a whole number (an int)", argument=argument, value=value
        )
    if value < 0:
        raise ScenarioInputError(
            f"{argument}={value} is refused: it must not be negative", argument=argument, value=value
        )
    if value > MAX_COUNT:
        raise _too_large(argument, value, str(value), "2**40")
    return value


def positive_int(argument: str, value: Any, *, minimum: int = 1) -> int:
    """A plain count (ranks, heads, accelerators), an int of at least ``minimum`` (which may be 0)."""
    v = nonnegative_int(argument, value)
    if v < minimum:
        raise ScenarioInputError(
            f"{argument}={v} is refused: it must be at least {minimum}", argument=argument, value=v
        )
    return v


def fraction(argument: str, value: Any, *, low_open: bool = True, high: float = 1.0) -> float:
    """A plain number in (0, high] (or [0, high] when ``low_open`` is False)."""
    if type(value) is float and (value > 0 if low_open else value >= 0) and value <= high:
        return value  # the common case, without the ABC check below
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ScenarioInputError(f"{argument}={value!r} must be a number", argument=argument, value=value)
    try:
        v = float(value)
    except OverflowError:  # an int beyond float range
        v = math.inf
    ok = (v > 0 if low_open else v >= 0) and v <= high
    if not ok:
        lo = "(0" if low_open else "[0"
        raise ScenarioInputError(
            f"{argument}={value!r} is refused: it must lie in {lo}, {high:g}]", argument=argument, value=value
        )
    return v


def number(argument: str, value: Any, *, minimum: float | None = None, above: float | None = None) -> float:
    """A plain finite number (not a bool), at least ``minimum`` / greater than ``above``."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ScenarioInputError(f"{argument}={value!r} must be a number", argument=argument, value=value)
    try:
        v = float(value)
    except OverflowError:  # an int beyond float range
        v = math.inf
    if not math.isfinite(v):
        raise ScenarioInputError(
            f"{argument}={value!r} is refused: it must be a finite number", argument=argument, value=value
        )
    if abs(v) > MAX_ROOT_MAGNITUDE:
        raise _too_large(argument, value, repr(value), f"{MAX_ROOT_MAGNITUDE:g}")
    if minimum is not None and not v >= minimum:
        raise ScenarioInputError(
            f"{argument}={value!r} is refused: it must be at least {minimum:g}", argument=argument, value=value
        )
    if above is not None and not v > above:
        raise ScenarioInputError(
            f"{argument}={value!r} is refused: it must be greater than {above:g}", argument=argument, value=value
        )
    return v


def items(argument: str, value: Any, what: str = "items") -> tuple[Any, ...]:
    """A list or tuple (any iterable but a string, bytes or a mapping) as a tuple.

    A scalar, a string or a mapping where a list is expected is refused, naming the argument."""
    refused = ScenarioInputError(f"{argument}={value!r} must be a list of {what}", argument=argument, value=value)
    if isinstance(value, (str, bytes, Mapping, pint.Quantity)) or not isinstance(value, Iterable):
        raise refused
    try:
        return tuple(value)
    except TypeError:  # iterable by type, not by value (a 0-d array)
        raise refused from None


def int_list(argument: str, value: Any, *, minimum: int = 0, unit: str | None = None) -> tuple[int, ...]:
    """A list of ints, each at least ``minimum`` (with ``unit``, each may also be a count
    Quantity of that unit, as :func:`count` reads it)."""
    memo_key = (id(value), "int_list", minimum, unit)
    hit = _ACCEPTED.get(memo_key) if type(value) is tuple else None
    if hit is not None and hit[0] is value:
        return hit[1]  # type: ignore[no-any-return]
    out = []
    for i, v in enumerate(items(argument, value, "ints")):
        label = f"{argument}[{i}]"
        out.append(count(label, v, unit, minimum=minimum) if unit else positive_int(label, v, minimum=minimum))
    result = tuple(out)
    if type(value) is tuple:
        if result == value and all(type(x) is int for x in value):
            result = value  # keep the checked object, so re-validating it is a memo hit
        if len(_ACCEPTED) >= _ACCEPTED_SIZE:
            _ACCEPTED.clear()
        _ACCEPTED[memo_key] = (value, result)
    return result


def mapping(argument: str, value: Any) -> dict[str, Any]:
    """A mapping with string keys, as a dict (values are the caller's to check)."""
    if not isinstance(value, Mapping):
        raise ScenarioInputError(
            f"{argument}={value!r} must be a mapping (a dict of name: value)", argument=argument, value=value
        )
    for k in value:
        if not isinstance(k, str):
            raise ScenarioInputError(f"{argument} key {k!r} must be a string", argument=argument, value=value)
    return dict(value)


def text(argument: str, value: Any, what: str = "a name") -> str:
    """A string input (a key, a name)."""
    if not isinstance(value, str):
        raise ScenarioInputError(f"{argument}={value!r} must be {what} (a str)", argument=argument, value=value)
    return value


# Storage width of one value by precision name (weights or cache elements).
PRECISION_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "fp4": 0.5,
}


def value_bytes(argument: str, value: Any) -> pint.Quantity:
    """Bytes per stored value: a precision name (``"fp16"``, case-insensitive) or a byte
    quantity. An unknown name is refused with the names known."""
    if isinstance(value, str) and value.strip().lower() in PRECISION_BYTES:
        return Q_(PRECISION_BYTES[value.strip().lower()], "B")
    if isinstance(value, str) and not any(ch.isdigit() for ch in value):
        raise ScenarioInputError(
            f"{argument}={value!r} is not a known precision; known: {', '.join(PRECISION_BYTES)} "
            f"(or give a byte quantity such as '2 B')",
            argument=argument,
            value=value,
        )
    return as_quantity(argument, value, "B", positive=True)
