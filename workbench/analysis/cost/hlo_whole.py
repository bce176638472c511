"""XLA's HloCostAnalysis of whole HLO modules, in the pass workers' pool: XLA's HLO parser and analysis can fail a
CHECK inside XLA on a module put together by hand (``hlo.py``'s one-instruction modules), which would end the
kernel; in a worker, the module that did is reported as such and the others' numbers stand."""
from __future__ import annotations

from ...errors import ModuleParseError
from ...pipeline.worker import default_pool

__all__ = ["hlo_module_cost", "hlo_module_costs", "shares"]


def shares(items: list[tuple[int, str]], n: int) -> list[list[tuple[int, str]]]:
    """``items`` in at most ``n`` chunks of about equal text size (largest first, each to the lightest
    chunk): one per worker of the pool, so that the modules are analysed side by side."""
    chunks: list[list[tuple[int, str]]] = [[] for _ in range(max(1, min(n, len(items))))]
    sizes = [0] * len(chunks)
    for item in sorted(items, key=lambda kv: -len(kv[1])):
        k = sizes.index(min(sizes))
        chunks[k].append(item)
        sizes[k] += len(item[1])
    return [c for c in chunks if c]


def hlo_module_costs(texts: list[str]) -> list[dict[str, float] | str]:
    """XLA's HloCostAnalysis of each whole HLO module on CPU, in the pool's workers (which strip its debug
    information first): a dict (``flops``, ``transcendentals``, ``bytes accessed`` and XLA's other keys), or why
    XLA could not (a crash included)."""
    texts = list(texts)
    pool = default_pool()
    chunks = shares(list(enumerate(texts)), pool.width)
    result = pool.map("hlo_costs", chunks, make_args=lambda chunk: (list(chunk),))
    out: list[dict | str] = [""] * len(texts)
    for key, value in result.results:
        out[key] = value
    for f in result.failures:
        last = f.diagnostics.strip().splitlines()[-1:] or [""]
        out[f.item[0]] = f"XLA's cost analysis {'crashed' if f.kind == 'crash' else 'timed out'} on it {last[0]}".strip()
    return out


def hlo_module_cost(text: str) -> dict[str, float]:
    """``hlo_module_costs`` of one module; ModuleParseError when XLA cannot take it."""
    (a,) = hlo_module_costs([text])
    if isinstance(a, str):
        raise ModuleParseError(f"XLA cannot read this HLO module: {a}")
    return a
