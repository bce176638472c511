"""Python's cyclic garbage collector, kept out of the way of work that makes many objects.

A process that has imported jax (and a model's libraries) holds a very large heap of tracked objects, and an
automatic collection of the oldest generation walks all of it: on a Diffrax solve's trace ~150 ms, which a
bare ``jax.jit`` lowering of the same program, making fewer survivors, does not trigger.

- ``collector_paused()``: no collection at all, for readers whose objects form no garbage cycles (parsing a
  module's text, laying out a graph): each collection they trigger would find nothing.
- ``full_collections_deferred()``: the young generations are still collected (a trace's short-lived cycles go
  as they would), only a collection of the oldest waits until the block ends; it then comes with a later
  allocation, typically while the worker runs the MLIR passes or XLA compiles without the GIL.

Both are process-wide while they last (the collector has no per-thread switch); nested and concurrent blocks
restore the collector's settings when the last one ends.
"""
from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused", "full_collections_deferred"]

_LOCK = threading.Lock()
_held = {"paused": 0, "deferred": 0}
_saved: dict = {}


@contextmanager
def collector_paused() -> Iterator[None]:
    with _LOCK:
        if _held["paused"] == 0:
            _saved["enabled"] = gc.isenabled()
            gc.disable()
        _held["paused"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _held["paused"] -= 1
            if _held["paused"] == 0 and _saved.pop("enabled"):
                gc.enable()


@contextmanager
def full_collections_deferred() -> Iterator[None]:
    with _LOCK:
        if _held["deferred"] == 0:
            _saved["thresholds"] = gc.get_threshold()
            young, middle, _ = _saved["thresholds"]
            gc.set_threshold(young, middle, 2**30)  # the oldest generation's: collections of the middle one
        _held["deferred"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _held["deferred"] -= 1
            if _held["deferred"] == 0:
                gc.set_threshold(*_saved.pop("thresholds"))
