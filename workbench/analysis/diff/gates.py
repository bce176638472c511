"""Regression gates: a golden exploration against the same program explored now, judged by limits.

``Limits`` says what may change: how much the final modules' op count, flops, bytes and memory may
grow (``max_ops_growth`` ... ``max_memory_growth``: fractions, or strings such as "5%"), how much the
compile time may grow against a bare compile (``max_compile_time_growth``), how much the TPU's bundles may grow
(``max_bundles_growth``: the bundles issued per call, all fusions, where both sides know every loop's trip count,
else each kernel's bundles once; read from both sides' kernels, the golden's as its .hlox kept them -- where a side
has none the row says the limit could not be checked, and fails), whether the final modules
must be the same beyond renaming (``same_final_module``), and whether the numbers are checked against
the golden outputs (``numbers``). ``judge`` reads a ``Comparison`` (golden as ``a``, now as ``b``) and the
measured parts the facade hands it, and gives a ``Verdict``: one row per limit, ``ok``, a short table.

Before any limit, a check of a function against a golden holds it to the golden's program (``program_row``):
the same function name and the same arguments (their pytree, each leaf's shape and dtype). A golden of
``mm(x: f32[16,16], w: f32[16,8])`` fails a check of ``lambda z: jnp.sin(z) * 3`` at ``f32[5,3]`` -- fewer
ops is not an improvement of another program. ``same_program=True`` says the function is the same program
under another name or signature: the differences are then listed and allowed. A golden saved before
signatures were recorded holds its function's name and its module's flattened arguments only: those are
compared, and the row says the arguments' tree was not.

The growth limits default to 0%: with no limit given, a check passes when nothing grew. "none" (or
None) turns one off. Growth is ``now / golden - 1``; from 0 to anything more it is infinite.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from ...errors import ArgumentError, UnknownNameError
from ...stages import Signature
from .explorations import FINAL_MEASURES, Comparison, growth, growth_text, number_text

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Limits", "Verdict", "GateRow", "judge", "parse_growth", "program_row", "GROWTH_LIMITS"]

# each growth limit and the final measures it holds to
GROWTH_LIMITS = {"max_ops_growth": ("ops", "xla_ops"), "max_flops_growth": ("flops",),
                 "max_bytes_growth": ("bytes",), "max_memory_growth": ("memory",)}


def parse_growth(value: Any, name: str) -> float | None:
    """A growth limit as a fraction: 0.05 and "5%" and "0.05" are five percent; None and "none" are no
    limit. A bare number of 1 or more written as a string ("5") is refused as ambiguous."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "off", "")):
        return None
    if isinstance(value, bool):
        raise ArgumentError(f"{name}: a growth is a fraction (0.05) or a percent ('5%'), not {value!r}")
    if isinstance(value, (int, float)):
        out = float(value)
    else:
        text = str(value).strip()
        try:
            out = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            raise ArgumentError(f"{name}: {value!r} is not a growth; write a percent ('5%') or a fraction "
                                "('0.05'), or 'none'") from None
        if not text.endswith("%") and out >= 1:
            raise ArgumentError(f"{name}: {value!r} is ambiguous; write '{text}%' for {text} percent, or a fraction "
                                f"such as '{out / 100:g}'")
    if math.isnan(out) or out < 0:
        raise ArgumentError(f"{name}: a growth limit is 0 or more, not {value!r}")
    return out


@dataclass(frozen=True)
class Limits:
    """What a check allows (see the module docstring); ``Limits.of(**kwargs)`` parses and names a wrong key."""

    max_ops_growth: float | None = 0.0
    max_flops_growth: float | None = 0.0
    max_bytes_growth: float | None = 0.0
    max_memory_growth: float | None = 0.0
    max_compile_time_growth: float | None = None
    max_bundles_growth: float | None = None  # the TPU's bundles, from both sides' kernels (off by default)
    same_final_module: bool = False
    numbers: bool = False
    same_program: bool = False  # the function checked is the golden's program under another name or signature

    @classmethod
    def of(cls, **kwargs) -> "Limits":
        known = [f.name for f in fields(cls)]
        values = {}
        for key, value in kwargs.items():
            if key not in known:
                raise UnknownNameError("limit", key, known)
            if key in ("same_final_module", "numbers", "same_program"):
                values[key] = bool(value)
            else:
                values[key] = parse_growth(value, key)
        return cls(**values)


