"""The TPU v5e recordings the tests read on any machine (``bench/tpu_backend.py --record`` made them): for a bf16 MLP,
the bf16 attention example and the corpus's Flax NNX step, the saved exploration (``<name>.hlox``, with the kernel
table it kept) and libtpu's LLO dump (``<name>.llo.tar.xz``: every kernel's final bundles, slot usage and fingerprints,
the top-level program's files, the LLO after each pass of the two largest kernels)."""
from __future__ import annotations

import tarfile
from pathlib import Path

LLO = Path(__file__).resolve().parent / "fixtures" / "tpu" / "llo"
RECORDED = ("mlp_bf16", "attention_bf16", "nnx_transformer")


def extract_llo(name: str, into: Path) -> Path:
    """The recorded LLO dump of ``name``, extracted into a new folder ``into/name``; its path."""
    folder = Path(into) / name
    folder.mkdir(parents=True)
    with tarfile.open(LLO / f"{name}.llo.tar.xz") as tf:
        tf.extractall(folder, filter="data")
    return folder
