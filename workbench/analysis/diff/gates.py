"""Regression gates: a golden exploration against the same program explored now, judged by limits.

``Limits`` says what may change: how much the final modules' op count, flops, bytes and memory may
grow (``max_ops_growth`` ... ``max_memory_growth``: fractions, or strings such as "5%"), how much the
compile time may grow against a bare compile (``max_compile_time_growth``), whether the final modules
must be the same beyond renaming (``same_final_module``), and whether the numbers are checked against
the golden outputs (``numbers``). ``judge`` reads a ``Comparison`` (golden as ``a``, now as ``b``) and the
measured parts the facade hands it, and gives a ``Verdict``: one row per limit, ``ok``, a short table.

The growth limits default to 0%: with no limit given, a check passes when nothing grew. "none" (or
None) turns one off. Growth is ``now / golden - 1``; from 0 to anything more it is infinite.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from ...errors import ArgumentError, UnknownNameError
from .explorations import FINAL_MEASURES, Comparison, growth, growth_text, number_text

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Limits", "Verdict", "GateRow", "judge", "parse_growth", "GROWTH_LIMITS"]

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
    same_final_module: bool = False
    numbers: bool = False

    @classmethod
    def of(cls, **kwargs) -> "Limits":
        known = [f.name for f in fields(cls)]
        values = {}
        for key, value in kwargs.items():
            if key not in known:
                raise UnknownNameError("limit", key, known)
            if key in ("same_final_module", "numbers"):
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


def judge(comparison: Comparison, limits: Limits, numbers: tuple[bool, str] | None = None,
          compile_time: tuple[float, float, str] | None = None, notes: tuple[str, ...] = ()) -> Verdict:
    """The Verdict of ``comparison`` (golden as ``a``) under ``limits``. ``numbers``: (passed, words) of the
    check against the golden outputs, when ``limits.numbers``; ``compile_time``: (golden ratio, ratio now,
    words), the compile time over a bare compile's, when ``limits.max_compile_time_growth`` is set."""
    rows = _growth_rows(comparison, limits)
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
    return Verdict(tuple(rows), comparison, limits, notes=tuple(notes))