@dataclass(frozen=True)
class GateRow:
    """One limit judged: ``what`` (a measure, "final module", "numbers", "compile time"), the ``golden``
    and ``now`` values (numbers or words), their ``change`` in words, the ``limit`` in words, ``ok``, and
    a ``note``."""

    what: str
    golden: Any
    now: Any
    change: str
    limit: str
    ok: bool
    note: str = ""


@dataclass(frozen=True)
class Verdict:
    """A check's result: its rows, the comparison it read, and ``ok`` (no row failed)."""

    rows: tuple[GateRow, ...]
    comparison: Comparison
    limits: Limits
    html: str = ""  # where the HTML diff was written, if it was
    notes: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    @property
    def failed(self) -> list[GateRow]:
        return [r for r in self.rows if not r.ok]

    def table(self) -> "pd.DataFrame":
        import pandas as pd

        return pd.DataFrame([{f.name: getattr(r, f.name) for f in fields(r)} for r in self.rows])

    def lines(self) -> list[str]:
        """The verdict as a short fixed-width table, its notes and first difference under it."""
        head = ("", "what", "golden", "now", "change", "limit")
        body = [("ok" if r.ok else "FAIL", r.what, number_text(r.golden), number_text(r.now), r.change, r.limit)
                for r in self.rows]
        widths = [max(len(str(row[k])) for row in [head] + body) for k in range(len(head))]
        out = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [head] + body]
        out += [f"  {r.what}: {r.note}" for r in self.rows if r.note]
        c = self.comparison
        out += c.made_by_lines()  # the versions (what a CI run after an upgrade wants to read first), the settings
        first = c.first_difference
        out.append("first difference: " + (first.words(c.labels) if first else "none"))
        out += list(self.notes)
        out.append(("PASSED" if self.ok else f"FAILED ({len(self.failed)} of {len(self.rows)} limits)")
                   + (f"; HTML diff: {self.html}" if self.html else ""))
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return f"Verdict({'passed' if self.ok else 'failed: ' + ', '.join(r.what for r in self.failed)})"

    def __bool__(self) -> bool:
        return self.ok


def _growth_rows(comparison: Comparison, limits: Limits) -> list[GateRow]:
    words = dict(FINAL_MEASURES)
    out = []
    for key, measures in GROWTH_LIMITS.items():
        allowed = getattr(limits, key)
        if allowed is None:
            continue
        for m in measures:
            golden, now = comparison.final.get(m, (None, None))
            g = growth(golden, now)
            if g is None:
                if golden is None and now is None:  # said, not passed over in silence: the limit was asked for
                    out.append(GateRow(m, None, None, "-", f"≤ {growth_text(allowed)}", True,
                                       f"{words[m]}: known on neither side, not judged"))
                    continue
                out.append(GateRow(m, golden, now, "-", f"≤ {growth_text(allowed)}", False,
                                   f"{words[m]}: missing on the {'golden' if golden is None else 'new'} side"))
                continue
            out.append(GateRow(m, golden, now, growth_text(g), f"≤ {growth_text(allowed)}", g <= allowed + 1e-12))
    return out


def _aval_words(shape, dtype) -> str:
    return f"{dtype}[{','.join(map(str, shape))}]"


def _short(sig: Signature | None, flat: tuple[tuple[tuple[int, ...], str], ...]) -> str:
    """A signature in a table cell: ``mm(float32[16,16], float32[16,8])``, cut at 48 characters."""
    name = "(text)" if sig is None or sig.function is None else sig.function
    if sig is not None and sig.leaves is not None:
        args = [leaf.words() for leaf in sig.leaves]
    else:  # the module's flattened arguments: all an old golden or a text recorded
        args = [_aval_words(shape, dtype) for shape, dtype in flat]
    text = f"{name}({', '.join(args)})"
    return text if len(text) <= 48 else text[:47] + "…"


