"""The scenario library's reference data, read from package data files and validated like
the documents (strict pydantic models; any problem is a ``DocumentError`` naming the file,
the key path and the value).

    data/scenario_library/recorded_hardware.yaml   devices as mlsysim 0.3.0 registers them
    data/scenario_library/recorded_workloads.yaml  models as mlsysim 0.3.0 registers them
    data/scenario_library/left_out.yaml            mlsysim scenarios we do not reproduce, and why

Every record states its ``source``. The files are read on first use (``RECORDED_HARDWARE``,
``RECORDED_WORKLOADS`` and ``LEFT_OUT`` are lazy mappings), so importing the library reads
nothing.
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

__all__ = ["RECORDED_HARDWARE", "RECORDED_WORKLOADS", "LEFT_OUT", "data_file", "LazyMapping"]

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

    return HardwareFile, WorkloadsFile, LeftOutFile


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


RECORDED_HARDWARE: Mapping[str, Hardware] = LazyMapping(_hardware)
RECORDED_WORKLOADS: Mapping[str, Workload] = LazyMapping(_workloads)
LEFT_OUT: Mapping[str, tuple[str, str]] = LazyMapping(_left_out)
