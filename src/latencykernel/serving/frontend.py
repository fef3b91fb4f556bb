"""The API server in front of the engines: the part of a request's admission that queues.

A step model prices admission as one latency per request (``admission_overhead(prompt)``:
a per-request part plus a per-prompt-token part). The per-token part is work vLLM's API
server does in its one asyncio event loop, one request after another: tokenisation and input
processing (``AsyncLLM.add_request`` -> ``Processor.process_inputs``,
vllm/v1/engine/async_llm.py). SGLang's ``TokenizerManager`` and TensorRT-LLM's
``trtllm-serve`` likewise tokenise in one process. So that part is a single server shared by
every client of the deployment (data-parallel ranks share the front end). The per-request
part is a latency each request pays alone.

Evidence: InferenceX, closed form (fix 16 of docs/accuracy.md): with the tokeniser queue,
TTFT MAPE went from 21.41 to 21.06 % on the fit half and from 30.12 to 29.32 % on the
evaluation half; queueing the whole admission priced the fit half at 33.4 %.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["tokenisation_s"]


def tokenisation_s(admission_s: Callable[[int], float], prompt_tokens: int) -> float:
    """Seconds the API server spends on one prompt's tokens: the per-prompt-token part of
    the admission, ``admission_s(2 p) - admission_s(p)`` (an admission affine in the prompt,
    per request + per token x p: the per-request part cancels), never below 0."""
    p = max(int(prompt_tokens), 1)
    return max(float(admission_s(2 * p)) - float(admission_s(p)), 0.0)