def program_row(golden: Signature | None, now: Signature,
                golden_flat: tuple[tuple[tuple[int, ...], str], ...],
                now_flat: tuple[tuple[tuple[int, ...], str], ...], same_program: bool = False) -> GateRow:
    """The "program" row: whether the function checked now (``now``) is the golden's program (``golden``, None
    when the golden's program was given as text): its name and its arguments' tree, shapes and dtypes. What
    the golden did not record (its tree, for a file saved before signatures were; a name, for a text) is not
    compared and the note says so; its module's flattened arguments (``golden_flat``, ``now_flat``: shape
    and dtype of each, in the module's order) are compared in its place. ``same_program``: the differences
    are allowed, and listed."""
    said = golden.differences(now) if golden is not None else []
    unchecked = []
    if golden is None or golden.leaves is None:
        if len(golden_flat) != len(now_flat):
            said.append(f"the golden's module takes {len(golden_flat)} arguments, the program's now {len(now_flat)}")
        else:
            for i, (g, n) in enumerate(zip(golden_flat, now_flat)):
                if (tuple(g[0]), str(g[1])) != (tuple(n[0]), str(n[1])):
                    said.append(f"the module's argument {i} is {_aval_words(*g)} in the golden and "
                                f"{_aval_words(*n)} now")
                    break
        if golden is None:
            unchecked.append("the golden's program was given as text: no function name or arguments' tree to "
                             "compare; its module's arguments were compared")
        else:
            unchecked.append("the golden was saved before goldens recorded their arguments' tree: the tree was not "
                             "compared, the module's flattened shapes and dtypes were"
                             + ("" if golden.function is not None else ", and no function name was recorded"))
    differs = bool(said)
    if differs and same_program:
        limit, ok = "any (same_program=True)", True
        said = ["allowed by same_program=True: " + "; ".join(said)]
    else:
        limit, ok = "the golden's function and arguments", not said
        if differs:
            said = ["; ".join(said) + " -- another program; if it is the golden's program under another name or "
                    "signature, say so with same_program=True (--same-program)"]
    return GateRow("program", _short(golden, golden_flat), _short(now, now_flat), "differs" if differs else "same",
                   limit, ok, "; ".join(said + unchecked))


def judge(comparison: Comparison, limits: Limits, numbers: tuple[bool, str] | None = None,
          compile_time: tuple[float, float, str] | None = None, notes: tuple[str, ...] = (),
          program: GateRow | None = None) -> Verdict:
    """The Verdict of ``comparison`` (golden as ``a``) under ``limits``. ``numbers``: (passed, words) of the
    check against the golden outputs, when ``limits.numbers``; ``compile_time``: (golden ratio, ratio now,
    words), the compile time over a bare compile's, when ``limits.max_compile_time_growth`` is set;
    ``program``: the ``program_row`` of a function checked against the golden, first in the table."""
    rows = ([program] if program is not None else []) + _growth_rows(comparison, limits)
    if limits.same_final_module:
        same = comparison.same_final_module()
        changed = [m for m in (comparison.mlir, comparison.xla) if m is not None and m.changed]
        note = "; ".join(m.words() for m in changed) if same is not None else "no final module to compare (a stage failed)"
        rows.append(GateRow("final module", "golden", "same" if same else "differs" if same is not None else "-",
                            ", ".join(m.what for m in changed) or "-", "the same beyond renaming", bool(same), note))
    if limits.numbers:
        passed, words = numbers if numbers is not None else (False, "not checked")
        rows.append(GateRow("numbers", "golden outputs", "this run", "-", "within the check's noise", passed, words))
    if limits.max_compile_time_growth is not None:
        allowed = f"≤ {growth_text(limits.max_compile_time_growth)}"
        if compile_time is None:
            rows.append(GateRow("compile time", None, None, "-", allowed, False, "not measured"))
        else:
            golden, now, words = compile_time
            g = growth(golden, now)
            rows.append(GateRow("compile time / bare", golden, now, growth_text(g), allowed,
                                g is not None and g <= limits.max_compile_time_growth + 1e-12, words))
    if limits.max_bundles_growth is not None:
        rows.append(_bundles_row(comparison, limits.max_bundles_growth))
    return Verdict(tuple(rows), comparison, limits, notes=tuple(notes))


def _bundles_row(comparison: Comparison, limit: float) -> GateRow:
    """The bundles limit (see the module docstring), from the comparison's KernelsChange."""
    allowed = f"≤ {growth_text(limit)}"
    change = comparison.kernels_change
    if change is None:
        a, b = comparison.labels
        why = comparison.kernels_note or (f"neither {a} nor {b} has the TPU's kernels computed or saved "
                                          "(ex.backend() on the TPU, or a .hlox saved after it)")
        return GateRow("bundles", None, None, "not checked", allowed, False, f"the limit could not be checked: {why}")
    ta, tb = change.totals
    if ta.issued is not None and tb.issued is not None:
        what, golden, now, how = "bundles issued", ta.issued, tb.issued, "bundles issued per call, all fusions"
    else:
        what, golden, now = "bundles", ta.bundles, tb.bundles
        how = "each kernel's bundles once (a loop's trip count is unknown on a side: not the bundles issued)"
    g = growth(golden, now)
    words = change.words()
    return GateRow(what, golden, now, growth_text(g), allowed, g is not None and g <= limit + 1e-12,
                   f"{how}; {words}")
