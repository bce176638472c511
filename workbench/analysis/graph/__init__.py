"""Dataflow pictures of one stage: ops as nodes, SSA values as edges, regions as clusters.

``stage_graph(stage, parent)`` returns a ``StageGraph`` (a ``graphviz.Digraph``): notebooks show it as
SVG through the Digraph's own rich display (``_repr_mimebundle_``), and ``.pipe(format="svg")`` renders
it with Debian's ``dot`` -- within ``LAYOUT_SECONDS``; past it ``dot`` is stopped and
``GraphTooLargeError`` says how to draw less (a notebook shows that message instead).

* MLIR / StableHLO stages are parsed with jaxlib's MLIR (``pipeline.exported.readable_module``, which tolerates
  Enzyme-JaX's attributes). Each op is a node labelled with its short name and result types
  (``dot_general`` / ``f32[64,32]``); each use of a value is an edge from the op or argument that
  defines it (``#k`` names the result of a multi-result op). Function arguments and ``return`` are
  nodes of their own. Regions (while cond/body, reduce bodies, case branches) are clusters next to
  their op; when there are several functions each is a cluster, and a ``call`` points to its
  callee's cluster. A ``stablehlo.composite`` (``composite chlo.top_k``) is drawn as a call of
  its ``decomposition`` function, the edge labelled ``decomposition``.
* XLA HLO stages are read by ``workbench.ir.hlo``, one cluster per computation. A fusion's (or
  call's) computation is drawn in place of the instruction, operands flowing into its parameters and
  its ROOT out to the users, as XLA's own graph dumper draws fusions; while cond/body, reduce and
  sort bodies and branches are clusters next to the instruction, with a dashed ``condition`` /
  ``body`` / ``to_apply`` ... edge.
* A callee with more than a few call sites gets no call edges (they would hide the dataflow); the
  caption says so, and each call names its callee.
* Ops that are new or changed relative to ``parent`` are filled with ``CHANGED_FILL``. An op's
  signature is its name, result types, attributes and, for each operand, what defines it (the
  defining op's name and result type, or the argument number); ops whose signature the parent does
  not have (counting multiplicity) are the changed ones. Ops the parent had and this stage lacks
  cannot be drawn; the caption counts them by name.
* Constants bigger than a few elements show their type, never their payload; splats show the value.
* A module with more than ``max_ops`` ops (or more than ``DRAW_LIMIT``, whatever ``max_ops`` says) is
  drawn as the top level of a hierarchy, the model's own structure as JAX's name stack records it
  (``block_0/attn/...``): one box per group with its op count, edges between groups counting the
  values that cross, small groups and ops outside any group drawn as ops. ``stage_graph(..., group="block_0/attn")`` draws one group's level, with ports for
  the values that come from and go outside it. ``stage_level`` is the same level as values (boxes,
  links, counts); ``scopes`` says how ops are grouped, ``levels`` what a level promises. Each group
  box's SVG element has class ``GROUP_CLASS`` and id ``GROUP_ID`` + its path, which the notebook's
  graph view opens on a click.

* Op counts, in the caption and per group, come from ``workbench.ir.ops`` and the drawn model; a
  level's boxes add up to the stage's count.

The picture is for reading; it promises no particular layout. The modules: ``model`` (the drawn
values), ``mlir`` and ``hlo`` (reading a stage into them), ``scopes`` and ``levels`` (the hierarchy
and one level of it), ``render`` (comparing and drawing).
"""
from __future__ import annotations

from ...errors import GraphUnavailableError
from .render import (CHANGED_FILL, DRAW_LIMIT, GROUP_CLASS, GROUP_ID, LAYOUT_SECONDS, GraphTooLargeError, StageGraph,
                     stage_graph, stage_level)
from .levels import Box, Level, Link

__all__ = ["stage_graph", "stage_level", "CHANGED_FILL", "GROUP_CLASS", "GROUP_ID", "DRAW_LIMIT", "LAYOUT_SECONDS",
           "GraphUnavailableError", "GraphTooLargeError", "StageGraph", "Box", "Level", "Link"]
