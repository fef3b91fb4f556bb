"""What a GPU-hour costs: the default table (``data/prices/gpu-hour.yaml``, each entry with
its public source and date) and a user's table over it.

A user table is YAML of the same shape (``prices: {chip: {usd_per_gpu_hour: 3.1, source:
..., date: ...}}``) or a plain ``{chip: price}`` mapping; its chips replace the default's, and
the others keep the default. The cost figures of a deployment are ``cost`` below.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from latencykernel.errors import DocumentError

__all__ = ["Price", "PriceTable", "load_prices", "cost", "DEFAULT_PRICES_FILE"]

DEFAULT_PRICES_FILE = Path(__file__).resolve().parents[1] / "data" / "prices" / "gpu-hour.yaml"


@dataclass(frozen=True, slots=True)
class Price:
    """One chip's price per GPU-hour (USD), and where it comes from."""

    usd_per_gpu_hour: float
    source: str
    date: str


@dataclass(frozen=True)
class PriceTable:
    """Prices by chip name; ``files`` says which tables were read (the default first)."""

    prices: Mapping[str, Price]
    files: tuple[str, ...]

    def get(self, chip: str) -> Price | None:
        return self.prices.get(chip)


def _entry(chip: str, raw: Any, file: str) -> Price:
    key = f"prices.{chip}"
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        raw = {"usd_per_gpu_hour": raw}
    if not isinstance(raw, Mapping):
        raise DocumentError(f"{file}: {key}: expected a price or a mapping, got {raw!r}", file=file, key=key, value=raw)
    unknown = set(raw) - {"usd_per_gpu_hour", "source", "date"}
    if unknown:
        bad = sorted(map(str, unknown))[0]
        raise DocumentError(
            f"{file}: {key}.{bad}: unknown key; use usd_per_gpu_hour, source, date", file=file, key=f"{key}.{bad}"
        )
    value = raw.get("usd_per_gpu_hour")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise DocumentError(
            f"{file}: {key}.usd_per_gpu_hour: a price must be a positive number, got {value!r}",
            file=file,
            key=f"{key}.usd_per_gpu_hour",
            value=value,
        )
    return Price(float(value), str(raw.get("source", f"user table {file}")), str(raw.get("date", "")))


def _read(source: str | os.PathLike[str] | Mapping[str, Any]) -> tuple[dict[str, Price], str]:
    if isinstance(source, Mapping):
        data: Any = source
        file = "<memory>"
    elif isinstance(source, str | os.PathLike):
        from latencykernel.documents.yaml_loader import read_yaml

        file = str(source)
        data = read_yaml(source)  # the documents' reader: a DocumentError naming the file and place
    else:
        raise DocumentError(
            f"prices: expected a price table (a mapping or a YAML file path), got {source!r}",
            key="prices",
            value=source,
        )
    if not isinstance(data, Mapping):
        raise DocumentError(f"{file}: expected a mapping of chip prices", file=file)
    table = data.get("prices", data) if "prices" in data else data
    table = {k: v for k, v in table.items() if k not in ("kind", "currency", "unit")}
    return {str(chip): _entry(str(chip), raw, file) for chip, raw in table.items()}, file


def load_prices(user: str | os.PathLike[str] | Mapping[str, Any] | PriceTable | None = None) -> PriceTable:
    """The default table, with ``user``'s chips over it."""
    if isinstance(user, PriceTable):
        return user
    prices, file = _read(DEFAULT_PRICES_FILE)
    files = [file]
    if user is not None:
        mine, ufile = _read(user)
        prices.update(mine)
        files.append(ufile)
    return PriceTable(dict(sorted(prices.items())), tuple(files))


def cost(price: Price | None, gpus: int, output_tokens_per_s: float) -> dict[str, float | None]:
    """What ``gpus`` GPUs of one chip cost, in all and per million output tokens:

        cost_per_hour_usd      = gpus × usd_per_gpu_hour
        gpu_hours_per_mtok     = gpus / output_tokens_per_s × 1e6 / 3600
        usd_per_mtok           = gpu_hours_per_mtok × usd_per_gpu_hour

    With no price for the chip, the dollar figures are None; with no output to price them
    by (``output_tokens_per_s`` not positive), the per-token figures are None: unknown, not
    infinite."""
    usd = None if price is None else price.usd_per_gpu_hour
    per_hour = None if usd is None else gpus * usd
    if not output_tokens_per_s > 0:
        return {
            "usd_per_gpu_hour": usd,
            "cost_per_hour_usd": per_hour,
            "gpu_hours_per_mtok": None,
            "usd_per_mtok": None,
        }
    gpu_hours_per_mtok = gpus / output_tokens_per_s * 1e6 / 3600.0
    return {
        "usd_per_gpu_hour": usd,
        "cost_per_hour_usd": per_hour,
        "gpu_hours_per_mtok": gpu_hours_per_mtok,
        "usd_per_mtok": None if usd is None else gpu_hours_per_mtok * usd,
    }
