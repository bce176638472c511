"""Structural diff between two versions of a compiler IR module.

Reads MLIR text (StableHLO and friends, as printed by jax and Enzyme-JaX) and XLA HLO text (as
printed by ``Compiled.as_text()`` or ``compiler_ir('hlo').as_hlo_text()``). It is meant for reading
what a pass did: locations and value names are noise, ops are the signal.

Normalization (:func:`normalize`; ``read_mlir.py`` and ``read_hlo.py`` read a text into the
``Module`` of ``model.py``)
    Drops MLIR locations (``loc(...)`` anywhere, ``#loc... = ...`` alias lines:
    ``ir.text.strip_locations``), HLO ``metadata={...}`` and the debug-info sections it points into
    (``FileNames`` ... ``StackFrames``: ``ir.hlo.strip_debug_info``), the visibility keyword of
    ``func.func`` (Enzyme's pass driver makes ``@main`` private as a side effect of running any
    pipeline, so keeping it would put a false change into every diff), trailing whitespace and blank
    lines. HLO computation headers are reduced to ``[ENTRY] %name {`` (the signature repeats the
    parameter instructions and the root type, and ``as_hlo_text()`` does not print it) and every HLO
    name gets the ``%`` sigil (which that printer leaves out). Values are then renamed per function
    / HLO computation in order of definition: MLIR op results ``%0, %1, ...`` (a result group keeps
    its ``:2`` and ``#1`` suffixes), function, block and region arguments ``%arg0, ...``; HLO
    instructions ``%<opcode>.<n>``; HLO computations ``%<base>.<n>`` (``fused_computation.3`` ->
    ``fused_computation.0`` if it comes first). Symbols (``@main``) are kept. A pass that only
    renames or renumbers values normalizes to the same lines.

Alignment (``align.py``)
    Positional names are stable only until the first inserted or deleted op; after that every later
    value is renumbered. So lines are not aligned by their text but in three rounds of keys that do
    not depend on names, each round working only inside the gaps the previous one left:

    1. *content key* -- a hash of the line in which each operand is replaced by the content key of
       its defining op (a Merkle hash over the use-def graph). It does not depend on names or on
       position, so removing ``%3`` leaves the keys of ``%4 .. %100`` alone. Aligned with patience
       diff (anchors on keys that are unique in both ranges, recursing between them): ops that a
       pass left alone, with inputs it left alone, anchor the alignment.
    2. *mapped key* -- the line with each operand named by the value correspondence found so far
       (unknown on both sides counts as equal). This re-finds the users of a changed op, whose
       content keys all changed, and chooses between equal-looking candidates (two ``x*y`` before
       ``cse``) by who uses them. Patience, then Myers' O(ND) diff.
    3. *template* -- the line with every value name blanked. Patience, then Myers.

    Every aligned pair of lines pairs up the values they define, and in rounds 1 and 2 also the
    values they use (their operands are equal in content, resp. consistent), giving a one-to-one map
    from after-values to before-values within paired functions (paired by where most of their
    unique content keys went). Work proceeds top down, so a value is usually paired by its
    definition before its users are looked at, and a pair of lines whose definitions contradict
    the map is not aligned. Myers gives up past a few hundred edits in one gap, leaving it to the
    next round or to delete + insert, so a rewrite of a whole module stays fast.

Naming and comparison (``compare.py``; the result, ``Diff``, and its views in ``result.py``)
    The after module is then printed with each value named after its before counterpart; values
    without one get fresh numbers past the before module's. So ``Diff.before`` is ``normalize()`` of
    the before text and ``Diff.after`` is the after text normalized *onto the before names*. Aligned
    lines whose text differs are changed ("replace"), typically a user that now reads another
    value; that is the only ripple a removed op leaves.

Moves
    Unaligned lines are paired first by content key -- the operand-name-insensitive key: an op that
    moved is still the same op on the same inputs, although renumbering changed every name in its
    line -- which also pairs the values they define, and then by exact printed text. A pair whose
    printed lines are equal is reported as a move (kind ``"move"``), not as a delete plus an insert.
    Lines with no identifier in them (a bare ``}``) are never moves.

Speed
    A 20,000-line module is read in bulk (``read_mlir.py``: one regex pass over the whole text,
    definitions decided once per distinct line format, value ids from one dict per function), so
    that only the content keys take a Python loop over the lines; the last few modules read are
    kept (``normalize.read_module``), since a stage is diffed with the one before and the one after
    it. ``bench/bench_diff.py`` measures a 20,000-line pair against difflib.

What a toggle changed (``changes.py``)
    ``changes_between(before, after)`` (``Exploration.changes_since``) puts two explorations of a
    program side by side: the settings that differ, the stages recomputed and reused, and the diff
    of the final MLIR module and of ``xla:optimized``, as a ``Changes``.

Two explorations of one program (``explorations.py``) and regression gates (``gates.py``)
    ``comparison_of`` (``wb.compare_explorations``) aligns two explorations' stage lists by pass -- two
    versions, two flag sets, two pipelines --, names the first stage whose module differs beyond renaming,
    and gives per-stage op and cost deltas, the final modules' diffs and the versions and settings that
    differ, as a ``Comparison``. ``gates.judge`` holds a golden's Comparison to ``Limits`` (growth of ops,
    flops, bytes, memory and compile time; the same final module; the numbers) and gives a ``Verdict``.
"""

from .changes import Changes, ModuleChange, changes_between
from .compare import diff_texts
from .normalize import normalize, shown_lines
from .result import Change, ChangeKind, Diff

__all__ = ["Change", "ChangeKind", "Changes", "Diff", "ModuleChange", "changes_between", "diff_texts", "normalize",
           "shown_lines"]
