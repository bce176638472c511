"""Small real programs used by the CLI's default run, the tests and the notebooks.

They live inside the package (``workbench/examples/``), so an installed wheel has them:
``hlo-workbench report attention``, ``from workbench import examples; examples.load("mlp")``.

Each module defines ``fn`` (the function to explore) and ``args()`` (example arguments).
"""
from __future__ import annotations

import importlib

NAMES = ("mlp", "attention", "scan", "convnet")


def load(name: str):
    """(fn, args) of one example by name."""
    if name not in NAMES:
        raise KeyError(f"unknown example {name!r}; the examples are {', '.join(NAMES)}")
    mod = importlib.import_module(f"{__name__}.{name}")
    return mod.fn, mod.args()
