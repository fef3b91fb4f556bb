"""The scenario library's reference data, read from package data files and validated like
the documents (strict pydantic models; any problem is a ``DocumentError`` naming the file,
the key path and the value).

    data/scenario_library/recorded_hardware.yaml   devices as mlsysim 0.3.0 registers them
    data/scenario_library/recorded_workloads.yaml  models as mlsysim 0.3.0 registers them
    data/scenario_library/left_out.yaml            mlsysim scenarios we do not reproduce, and why
    data/scenario_library/named_scenarios.yaml     the named scenarios: class, text and inputs

Every record states its ``source`` (a named scenario its ``sources``, or the recorded or
catalog document an input names). The files are read on first use (``RECORDED_HARDWARE``,
``RECORDED_WORKLOADS``, ``LEFT_OUT`` and ``NAMED_SCENARIOS`` are lazy mappings), so importing
the library reads nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

if TYPE_CHECKING:
    from latencykernel.scenarios.hardware import Hardware
    from latencykernel.scenarios.workloads import Workload

__all__ = [
    "RECORDED_HARDWARE",
    "RECORDED_WORKLOADS",
    "LEFT_OUT",
    "NAMED_SCENARIOS",
    "NamedSpec",
    "build_named",
    "data_file",
    "LazyMapping",
]

V = TypeVar("V")


def data_file(name: str) -> Path:
    """A file of ``latencykernel/data/scenario_library``."""
    return Path(str(resources.files("latencykernel") / "data" / "scenario_library" / name))


class LazyMapping(Mapping[str, V]):
    """A read-only mapping built by ``load`` on first use."""

    def __init__(self, load: Callable[[], dict[str, V]]) -> None:
        self._load = load

    def _data(self) -> dict[str, V]:
        return self._load()

    def __getitem__(self, key: str) -> V:
        return self._data()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data())

    def __len__(self) -> int:
        return len(self._data())

    def __contains__(self, key: object) -> bool:
        return key in self._data()

    def __repr__(self) -> str:
        return f"LazyMapping({list(self._data())!r})"


def _models() -> Any:
    """The pydantic models of the three files (built on first use: pydantic loads lazily)."""
    from pydantic import Field, field_validator

    from latencykernel.documents.base_models import StrictModel

    NonEmpty = Annotated[str, Field(min_length=1)]
    Positive = Annotated[int, Field(gt=0)]

    class Device(StrictModel):
        name: NonEmpty
        source: NonEmpty
        memory_bandwidth: NonEmpty
        memory_capacity: NonEmpty
        peaks: dict[str, NonEmpty]
        headline_peak: NonEmpty | None
        catalog: NonEmpty | None = None
        link_bandwidth: NonEmpty | None = None
        host_link_bandwidth: NonEmpty | None = None

        @field_validator(
            "memory_bandwidth", "memory_capacity", "headline_peak", "link_bandwidth", "host_link_bandwidth"
        )
        @classmethod
        def _quantity(cls, v: str | None) -> str | None:
            if v is not None:
                _parse_quantity(v)
            return v

        @field_validator("peaks")
        @classmethod
        def _peaks(cls, v: dict[str, str]) -> dict[str, str]:
            for text in v.values():
                _parse_quantity(text)
            return v

    class HardwareFile(StrictModel):
        kind: Literal["RecordedHardware"]
        devices: dict[str, Device] = Field(min_length=1)

    class Kv(StrictModel):
        kind: Literal["gqa", "mla", "sparse_mla", "swa"]
        n_kv: Positive
        head_dim: Positive
        layers: Positive
        n_q: Positive | None = None

    class Experts(StrictModel):
        routed: Positive
        top_k: Positive

    class Model(StrictModel):
        name: NonEmpty
        source: NonEmpty
        parameters: Annotated[float, Field(gt=0, allow_inf_nan=False)]
        active_parameters: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
        layers: Positive
        kv: Kv | None
        hidden: Positive | None = None
        heads: Positive | None = None
        experts: Experts | None = None
        catalog: NonEmpty | None = None
        note: str = ""

    class WorkloadsFile(StrictModel):
        kind: Literal["RecordedWorkloads"]
        models: dict[str, Model] = Field(min_length=1)

    class LeftOut(StrictModel):
        mlsysim_type: NonEmpty
        reason: NonEmpty

    class LeftOutFile(StrictModel):
        kind: Literal["LeftOutScenarios"]
        source: NonEmpty
        scenarios: dict[str, LeftOut] = Field(min_length=1)

    class Named(StrictModel):
        family: NonEmpty
        class_: NonEmpty = Field(alias="class")
        name: NonEmpty
        description: str = ""
        sources: list[NonEmpty] = []
        inputs: dict[str, Any]

        @field_validator("inputs")
        @classmethod
        def _values(cls, v: dict[str, Any]) -> dict[str, Any]:
            for name, value in v.items():
                _check_value(value, name)
            return v

    class NamedFile(StrictModel):
        kind: Literal["NamedScenarios"]
        scenarios: dict[str, Named] = Field(min_length=1)

    return HardwareFile, WorkloadsFile, LeftOutFile, NamedFile


_TAGS = {
    "q": (str,),
    "recorded_workload": (str,),
    "recorded_hardware": (str,),
    "named": (str,),
    "catalog_hardware": (str,),
    "catalog_workload": (str,),
}


def _check_value(value: Any, where: str) -> None:
    """An input value of named_scenarios.yaml is a number, string, list, mapping, or one tagged
    mapping (see the file's header); anything else is refused naming the place."""
    from latencykernel.documents.base_models import Invalid

    if isinstance(value, list):
        for i, x in enumerate(value):
            _check_value(x, f"{where}[{i}]")
        return
    if not isinstance(value, dict):
        if value is not None and not isinstance(value, (bool, int, float, str)):
            raise Invalid(f"{value!r} is not a number, string, list or mapping", key=where, value=value)
        return
    tags = [k for k in value if k in _TAGS]
    if not tags:
        for k, x in value.items():
            _check_value(x, f"{where}.{k}")
        return
    tag = tags[0]
    allowed = {tag, "basis"} if tag == "catalog_workload" else {tag}
    if tag == "named":
        allowed = {"named", "output", "args", "variant"}
        if not isinstance(value.get("output", ""), str) or not isinstance(value.get("args", []), list):
            raise Invalid("output must be an output's name and args a list", key=where, value=value)
        if not isinstance(value.get("variant", {}), dict):
            raise Invalid("variant must be a mapping of inputs", key=f"{where}.variant", value=value.get("variant"))
        for k, x in value.get("variant", {}).items():
            _check_value(x, f"{where}.variant.{k}")
        for i, x in enumerate(value.get("args", [])):
            _check_value(x, f"{where}.args[{i}]")
    if set(value) - allowed or not isinstance(value[tag], _TAGS[tag]):
        raise Invalid(f"a {{{tag}: ...}} value takes a name only, got {value!r}", key=where, value=value)
    if tag == "q":
        try:
            _parse_quantity(value["q"])
        except ValueError as e:
            raise Invalid(str(e), key=where, value=value["q"]) from None
    if tag == "catalog_workload" and value.get("basis", "counted") not in ("counted", "nominal"):
        raise Invalid("basis must be counted or nominal", key=f"{where}.basis", value=value.get("basis"))


def _parse_quantity(text: str) -> Any:
    from latencykernel.scenarios.units import Q_

    try:
        q: Any = Q_(text)
    except Exception as e:  # noqa: BLE001 - pint raises several types for a bad string
        raise ValueError(f"{text!r} is not a quantity pint can read ({e})") from None
    if not hasattr(q, "units"):
        raise ValueError(f"{text!r} has no unit")
    return q


def _read(name: str, model_index: int) -> Any:
    from latencykernel.documents.validation import require_mapping, validate
    from latencykernel.documents.yaml_loader import read_yaml

    path = data_file(name)
    model = _models()[model_index]
    return validate(model, require_mapping(read_yaml(path), path, f"a {name} document"), path)


@cache
def _hardware() -> dict[str, Hardware]:
    from latencykernel.scenarios.hardware import Hardware

    doc = _read("recorded_hardware.yaml", 0)
    q: Callable[[str], Any] = _parse_quantity
    return {
        key: Hardware(
            name=d.name,
            memory_bandwidth=q(d.memory_bandwidth),
            memory_capacity=q(d.memory_capacity),
            peaks=tuple((k, q(v)) for k, v in d.peaks.items()),
            headline_peak=q(d.headline_peak) if d.headline_peak else None,
            source=d.source,
            catalog_name=d.catalog,
            link_bandwidth=q(d.link_bandwidth) if d.link_bandwidth else None,
            host_link_bandwidth=q(d.host_link_bandwidth) if d.host_link_bandwidth else None,
        )
        for key, d in doc.devices.items()
    }


@cache
def _workloads() -> dict[str, Workload]:
    from latencykernel.scenarios.workloads import ExpertGeometry, KvGeometry, Workload

    doc = _read("recorded_workloads.yaml", 1)
    out: dict[str, Workload] = {}
    for key, m in doc.models.items():
        kv = KvGeometry(m.kv.kind, m.kv.n_kv, m.kv.head_dim, m.kv.layers, m.kv.n_q) if m.kv is not None else None
        out[key] = Workload(
            name=m.name,
            layers=m.layers,
            kv=kv,
            source=m.source,
            nominal_parameters=m.parameters,
            nominal_active_parameters=m.active_parameters,
            basis="nominal",
            hidden=m.hidden,
            heads=m.heads,
            experts=ExpertGeometry(m.experts.routed, m.experts.top_k) if m.experts is not None else None,
            catalog_name=m.catalog,
            note=m.note,
        )
    return out


@cache
def _left_out() -> dict[str, tuple[str, str]]:
    doc = _read("left_out.yaml", 2)
    return {key: (s.mlsysim_type, s.reason) for key, s in doc.scenarios.items()}


class NamedSpec:
    """One named scenario as the data file states it (built by ``build_named``)."""

    __slots__ = ("key", "family", "class_name", "name", "description", "sources", "inputs")

    def __init__(self, key: str, family: str, class_name: str, name: str, description: str,
                 sources: tuple[str, ...], inputs: dict[str, Any]) -> None:  # fmt: skip
        self.key, self.family, self.class_name = key, family, class_name
        self.name, self.description, self.sources, self.inputs = name, description, sources, inputs


@cache
def _named() -> dict[str, NamedSpec]:
    from latencykernel.errors import DocumentError
    from latencykernel.scenarios.named import FAMILIES

    path = data_file("named_scenarios.yaml")
    doc = _read("named_scenarios.yaml", 3)
    out: dict[str, NamedSpec] = {}
    for key, n in doc.scenarios.items():
        if n.family not in FAMILIES:
            raise DocumentError(
                f"{path}: scenarios.{key}.family: {n.family!r} is not a family; families: {', '.join(FAMILIES)}",
                file=str(path),
                key=f"scenarios.{key}.family",
                value=n.family,
            )
        out[key] = NamedSpec(key, n.family, n.class_, n.name, n.description, tuple(n.sources), n.inputs)
    return out


def _decode(value: Any) -> Any:
    """A checked input value of named_scenarios.yaml as the scenario takes it."""
    if isinstance(value, list):
        return tuple(_decode(x) for x in value)
    if not isinstance(value, dict):
        return value
    if "q" in value:
        return _parse_quantity(value["q"])
    if "recorded_workload" in value:
        return RECORDED_WORKLOADS[value["recorded_workload"]]
    if "recorded_hardware" in value:
        return RECORDED_HARDWARE[value["recorded_hardware"]]
    if "named" in value:
        from latencykernel.scenarios.named import get

        scenario = get(value["named"])
        if "variant" in value:
            scenario = scenario.variant(**{k: _decode(x) for k, x in value["variant"].items()})
        if "output" not in value:
            return scenario
        out = getattr(scenario, value["output"])
        return out(*(_decode(x) for x in value["args"])) if "args" in value else out
    if "catalog_hardware" in value:
        from latencykernel.scenarios.hardware import Hardware

        return Hardware.catalog(value["catalog_hardware"])
    if "catalog_workload" in value:
        from latencykernel.scenarios.workloads import Workload

        w = Workload.catalog(value["catalog_workload"])
        return w.nominal() if value.get("basis") == "nominal" else w
    return {k: _decode(x) for k, x in value.items()}


def build_named(spec: NamedSpec) -> Any:
    """The named scenario ``spec`` states: its family module's class, with its text and inputs
    (the class validates them, as it validates any scenario)."""
    import importlib

    from latencykernel.errors import DocumentError
    from latencykernel.scenarios.base import Scenario

    module = importlib.import_module(f"latencykernel.scenarios.{spec.family}")
    cls = getattr(module, spec.class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Scenario)):
        path = data_file("named_scenarios.yaml")
        raise DocumentError(
            f"{path}: scenarios.{spec.key}.class: {spec.class_name!r} is not a scenario class of "
            f"latencykernel.scenarios.{spec.family}",
            file=str(path),
            key=f"scenarios.{spec.key}.class",
            value=spec.class_name,
        )
    inputs: dict[str, Any] = {}
    for k, v in spec.inputs.items():
        try:
            inputs[k] = _decode(v)
        except (AttributeError, TypeError) as e:  # an output or argument the named scenario lacks
            path = data_file("named_scenarios.yaml")
            raise DocumentError(
                f"{path}: scenarios.{spec.key}.inputs.{k}: {e}", file=str(path), key=f"scenarios.{spec.key}.inputs.{k}"
            ) from None
    return cls(key=spec.key, name=spec.name, description=spec.description, sources=spec.sources, **inputs)


RECORDED_HARDWARE: Mapping[str, Hardware] = LazyMapping(_hardware)
RECORDED_WORKLOADS: Mapping[str, Workload] = LazyMapping(_workloads)
LEFT_OUT: Mapping[str, tuple[str, str]] = LazyMapping(_left_out)
NAMED_SCENARIOS: Mapping[str, NamedSpec] = LazyMapping(_named)
