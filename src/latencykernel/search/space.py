"""The space a search walks: which deployments to build, in a stable order.

A ``Space`` lists the choices (chips, GPU counts, parallel widths, dtypes, engine settings,
prefill/decode disaggregation); ``deployments(space)`` expands it into ``Deployment`` specs,
one per combination, always in the same order (the order of the lists as written, the last
key varying fastest). A spec is a plain frozen record: it is cheap to pickle, names every
choice, and builds nothing until an evaluator turns it into kernels.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from latencykernel.errors import DocumentError

__all__ = ["Space", "PoolSpace", "Disaggregation", "Layout", "Deployment", "load_space", "deployments"]

PosInt = Annotated[int, Field(ge=1)]
# ``None`` in a list of engine settings means "unstated": the kernel takes vLLM's default
# and records it as an assumption.
MaybeStr = str | None
MaybeInt = PosInt | None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PoolSpace(_Strict):
    """Parallel layouts of one engine: every ``tp`` × ``dp`` × ``expert_parallel``."""

    tp: Annotated[list[PosInt], Field(min_length=1)] = [1]
    dp: Annotated[list[PosInt], Field(min_length=1)] = [1]
    expert_parallel: Annotated[list[bool], Field(min_length=1)] = [False]


class Disaggregation(_Strict):
    """Prefill/decode disaggregation: ``prefill_workers`` (x) engines laid out as ``prefill``
    and ``decode_workers`` (y) engines laid out as ``decode`` (xPyD). Every x:y pair is
    simulated in full, so the pools' rates are matched by the simulation itself: a prefill
    pool too small for its decode pool shows as queueing in TTFT, one too large as fewer
    tokens/s per GPU, and the front and ``best`` keep the pairs that balance."""

    prefill: PoolSpace
    decode: PoolSpace
    prefill_workers: Annotated[list[PosInt], Field(min_length=1)] = [1]
    decode_workers: Annotated[list[PosInt], Field(min_length=1)] = [1]


class Space(_Strict):
    """The choices a search combines (YAML keys as written here).

    hardware:                chips (catalog names or unique prefixes)
    gpus:                    total GPUs of a colocated deployment; with ``tp`` only, ``dp``
                             is ``gpus / tp`` (combinations that do not divide are left out)
    tp, dp:                  tensor- and data-parallel widths (pp is 1)
    expert_parallel:         vLLM ``--enable-expert-parallel`` off and/or on
    ep:                      when given, expert-parallel layouts are kept only where their
                             expert width (tp × dp, as vLLM forms it) is listed
    quantization, cache_dtype, cudagraph_mode, max_num_seqs, max_num_batched_tokens:
                             engine settings as vLLM names them; ``null`` = unstated
    fabric:                  the network between nodes for layouts wider than a node
    colocated:               include colocated deployments (default true)
    disaggregation:          prefill/decode pools (xPyD), off when absent
    """

    hardware: Annotated[list[str], Field(min_length=1)]
    gpus: Annotated[list[PosInt], Field(min_length=1)] | None = None
    tp: Annotated[list[PosInt], Field(min_length=1)] = [1, 2, 4, 8]
    dp: Annotated[list[PosInt], Field(min_length=1)] | None = None
    expert_parallel: Annotated[list[bool], Field(min_length=1)] = [False]
    ep: Annotated[list[PosInt], Field(min_length=1)] | None = None
    quantization: Annotated[list[MaybeStr], Field(min_length=1)] = [None]
    cache_dtype: Annotated[list[MaybeStr], Field(min_length=1)] = [None]
    cudagraph_mode: Annotated[list[MaybeStr], Field(min_length=1)] = [None]
    max_num_seqs: Annotated[list[MaybeInt], Field(min_length=1)] = [None]
    max_num_batched_tokens: Annotated[list[MaybeInt], Field(min_length=1)] = [None]
    fabric: str | None = "ib-400g"
    colocated: bool = True
    disaggregation: Disaggregation | None = None

    @model_validator(mode="after")
    def _something(self) -> Space:
        if not self.colocated and self.disaggregation is None:
            raise ValueError("colocated is false and no disaggregation is given: the space is empty")
        return self


@dataclass(frozen=True, slots=True)
class Layout:
    """One engine's parallel layout."""

    tp: int
    dp: int
    expert_parallel: bool

    @property
    def gpus(self) -> int:
        return self.tp * self.dp

    def label(self) -> str:
        return f"tp{self.tp} dp{self.dp}" + (" ep" if self.expert_parallel else "")


