"""The ``signature`` of a saved exploration's manifest: the traced function's name and its arguments' leaves
(``stages.Signature``), which a golden check holds a function to (``analysis/diff/gates.program_row``).

A program given as text has none (``null``). A file saved before signatures were written lacks the field: its
title is taken as the function's name when its spec says the program was traced from a function, and its
arguments' tree is unknown (``leaves`` None), so a check says it was not compared.
"""
from __future__ import annotations

from ..stages import ArgLeaf, Signature, Spec

__all__ = ["signature_json", "signature_from"]


def signature_json(spec: Spec) -> dict | None:
    """The function's name and its arguments' leaves (``Spec.signature``); None for a program given as text."""
    sig = spec.signature
    if sig is None:
        return None
    leaves = None if sig.leaves is None else [{"path": a.path, "shape": list(a.shape), "dtype": a.dtype}
                                              for a in sig.leaves]
    return {"function": sig.function, "args": leaves}


def signature_from(manifest: dict) -> Signature | None:
    """The saved ``signature``, or what a file saved before it was written says of it (the module docstring)."""
    if "signature" in manifest:
        d = manifest["signature"]
        if d is None:
            return None
        leaves = None if d["args"] is None else tuple(ArgLeaf(a["path"], tuple(a["shape"]), a["dtype"])
                                                      for a in d["args"])
        return Signature(d["function"], leaves)
    source = manifest["spec"].get("source")
    if source == "text":
        return None
    return Signature(manifest["spec"]["title"] if source == "function" else None, None)
