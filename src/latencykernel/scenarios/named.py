"""The named scenarios: ``Scenarios.Gpt2XlChatDecodeBatchesH100`` and friends.

The named scenarios are data: ``data/scenario_library/named_scenarios.yaml`` states each
one's family (the module holding its class), class, text and inputs; a family module may
also register a builder in code with ``@register(key)``. A scenario is built on first access
and kept (scenarios are immutable). ``LEFT_OUT`` lists the serving
and LLM-inference scenarios of mlsysim's golden file we do not provide, with the reason;
the docs index is generated from both.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterator
from typing import Any

from latencykernel.errors import UnknownScenarioError
from latencykernel.scenarios.reference_data import LEFT_OUT  # package data, read on first use

__all__ = ["Scenarios", "register", "NAMED", "LEFT_OUT", "FAMILIES"]

# Family modules, in docs order. Each registers its named scenarios on import.
FAMILIES: tuple[str, ...] = (
    "kv_decode",
    "decode_floor",
    "weight_read",
    "kv_footprint",
    "kv_admission",
    "kv_residency",
    "kv_pause",
    "experts",
    "prefill",
    "speculative",
    "batching",
    "context",
    "attention",
    "economics",
    "queueing",
)

NAMED: dict[str, tuple[str, Callable[[], Any]]] = {}
_BUILT: dict[str, Any] = {}


def register(key: str) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    """Register ``builder`` as the named scenario ``key`` (its module is its family)."""

    def wrap(builder: Callable[[], Any]) -> Callable[[], Any]:
        if key in NAMED:
            raise ValueError(f"named scenario {key!r} registered twice")
        module = getattr(builder, "func", builder).__module__  # a functools.partial names its function's
        NAMED[key] = (module.rsplit(".", 1)[-1], builder)
        return builder

    return wrap


_LOADED: list[bool] = []


def _load() -> None:
    """Register the named scenarios of data/scenario_library/named_scenarios.yaml (built on
    first access), then import every family module (its classes; a family may also register
    builders in code with ``@register``)."""
    if _LOADED:
        return
    from latencykernel.scenarios.reference_data import NAMED_SCENARIOS, build_named

    for key, spec in NAMED_SCENARIOS.items():
        if key in NAMED:
            raise ValueError(f"named scenario {key!r} registered twice")
        NAMED[key] = (spec.family, functools.partial(build_named, spec))
    for fam in FAMILIES:
        importlib.import_module(f"latencykernel.scenarios.{fam}")
    _LOADED.append(True)


def get(key: str) -> Any:
    """The named scenario ``key``."""
    if key not in NAMED:
        _load()
    if key in _BUILT:
        return _BUILT[key]
    try:
        _family, builder = NAMED[key]
    except KeyError:
        from latencykernel.repos import _listing  # the package's one "did you mean" list

        left = f" (mlsysim's {key} is left out: {LEFT_OUT[key][1]})" if key in LEFT_OUT else ""
        raise UnknownScenarioError(
            f"no named scenario {key!r}{left}; named scenarios (closest first): {_listing(key, list(NAMED), limit=6)}"
        ) from None
    scenario = builder()
    _BUILT[key] = scenario
    return scenario


def keys() -> list[str]:
    """Every named scenario key, by family then registration order."""
    _load()
    order = {f: i for i, f in enumerate(FAMILIES)}
    return sorted(NAMED, key=lambda k: (order.get(NAMED[k][0], 99), list(NAMED).index(k)))


class _ScenariosMeta(type):
    def __getattr__(cls, key: str) -> Any:
        if key.startswith("_"):
            raise AttributeError(key)
        try:
            return get(key)
        except UnknownScenarioError as e:
            raise AttributeError(str(e)) from None

    def __dir__(cls) -> list[str]:
        return sorted(set(super().__dir__()) | set(keys()))

    def __iter__(cls) -> Iterator[str]:
        return iter(keys())

    def __contains__(cls, key: object) -> bool:
        if not isinstance(key, str):
            return False
        _load()
        return key in NAMED


class Scenarios(metaclass=_ScenariosMeta):
    """Named scenarios, built on first access: ``Scenarios.Gpt2XlChatDecodeBatchesH100``.

    ``list(Scenarios)`` gives every key; ``Scenarios.get(key)`` looks one up by name.
    """

    get = staticmethod(get)
    keys = staticmethod(keys)