@dataclass(frozen=True, slots=True)
class Deployment:
    """One point of the space. ``layout`` is the colocated engine, or the decode engine of a
    disaggregated deployment whose prefill engine is ``prefill`` (x = ``prefill_workers``,
    y = ``decode_workers`` engines)."""

    index: int
    hardware: str
    layout: Layout
    quantization: str | None
    cache_dtype: str | None
    cudagraph_mode: str | None
    max_num_seqs: int | None
    max_num_batched_tokens: int | None
    fabric: str | None
    prefill: Layout | None = None
    prefill_workers: int = 0
    decode_workers: int = 1

    @property
    def disaggregated(self) -> bool:
        return self.prefill is not None

    @property
    def gpus(self) -> int:
        """Every GPU the deployment occupies."""
        if self.prefill is None:
            return self.layout.gpus
        return self.prefill_workers * self.prefill.gpus + self.decode_workers * self.layout.gpus

    def engine(self) -> dict[str, Any]:
        """The stated engine settings (unstated ones left out)."""
        e = {
            "quantization": self.quantization,
            "cache_dtype": self.cache_dtype,
            "cudagraph_mode": self.cudagraph_mode,
            "max_num_seqs": self.max_num_seqs,
            "max_num_batched_tokens": self.max_num_batched_tokens,
        }
        return {k: v for k, v in e.items() if v is not None}

    def label(self) -> str:
        """A short human name, e.g. ``h200 tp8 dp1 ep fp8`` or ``b200 2P(tp4 dp1)+1D(tp8 dp1)``."""
        if self.prefill is None:
            parts = [self.hardware, self.layout.label()]
        else:
            parts = [
                self.hardware,
                f"{self.prefill_workers}P({self.prefill.label()})+{self.decode_workers}D({self.layout.label()})",
            ]
        parts += [f"{k}={v}" for k, v in self.engine().items()]
        return " ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["gpus"] = self.gpus
        d["label"] = self.label()
        return d


def load_space(source: str | os.PathLike[str] | Mapping[str, Any] | Space) -> Space:
    """A ``Space`` from a YAML file, a mapping, or a ``Space``; a bad key or value is a
    ``DocumentError`` naming it, and anything else a ``DocumentError`` naming ``space``."""
    if isinstance(source, Space):
        return source
    if isinstance(source, bool) or not isinstance(source, str | os.PathLike | Mapping):
        raise DocumentError(
            f"space: expected a Space, a mapping of space keys or a YAML file path, got {source!r}",
            key="space",
            value=source,
        )
    file = "<memory>"
    data: Any = dict(source) if isinstance(source, Mapping) else source
    if not isinstance(source, Mapping):
        from latencykernel.documents.yaml_loader import read_yaml

        file = str(source)
        data = read_yaml(source)  # the documents' reader: a DocumentError naming the file and place
        if not isinstance(data, dict):
            raise DocumentError(f"{file}: expected a mapping of space keys, got {type(data).__name__}", file=file)
    try:
        return Space.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "space"
        value = err.get("input")
        raise DocumentError(f"{file}: {key}: {err['msg']} (got {value!r})", file=file, key=key, value=value) from None


def _layouts(tps: list[int], dps: list[int] | None, gpus: list[int] | None, eps: list[bool]) -> Iterator[Layout]:
    """Layouts in order: by GPU count when ``gpus`` is given, then tp, dp, expert parallel."""
    if gpus is None:
        for tp, dp, ep in itertools.product(tps, dps or [1], eps):
            yield Layout(tp, dp, ep)
        return
    for g in gpus:
        for tp in tps:
            for dp in dps if dps is not None else [g // tp] if g % tp == 0 else []:
                if tp * dp != g:
                    continue
                for ep in eps:
                    yield Layout(tp, dp, ep)


def _ep_ok(layout: Layout, ep: list[int] | None) -> bool:
    return ep is None or not layout.expert_parallel or layout.gpus in ep


def deployments(space: Space) -> list[Deployment]:
    """Every deployment of ``space``, in a stable order: by chip, colocated before
    disaggregated, then layout, then engine settings (the order the lists are written in)."""
    out: list[Deployment] = []
    engines = list(
        itertools.product(
            space.quantization,
            space.cache_dtype,
            space.cudagraph_mode,
            space.max_num_seqs,
            space.max_num_batched_tokens,
        )
    )
    for hw in space.hardware:
        if space.colocated:
            for lay in _layouts(space.tp, space.dp, space.gpus, space.expert_parallel):
                if not _ep_ok(lay, space.ep):
                    continue
                for q, kv, cg, mns, mbt in engines:
                    out.append(Deployment(len(out), hw, lay, q, kv, cg, mns, mbt, space.fabric))
        pd = space.disaggregation
        if pd is None:
            continue
        pre = [x for x in _layouts(pd.prefill.tp, pd.prefill.dp, None, pd.prefill.expert_parallel)]
        dec = [x for x in _layouts(pd.decode.tp, pd.decode.dp, None, pd.decode.expert_parallel)]
        for p, d in itertools.product(pre, dec):
            if not (_ep_ok(p, space.ep) and _ep_ok(d, space.ep)):
                continue
            for x, y in itertools.product(pd.prefill_workers, pd.decode_workers):
                for q, kv, cg, mns, mbt in engines:
                    out.append(Deployment(len(out), hw, d, q, kv, cg, mns, mbt, space.fabric, p, x, y))
    return out
