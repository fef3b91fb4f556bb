"""Chip, fabric and storage-class documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from latencykernel.documents.chip import load_chip
from latencykernel.documents.fabric import load_fabric
from latencykernel.documents.storage import load_storage
from latencykernel.errors import DocumentError

CHIP = """\
_comment: "a comment key the loader drops"
Provenance: vendor_spec
TFlopsPeak: 2500.0
TFlopsFP8: 5000.0
TFlopsNVFP4: 10000.0
BwPeakTBs: 8.0
MemoryGiB: 173.2
_comment_interconnect: "another"
IntraNodeBwGBps: 900
IntraRackBwGBps: 900
SMCount: 148
GPUsPerNode: 4
GPUsPerRack: 72
"""


def put(tmp_path: Path, rel: str, text: str) -> Path:
    p = tmp_path / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_chip_loads_with_name_from_stem(tmp_path: Path) -> None:
    c = load_chip(put(tmp_path, "hardware/gb200-nvl72.yaml", CHIP))
    assert c.name == "gb200-nvl72" and c.TFlopsNVFP4 == 10000.0 and c.GPUsPerRack == 72
    assert "name" not in c.model_dump()


def test_chip_minimal_defaults(tmp_path: Path) -> None:
    c = load_chip(
        put(
            tmp_path,
            "hardware/a.yaml",
            "Provenance: derived\nTFlopsPeak: 312\nBwPeakTBs: 2\nMemoryGiB: 80\nIntraNodeBwGBps: 300\nSMCount: 108\n",
        )
    )
    assert c.TFlopsFP8 == 0 and c.TFlopsNVFP4 is None and c.GPUsPerNode is None


@pytest.mark.parametrize(
    ("old", "new", "key", "text"),
    [
        (
            "SMCount: 148",
            "SMCount: 148\nname: gb200",
            "name",
            "unknown key 'name'; accepted keys are: Provenance, TFlopsPeak",
        ),
        ("SMCount: 148", "SMCount: 0", "SMCount", "must be at least 1, got 0"),
        ("SMCount: 148", "SMCount: 148.5", "SMCount", "expected an integer, got 148.5"),
        ("TFlopsPeak: 2500.0", "TFlopsPeak: -1", "TFlopsPeak", "must be greater than 0, got -1"),
        ("TFlopsFP8: 5000.0", "TFlopsFP8: 100", "TFlopsFP8", "must be 0 (no native FP8) or above TFlopsPeak"),
        ("Provenance: vendor_spec", "Provenance: guess", "Provenance", "'guess' is not one of vendor_spec, derived"),
        ("BwPeakTBs: 8.0\n", "", "BwPeakTBs", "missing required key 'BwPeakTBs'"),
        ("GPUsPerRack: 72", "GPUsPerRack: 70", "GPUsPerRack", "70 is not a multiple of GPUsPerNode 4"),
        ("GPUsPerRack: 72", "", "IntraRackBwGBps", "IntraRackBwGBps needs GPUsPerRack"),
        ("SMCount: 148", "SMCount: 148\nmfuPrefill: 0.5", "mfuPrefill", "unknown key 'mfuPrefill'"),
    ],
)
def test_chip_defects(tmp_path: Path, old: str, new: str, key: str, text: str) -> None:
    p = put(tmp_path, "hardware/x.yaml", CHIP.replace(old, new))
    with pytest.raises(DocumentError) as ei:
        load_chip(p)
    e = ei.value
    assert e.key == key and text in str(e) and str(e).startswith(f"{p}: "), str(e)


def test_chip_not_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="expected a chip"):
        load_chip(put(tmp_path, "hardware/l.yaml", "- 1\n- 2\n"))
    with pytest.raises(DocumentError, match="the file is empty"):
        load_chip(put(tmp_path, "hardware/e.yaml", ""))


def test_fabric(tmp_path: Path) -> None:
    f = load_fabric(
        put(
            tmp_path,
            "networks/ib-400g.yaml",
            "# c\nProvenance: vendor_spec\nInterNodeBwGBps: 50\nPDTransferBaseLatencyMs: 0\n_comment_x: y\n",
        )
    )
    assert f.name == "ib-400g" and f.InterNodeBwGBps == 50 and f.RDMA is None
    old = load_fabric(put(tmp_path, "networks/old.yaml", "InterNodeBwGBps: 25\n"))
    assert old.Provenance is None
    with pytest.raises(DocumentError) as ei:
        load_fabric(put(tmp_path, "networks/bad.yaml", "InterNodeBwGBps: 0\nRDMA: yes please\n"))
    assert ei.value.key == "InterNodeBwGBps" and "must be greater than 0" in str(ei.value)
    with pytest.raises(DocumentError) as ei:
        load_fabric(put(tmp_path, "networks/bad2.yaml", "InterNodeBwGBps: 25\nInterNodeBwGbps: 3\n"))
    assert "unknown key 'InterNodeBwGbps'; accepted keys are: " in str(ei.value)
    assert str(ei.value).endswith("; did you mean 'InterNodeBwGBps'?")


STORAGE = """\
cpu_dram: {read_bandwidth_mb_s: 20000, write_bandwidth_mb_s: 20000, base_latency_us: 1}
nvme_gen4:
  _comment: "legacy spellings, exponent floats"
  read_bandwidth: 7.0e3
  write_bandwidth: 5.0e3
  base_latency: 80.0
"""


def test_storage_both_spellings_normalised(tmp_path: Path) -> None:
    s = load_storage(put(tmp_path, "devices/storage.yaml", STORAGE))
    assert list(s) == ["cpu_dram", "nvme_gen4"]
    assert s["nvme_gen4"].read_mb_per_s == 7000.0 and s["nvme_gen4"].write_mb_per_s == 5000.0
    assert s["nvme_gen4"].base_latency_us == 80.0 and s["cpu_dram"].base_latency_us == 1


@pytest.mark.parametrize(
    ("text", "key", "part"),
    [
        ("_comment: top\n" + STORAGE, "_comment", "comment keys are not allowed at the top level"),
        (STORAGE.replace("base_latency: 80.0", "base_latency: 0"), "nvme_gen4.base_latency", "must be greater than 0"),
        (
            STORAGE.replace("base_latency_us: 1}", "base_latency_us: 1, base_latency: 1}"),
            "cpu_dram.base_latency",
            "states both 'base_latency_us' and its older spelling 'base_latency'",
        ),
        (STORAGE.replace("base_latency_us: 1}", "latency: 1}"), "cpu_dram.latency", "unknown key 'latency'"),
        (STORAGE.replace("  write_bandwidth: 5.0e3\n", ""), "nvme_gen4.write_bandwidth_mb_s", "missing required key"),
        ("s3: fast\n", "s3", "expected a mapping, got 'fast'"),
    ],
)
def test_storage_defects(tmp_path: Path, text: str, key: str, part: str) -> None:
    p = put(tmp_path, "devices/storage.yaml", text)
    with pytest.raises(DocumentError) as ei:
        load_storage(p)
    assert ei.value.key == key and part in str(ei.value) and str(ei.value).startswith(f"{p}: "), str(ei.value)


def test_storage_unknown_key_lists_both_spellings(tmp_path: Path) -> None:
    p = put(tmp_path, "devices/storage.yaml", "x: {read_bw: 1}\n")
    with pytest.raises(DocumentError) as ei:
        load_storage(p)
    assert "read_bandwidth_mb_s, read_bandwidth" in str(ei.value)
