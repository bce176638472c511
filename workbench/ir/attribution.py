"""Which line an op counts at when it has no location of its own, and which of its frames is the user's own.

**Inferred lines.** Passes make ops without a location (MLIR's folder hoists the constants it makes with
``loc(unknown)``; XLA's passes add copies, converts, broadcasts and tuples without metadata), and JAX writes
the constants it hoists to a function's top at the jit's own call, which is no line of the user's.
``attribute`` gives such an op the origins of the nearest op in the program's dataflow that has its own:
preferring what it holds (a fusion: its fused instructions), then its users, then its operands, then the op
that holds it (a region's op: its while; a fused instruction: its fusion) -- by rounds, so an op takes the
line of its nearest neighbour with one. Each op is settled once and looks at its own neighbours once:
linear in the module. An inferred line is marked (``how``), never an op's own.

**The user's own frame.** An origin's innermost frame is often a library's (``flax/linen/linear.py``,
``optax/_src/transform.py``); ``own_frame`` walks its frames outwards to the first that is none of these:
an installed package (site-packages, dist-packages, or any folder on ``sys.path`` that pip installed into:
one holding ``*.dist-info``, as ``pip install --target`` or a staged PYTHONPATH makes), the Python standard
library, jax or jaxlib itself, or a folder the caller names (the workbench's own). None when every frame is
one of them.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass

from .origins import Dataflow, Frame, Origin

__all__ = ["FROM_INSIDE", "FROM_OPERAND", "FROM_OUTSIDE", "FROM_USER", "NOT_FOUND", "OWN", "Attribution",
           "attribute", "is_library", "own_frame", "short_path"]

OWN = "own"
FROM_INSIDE = "inferred from the ops inside it"
FROM_USER = "inferred from a user"
FROM_OPERAND = "inferred from an operand"
FROM_OUTSIDE = "inferred from the op around it"
NOT_FOUND = "none"


@dataclass(frozen=True)
class Attribution:
    """Where op ``i`` of a program counts: ``source`` the op whose own origins it takes (itself when
    ``how`` is ``OWN``; -1 when ``how`` is ``NOT_FOUND``), ``via`` the neighbour it took them from (the
    first step of the way; -1 for its own)."""

    source: int
    how: str
    via: int = -1


def attribute(flow: Dataflow, known: Sequence[bool], takes_part: Sequence[bool] | None = None,
              counter: list | None = None) -> tuple[Attribution, ...]:
    """Each op's ``Attribution`` in a program whose ops are joined by ``flow``; ``known[i]``: op ``i`` has a
    line of its own. Ops with ``takes_part[i]`` False (a function's parameters, its return) keep a line of their
    own but neither take one nor pass one on: an argument used by two lines is no evidence that one of them made the other.
    ``counter``, when given, gets one item appended per neighbour looked at (what a test counts)."""
    n = len(known)
    part = list(takes_part) if takes_part is not None else [True] * n
    users: list[list[int]] = [[] for _ in range(n)]
    inside: list[list[int]] = [[] for _ in range(n)]
    for i, ops in enumerate(flow.operands):
        for j in ops:
            users[j].append(i)
    for i, p in enumerate(flow.parent):
        if p >= 0:
            inside[p].append(i)
    source = [i if known[i] else -1 for i in range(n)]
    how = [OWN if known[i] else NOT_FOUND for i in range(n)]
    via = [-1] * n
    # the round an op got its line in (-2: its own, but it passes none on)
    settled = [(0 if part[i] else -2) if known[i] else -1 for i in range(n)]
    frontier = [i for i in range(n) if settled[i] == 0]
    step = 0
    while frontier:
        step += 1
        candidates: list[int] = []
        for i in frontier:
            around = (flow.parent[i],) if flow.parent[i] >= 0 else ()
            for near in (users[i], flow.operands[i], around, inside[i]):
                if counter is not None:
                    counter.append(len(near))
                for j in near:
                    if settled[j] < 0 and part[j]:
                        settled[j] = step  # a candidate of this round, looked at once
                        candidates.append(j)
        for c in candidates:
            around = (flow.parent[c],) if flow.parent[c] >= 0 else ()
            for word, near in ((FROM_INSIDE, inside[c]), (FROM_USER, users[c]), (FROM_OPERAND, flow.operands[c]),
                               (FROM_OUTSIDE, around)):
                if counter is not None:
                    counter.append(len(near))
                j = next((j for j in near if 0 <= settled[j] < step), -1)
                if j >= 0:
                    source[c], how[c], via[c] = source[j], word, j
                    break
        frontier = candidates
    return tuple(Attribution(source[i], how[i], via[i]) for i in range(n))


# -- the user's own frame ------------------------------------------------------------------------------------
@functools.cache
def _library_dirs() -> tuple[str, ...]:
    dirs = set()
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(os.path.realpath(path) + os.sep)
            dirs.add(path.rstrip(os.sep) + os.sep)
    for name in ("jax", "jaxlib"):  # jax itself, wherever it is installed (an editable checkout too)
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        for folder in (spec.submodule_search_locations or []) if spec else []:
            dirs.add(os.path.realpath(folder) + os.sep)
            dirs.add(folder.rstrip(os.sep) + os.sep)
    return tuple(sorted(dirs))


_INSTALL_MARKERS = ("/site-packages/", "/dist-packages/")


@functools.lru_cache(maxsize=8)
def _install_dirs(paths: tuple[str, ...]) -> tuple[str, ...]:
    """The folders of ``paths`` (``sys.path``) that packages were installed into: those holding a
    ``*.dist-info`` folder. Longest first, so a nested one wins. Each folder is listed once per ``sys.path``."""
    found = set()
    for folder in paths:
        if not folder or not os.path.isdir(folder):
            continue
        try:
            with os.scandir(folder) as entries:
                installed = any(e.name.endswith(".dist-info") for e in entries)
        except OSError:
            continue
        if installed:
            found.add(folder.rstrip(os.sep) + os.sep)
            found.add(os.path.realpath(folder).rstrip(os.sep) + os.sep)
    return tuple(sorted(found, key=len, reverse=True))


def is_library(path: str) -> bool:
    """Whether a frame's file is a library's, not the user's: in an installed package (site-packages,
    dist-packages, a folder on ``sys.path`` pip installed into), the Python standard library (``<frozen ...>``
    modules too), or jax / jaxlib."""
    if any(m in path for m in _INSTALL_MARKERS) or path.startswith("<frozen "):
        return True
    return (path.startswith(_library_dirs()) or path.startswith(_install_dirs(tuple(sys.path)))
            or bool(_installed_here(path)))


@functools.lru_cache(maxsize=4096)
def _installed_here(path: str) -> str:
    """Where a file of another machine (a saved exploration's, a recording's) is a package installed here: the
    path from its package's folder on (``flax/nnx/nn/linear.py`` of ``/tmp/site/flax/nnx/nn/linear.py``) when
    that file exists in one of this environment's install folders, else ""."""
    parts = path.split(os.sep)
    for k in range(1, len(parts) - 1):
        rest = os.sep.join(parts[k:])
        for folder in _install_dirs(tuple(sys.path)):
            if os.path.isfile(folder + rest) and os.path.isfile(os.path.join(folder, parts[k], "__init__.py")):
                return rest
    return ""


def short_path(path: str) -> str:
    """A frame's file as a reader knows it: an installed package's from its package's folder on
    (``optax/_src/transform.py``), any other as it is."""
    for marker in _INSTALL_MARKERS:
        if marker in path:
            return path.rsplit(marker, 1)[1]
    for folder in _install_dirs(tuple(sys.path)):
        if path.startswith(folder):
            return path[len(folder):]
    return _installed_here(path) or path


def own_frame(origin: Origin, skip: tuple[str, ...] = (), keep: tuple[str, ...] = ()) -> Frame | None:
    """The innermost frame of ``origin`` that is the user's own: under one of ``keep`` (where a tool is
    installed too: its examples), or neither a library's (``is_library``) nor under one of ``skip``. None when
    every frame is one of those."""
    for f in origin.frames:
        if f.file.startswith(keep):
            return f
        if is_library(f.file) or f.file.startswith(skip):
            continue
        return f
    return None
