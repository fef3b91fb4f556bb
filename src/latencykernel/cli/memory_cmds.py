"""``latencykernel memory`` and ``latencykernel evidence``."""

from __future__ import annotations

from collections import Counter

import typer

from latencykernel.cli import app
from latencykernel.cli.common import (
    GIB,
    MIB,
    Context,
    Deployment,
    Json,
    Unchecked,
    check_batch,
    console,
    print_json,
    takes_deployment,
)


@app.command("memory")
@takes_deployment
def memory_cmd(
    dep: Deployment,
    context: int = Context(4096, "Tokens per sequence for the capacity figures."),
    utilization: float | None = typer.Option(
        None, "--gpu-memory-utilization", help="Override the deployment's gpu_memory_utilization."
    ),
    unchecked: bool = Unchecked,
    as_json: bool = Json,
) -> None:
    """Fixed memory per rank, the KV budget, and how many sequences of a context fit.

    \b
    Examples:
      latencykernel memory aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml --context 8192
      latencykernel memory --model llama-3.1-8b-instruct --hardware h100 --gpu-memory-utilization 0.85 --json
    """
    from latencykernel.batch import Batch

    k = dep.kernel()
    check_batch(k, Batch.decode(1, context, 8), unchecked)  # a context the engine would refuse
    m = k.fixed_bytes()
    util = utilization if utilization is not None else k.info["gpu_memory_utilization"]
    budget = k.kv_budget_bytes(util)
    seq = k.sequence_variable_bytes(context)
    data = {
        "scenario": k.name,
        "bytes_per_rank": {
            "weights": m.weights,
            "activation_peak": m.activation_peak,
            "cuda_graph": m.cuda_graph,
            "comm_buffers": m.comm_buffers,
            "eplb_redundant": m.eplb_redundant,
            "total": m.total,
            "pre_snapshot": k.pre_snapshot_bytes(),
        },
        "gpu_memory_utilization": util,
        "kv_budget_bytes": budget,
        "kv_blocks": k.kv_blocks(util),
        "kv_bytes_per_token_per_rank": k.kv_bytes_per_token(),
        "context": context,
        "sequence_variable_bytes": seq,
        "sequence_fixed_bytes": k.sequence_fixed_bytes(),
        "max_sequences": k.max_sequences(context, util),
        "max_num_seqs": k.info["max_num_seqs"],
    }
    if as_json:
        print_json(data)
        return
    from rich.table import Table

    c = console()
    c.print(f"[bold]{k.name}[/bold]: {k.model} on {k.chip}")
    t = Table(title="per rank")
    t.add_column("")
    t.add_column("GiB", justify="right")
    for label, v in (
        ("weights", m.weights),
        ("activations", m.activation_peak),
        ("CUDA graphs", m.cuda_graph),
        ("comm buffers", m.comm_buffers),
        ("EPLB", m.eplb_redundant),
        ("total", m.total),
        ("before the budget", k.pre_snapshot_bytes()),
    ):
        t.add_row(label, f"{v / GIB:.1f}")
    t.add_row(f"KV budget at utilization {util}", f"{budget / GIB:.1f}")
    c.print(t)
    c.print(
        f"a {context:,}-token request: {seq / MIB:,.0f} MiB of KV cache per rank "
        f"({k.kv_bytes_per_token():,.0f} bytes per token, pages of {k.constants.block_size})"
    )
    c.print(
        f"{data['kv_blocks']:,} KV blocks; {data['max_sequences']:,} sequences of {context:,} tokens fit "
        f"(the engine also caps a batch at max_num_seqs {data['max_num_seqs']})"
    )


@app.command("evidence")
@takes_deployment
def evidence_cmd(dep: Deployment, as_json: bool = Json) -> None:
    """What the price rests on: values by method, and the kernel's own assumptions.

    \b
    Examples:
      latencykernel evidence aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml
      latencykernel evidence --model gpt-oss-120b --hardware h200 --json
    """
    from latencykernel.kernel import KERNEL_ASSUMPTION_SET

    k = dep.kernel()
    measured, total, assumed = k.evidence()
    by_method = Counter(o.method for o in k.provenance())
    own = [(n, v, r) for n, v, r in k.assumptions()]
    if as_json:
        print_json(
            {
                "scenario": k.name,
                "evidenced": measured,
                "total": total,
                "assumed": assumed,
                "by_method": dict(sorted(by_method.items())),
                "kernel_assumptions": [{"name": n, "value": v, "reason": r} for n, v, r in own],
                "provenance": [o.__dict__ for o in k.provenance()],
            }
        )
        return
    from rich.table import Table

    c = console()
    c.print(f"{measured} of {total} values rest on evidence; {len(assumed)} were assumed")
    t = Table()
    t.add_column("method")
    t.add_column("values", justify="right")
    for m, n in sorted(by_method.items()):
        t.add_row(m, str(n))
    c.print(t)
    for n, v, r in own:
        c.print(f"the kernel assumed {n} = {v} ({r}) [set {KERNEL_ASSUMPTION_SET}]")
