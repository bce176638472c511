"""Where the bytes go: the peak of XLA's schedule, what is live at it, and which of the user's lines put it there.

Everything here is read from what XLA itself wrote for the compile of ``xla:optimized`` (``ir.buffers``): the
buffer assignment (each value's bytes, allocation, memory space, shape with its tiled layout) and the live ranges
(the flattened schedule and each value's span of it). Nothing is modelled:

* the live bytes at each position of the schedule are the sizes of the values live there (one pass over the
  ranges, a difference array), per memory space (``color``: 0 the device's main memory, HBM on a TPU; 1 the
  TPU's VMEM), and the peak is where they are largest: on the CPU it is the peak XLA's live-range dump names,
  to the byte;
* each value comes from an HLO instruction, whose metadata gives the user's line (``provenance.located_ops``,
  the user's own frame first, as every other view) and its counterparts in the last MLIR stage (the ops that
  share its source position);
* XLA's ``memory_analysis()`` (argument, output, temporary, aliased bytes) is kept beside, and ``reported()``
  says how the two totals differ and why.

``Memory`` is a value; tables are pandas DataFrames made on demand.
"""
from __future__ import annotations

import math
from collections import Counter
from functools import cached_property
from typing import TYPE_CHECKING, Any, Sequence

from ...errors import WorkbenchError
from ...ir.buffers import (Allocation, BufferValue, LiveRange, input_output_alias, read_buffer_assignment,
                           read_live_range, read_usage_report)
from ...ir.hlo import arrays, read_hlo, tuple_shapes, without_layout
from ...stages import Stage
from ..provenance import LIBRARY_ONLY, NO_LOCATION, located_ops, short_path
from .change import MemoryChange
from ..numbers import human_bytes
from .placed import Placed, handed_on, layout_of, one_per_slot, padding

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Memory", "BUFFER_COLUMNS", "LINE_COLUMNS", "memory_of", "space_name", "user_line"]

BUFFER_COLUMNS = ("buffer", "bytes", "kind", "space", "shape", "dtype", "layout", "padding_bytes", "instruction",
                  "opcode", "computation", "line", "function", "library_line", "argument", "mlir", "live_from",
                  "live_to", "allocation", "offset")
LINE_COLUMNS = ("line", "bytes", "share", "buffers", "kinds", "function", "largest")
_SPACES = {"tpu": {0: "HBM", 1: "VMEM", 2: "SMEM"}, "gpu": {0: "device memory"}, "cpu": {0: "host memory"}}


def space_name(platform: str, color: int) -> str:
    """A memory space as users call it: ``HBM`` and ``VMEM`` on a TPU, ``host memory`` on the CPU, else ``space N``."""
    return _SPACES.get(platform, {}).get(color, f"memory space {color}")


class Memory:
    """The memory of one XLA compile (``Exploration.memory()``): ``peak_bytes`` of the main memory space and
    ``peak_at`` (its position in the schedule, ``peak_instruction``, ``peak_computation``); ``timeline()``,
    ``at_peak()``, ``by_line()``, ``donation()``, ``spaces()``, ``rematerialization()``, ``reported()``;
    ``compare(other)`` says what a change did to the peak. ``space``: the memory space the tables describe
    (0, the main one, by default; a TPU's VMEM is 1)."""

    def __init__(self, optimized: Stage, assignment: str, live_range: str, platform: str = "cpu",
                 analysis: dict | None = None, mlir: Stage | None = None, donated: Sequence[int] = (),
                 xla_stages: Sequence[Stage] = (), space: int = 0, usage_report: str = "",
                 xla_passes: Sequence[str] = ()):
        self.stage = optimized
        self.xla_passes = tuple(xla_passes)  # every HLO pass the compile's dumps name
        self.usage = read_usage_report(usage_report)  # {color: total bytes} of XLA's memory-usage report
        self.platform = platform
        self.analysis = dict(analysis or {})
        self.mlir = mlir
        self.donated = tuple(donated)
        self.space = space
        self._xla_stages = tuple(xla_stages)
        self.allocations = read_buffer_assignment(assignment)
        self.live: LiveRange = read_live_range(live_range)
        if not self.allocations:
            raise WorkbenchError("XLA's buffer assignment holds no allocation: there is nothing to read memory from")
        if not self.live.sequence:
            raise WorkbenchError("XLA's live-range dump holds no schedule: XLA wrote no live ranges for this compile")
        by_key: dict[str, tuple[BufferValue, Allocation]] = {}
        for a in self.allocations:
            for v in a.values:
                by_key.setdefault(v.key, (v, a))
        placed = []
        for key, (start, end) in self.live.ranges.items():
            found = by_key.get(key)
            if found is not None:
                placed.append(Placed(found[0], found[1], start, end))
        self._placed = handed_on(one_per_slot(placed))
        # the work done, in steps a test counts: lines read, values placed, positions summed, rows made
        self.work = assignment.count("\n") + live_range.count("\n") + len(self._placed) + len(self.live.sequence)
        self._rows_at: dict[tuple[int, int], list[dict]] = {}  # live_at's rows by (position, space)

    # -- the schedule -------------------------------------------------------------------------------------
    @cached_property
    def _live(self) -> dict[int, list[int]]:
        """Live bytes at each position of the schedule, per memory space: one pass over the ranges."""
        n = max(len(self.live.sequence), max((p.end for p in self._placed), default=0) + 1)
        deltas: dict[int, list[int]] = {}
        for p in self._placed:
            d = deltas.setdefault(p.allocation.color, [0] * (n + 1))
            d[p.start] += p.value.size
            d[p.end] -= p.handed_on
            d[p.end + 1] -= p.value.size - p.handed_on
        out = {}
        for color, d in deltas.items():
            total, live = 0, []
            for k in range(n):
                total += d[k]
                live.append(total)
            out[color] = live
        return out

    def _series(self, space: int | None = None) -> list[int]:
        space = self.space if space is None else space
        return self._live.get(space, [0] * len(self.live.sequence))

    @property
    def peak_at(self) -> int:
        """The position in the schedule where the live bytes of the main memory space are largest (the first such)."""
        live = self._series()
        return max(range(len(live)), key=live.__getitem__) if live else 0

    @property
    def peak_bytes(self) -> int:
        """The most bytes live at once in the main memory space (``space``)."""
        live = self._series()
        return live[self.peak_at] if live else 0

    @property
    def peak_instruction(self) -> str:
        """The instruction the schedule runs at the peak."""
        seq = self.live.sequence
        return seq[self.peak_at] if self.peak_at < len(seq) else ""

    @cached_property
    def _module(self):
        return read_hlo(self.stage.text)

    @cached_property
    def _instructions(self) -> dict[str, tuple[str, Any]]:
        """{instruction name: (its computation, the Instruction)} of the optimized module: one pass."""
        return {ins.name: (c.name, ins) for c in self._module.computations for ins in c.instructions}

    @property
    def peak_computation(self) -> str:
        found = self._instructions.get(self.peak_instruction)
        return found[0] if found else ""

    @cached_property
    def _located(self) -> dict[str, Any]:
        """{HLO instruction name: its Located} (the user's line and the library's) of the optimized module."""
        out = {}
        for x in located_ops(self.stage, self.mlir):
            if x.op.result and not x.op.fusion:
                out.setdefault(x.op.result.lstrip("%"), x)
        return out

    @cached_property
    def _callers(self) -> dict[str, str]:
        """{computation: the instruction that calls it} (a loop's body and condition, a call's, a branch's)."""
        out: dict[str, str] = {}
        for c in self._module.calls:
            out.setdefault(c.callee, c.instruction.name)
        return out

    def _located_or_caller(self, name: str, computation: str):
        """The Located of instruction ``name``, or where it has no line (a loop body's parameter, a tuple XLA
        made), that of the instruction calling its computation, and so on up (a loop's carried value is the
        loop's line)."""
        x = self._located.get(name)
        seen = 0
        while (x is None or x.frame is None) and computation in self._callers and seen < 16:
            caller = self._callers[computation]
            computation = self._instructions.get(caller, ("",))[0]
            x, seen = self._located.get(caller) or x, seen + 1
        return x

    @cached_property
    def _mlir_by_origin(self) -> dict[tuple, list[str]]:
        """{origin key: results of the last MLIR stage's ops with that source position}."""
        out: dict[tuple, list[str]] = {}
        if self.mlir is None:
            return out
        for x in located_ops(self.mlir):
            for g in x.op.origins:
                results = out.setdefault(g.key, [])
                if x.op.result and len(results) < 8 and x.op.result not in results:
                    results.append(x.op.result)
        return out

    # -- tables ---------------------------------------------------------------------------------------------
    def _row(self, p: Placed, position: int | None = None) -> dict:
        self.work += 1
        v, a = p.value, p.allocation
        name = v.instruction
        comp, ins = self._instructions.get(name, ("", None))
        x = self._located_or_caller(name, comp)
        frame, yours = (x.frame, x.yours) if x is not None else (None, None)
        argument = ""
        if a.parameter is not None and ins is not None and ins.opcode == "parameter" and comp == self._entry_name:
            argument = self._argument_name(a.parameter)
        line = self._line_of(a, frame, yours, argument)
        shape = without_layout(v.shape)
        arr = arrays(v.shape)
        dtype = arr[0].dtype if len(arr) == 1 and not tuple_shapes(v.shape) else ("tuple" if tuple_shapes(v.shape) else "")
        mlir = []
        if x is not None:
            for g in x.op.origins:
                mlir += [r for r in self._mlir_by_origin.get(g.key, ()) if r not in mlir]
        seq = self.live.sequence
        return {"buffer": v.key, "bytes": v.size if position is None else p.bytes_at(position), "kind": self._kind(a, v), "space": space_name(self.platform, a.color),
                "shape": shape, "dtype": dtype, "layout": layout_of(v.shape), "padding_bytes": padding(v),
                "instruction": name, "opcode": ins.opcode if ins is not None else "", "computation": comp,
                "line": line, "function": yours.function if yours else (frame.function if frame else ""),
                "library_line": f"{short_path(frame.file)}:{frame.line}" if frame is not None and (
                    yours is None or (yours.file, yours.line) != (frame.file, frame.line)) else "",
                "argument": argument, "mlir": ", ".join(mlir[:8]),
                "live_from": seq[p.start] if p.start < len(seq) else "",
                "live_to": seq[p.end] if p.end < len(seq) else "(end)", "allocation": a.index, "offset": v.offset}

    def _kind(self, a: Allocation, v: BufferValue) -> str:
        if a.parameter is not None:
            own = self._instructions.get(v.instruction)
            if own is not None and own[1].opcode == "parameter" and own[0] == self._entry_name:
                return "aliased argument" if a.live_out else "argument"
            return "output in a donated argument's buffer" if a.live_out else "in an argument's buffer"
        return a.kind

    @cached_property
    def _entry_name(self) -> str:
        entry = self._module.entry
        return entry.name if entry is not None else ""

    def _line_of(self, a: Allocation, frame, yours, argument: str) -> str:
        if argument:
            return f"(argument {argument})"
        if a.constant:
            return "(constant)"
        if frame is None:
            return NO_LOCATION
        if yours is None:
            return f"{short_path(frame.file)}:{frame.line} {LIBRARY_ONLY}"
        return f"{yours.file}:{yours.line}"

    @cached_property
    def _parameters(self) -> dict[int, Any]:
        """{parameter number: the entry's parameter instruction}."""
        entry = self._module.entry
        out = {}
        if entry is None:
            return out
        for ins in entry.instructions:
            if ins.opcode == "parameter" and ins.operands.strip().isdigit():
                out[int(ins.operands.strip())] = ins
        return out

    def _argument_name(self, number: int) -> str:
        """An argument as JAX named it in the parameter's metadata (``x``, ``params['w']``), else ``#N``."""
        ins = self._parameters.get(number)
        if ins is not None:
            x = self._located.get(ins.name)
            if x is not None and x.origin is not None and x.origin.name:
                return x.origin.name.replace("\\'", "'").replace('\\"', '"')
        return f"#{number}"

    def _frame(self, rows: list[dict], columns: Sequence[str]) -> "pd.DataFrame":
        import pandas as pd

        return pd.DataFrame(rows, columns=list(columns))

    def live_at(self, position: int, space: int | None = None) -> "pd.DataFrame":
        """Every value live at ``position`` of the schedule in ``space``, largest first (``BUFFER_COLUMNS``)."""
        space = self.space if space is None else space
        rows = self._rows_at.get((position, space))
        if rows is None:
            rows = [self._row(p, position) for p in self._placed
                    if p.allocation.color == space and p.bytes_at(position) > 0]
            rows.sort(key=lambda r: (-r["bytes"], r["buffer"]))
            self._rows_at[(position, space)] = rows
        df = self._frame([dict(r) for r in rows], BUFFER_COLUMNS)
        df.attrs.update(position=position, instruction=self.live.sequence[position]
                        if position < len(self.live.sequence) else "", space=space_name(self.platform, space))
        return df

    def at_peak(self, space: int | None = None) -> "pd.DataFrame":
        """Every buffer live at the peak, largest first: its bytes, kind (argument, aliased argument, output,
        temporary, constant), memory space, shape, dtype, layout, padding bytes (a tiled layout's), the HLO
        instruction that defines it, its computation, the user's line (``library_line``: the library's frame
        beside it), its counterparts in the last MLIR stage, where it is live from and to. Sums to the peak."""
        space = self.space if space is None else space
        live = self._series(space)
        at = max(range(len(live)), key=live.__getitem__) if live else 0
        df = self.live_at(at, space)
        df.attrs.update(peak_bytes=live[at] if live else 0)
        return df

    def by_line(self, space: int | None = None) -> "pd.DataFrame":
        """The bytes live at the peak per user line (arguments and constants as their own rows), largest first:
        ``line, bytes, share, buffers, kinds, function, largest`` (the line's largest buffer). Sums to the peak."""
        peak = self.at_peak(space)
        total = int(peak["bytes"].sum()) if len(peak) else 0
        groups: dict[str, dict] = {}
        for r in peak.to_dict("records"):
            g = groups.setdefault(r["line"], {"line": r["line"], "bytes": 0, "buffers": 0, "kinds": Counter(),
                                              "function": r["function"], "largest": r["buffer"]})
            g["bytes"] += int(r["bytes"])
            g["buffers"] += 1
            g["kinds"][r["kind"]] += 1
        rows = []
        for g in sorted(groups.values(), key=lambda g: (-g["bytes"], g["line"])):
            rows.append({**g, "share": g["bytes"] / total if total else 0.0,
                         "kinds": ", ".join(k for k, _ in g["kinds"].most_common())})
        df = self._frame(rows, LINE_COLUMNS)
        df.attrs.update(peak_bytes=total)
        return df

    def timeline(self, space: int | None = None) -> "pd.DataFrame":
        """Live bytes at each position of the schedule: ``position, instruction, computation, live_bytes``;
        ``attrs["peak_at"]`` and ``attrs["peak_bytes"]``. ``plot()`` draws it."""
        live = self._series(space)
        seq = self.live.sequence
        rows = [{"position": k, "instruction": seq[k] if k < len(seq) else "",
                 "computation": self._instructions.get(seq[k], ("",))[0] if k < len(seq) else "",
                 "live_bytes": b} for k, b in enumerate(live)]
        df = self._frame(rows, ("position", "instruction", "computation", "live_bytes"))
        at = max(range(len(live)), key=live.__getitem__) if live else 0
        df.attrs.update(peak_at=at, peak_bytes=live[at] if live else 0,
                        space=space_name(self.platform, self.space if space is None else space))
        return df

    def plot(self, space: int | None = None, ax=None):
        """The timeline as a step plot with its peak marked (matplotlib); returns the Axes."""
        import matplotlib.pyplot as plt

        df = self.timeline(space)
        if ax is None:
            _, ax = plt.subplots(figsize=(8, 3))
        ax.step(df["position"], df["live_bytes"] / 2**20, where="post")
        at, peak = df.attrs["peak_at"], df.attrs["peak_bytes"]
        ax.axvline(at, color="crimson", linestyle="--", linewidth=1)
        ax.annotate(f"peak {human_bytes(peak)} at {df['instruction'][at] if len(df) else ''}", (at, peak / 2**20),
                    textcoords="offset points", xytext=(6, -12), color="crimson")
        ax.set_xlabel("position in XLA's schedule")
        ax.set_ylabel(f"live MiB ({df.attrs['space']})")
        return ax

    def spaces(self) -> "pd.DataFrame":
        """One row per memory space: its name, the peak of its live bytes, where, and its allocations' bytes."""
        rows = []
        for color in sorted({a.color for a in self.allocations}):
            live = self._live.get(color, [])
            at = max(range(len(live)), key=live.__getitem__) if live else 0
            rows.append({"space": space_name(self.platform, color), "color": color,
                         "peak_bytes": live[at] if live else 0,
                         "peak_instruction": self.live.sequence[at] if live and at < len(self.live.sequence) else "",
                         "allocated_bytes": sum(a.size for a in self.allocations if a.color == color),
                         "padding_bytes": sum(padding(p.value) for p in self._placed if p.allocation.color == color)})
        return self._frame(rows, ("space", "color", "peak_bytes", "peak_instruction", "allocated_bytes",
                                  "padding_bytes"))

    # -- what XLA reports ----------------------------------------------------------------------------------
    def reported(self) -> dict:
        """The peak reconciled with XLA's own totals, to the byte. ``memory_analysis``: argument + output + temporary
        - aliased bytes of ``compiled.memory_analysis()``; ``allocated``: the same total from the buffer assignment
        (every argument, output and preallocated-temporary allocation of the space); ``idle_at_peak``: the bytes of
        those allocations that hold no live value at the peak (XLA sizes its temporary buffer for every position of
        the schedule, and outputs not yet written still have their buffer); ``constants_at_peak``: constants live
        there (``memory_analysis`` leaves them out). ``peak_bytes == allocated - idle_at_peak + constants_at_peak``
        always holds (``exact``). ``live_range_peak``: the sum XLA's live-range dump states at its own peak, a
        per-value estimate that counts buffers XLA shares (an in-place op's input and output) twice and, on a TPU,
        every memory space together; ``explained`` says it in words."""
        f = self._figures()
        idle = f.pop("idle")
        f["explained"] = "; ".join(self._reconciliation(f, idle))
        return f

    def _figures(self) -> dict:
        """``reported()``'s numbers (and ``idle``: the allocations with bytes idle at the peak, and how many)."""
        at = self.peak_at
        counted = [a for a in self.allocations if a.color == self.space and not a.thread_local and not a.constant
                   and (a.parameter is not None or a.live_out or a.temp)]
        live_in: dict[int, int] = {}
        for p in self._placed:
            if p.allocation.color == self.space:
                live_in[p.allocation.index] = live_in.get(p.allocation.index, 0) + p.bytes_at(at)
        allocated = sum(a.size for a in counted)
        idle = [(a, a.size - live_in.get(a.index, 0)) for a in counted if a.size > live_in.get(a.index, 0)]
        idle_bytes = sum(b for _, b in idle)
        constants = sum(live_in.get(a.index, 0) for a in self.allocations if a.constant and a.color == self.space)
        parts = [self.analysis.get(k) for k in ("argument_bytes", "output_bytes", "temp_bytes")]
        analysis = (int(sum(parts)) - int(self.analysis.get("alias_bytes") or 0)) if all(
            isinstance(x, (int, float)) for x in parts) and self.space == 0 else None
        xla_peak = self.analysis.get("peak_memory_bytes")
        return {"peak_bytes": self.peak_bytes, "allocated": allocated, "idle_at_peak": idle_bytes,
                "constants_at_peak": constants, "memory_analysis": analysis,
                "exact": self.peak_bytes == allocated - idle_bytes + constants,
                "matches_memory_analysis": analysis is not None and analysis in (self.peak_bytes,
                                                                                 self.peak_bytes - constants),
                "usage_report": self.usage.get(self.space),
                "all_allocations": sum(a.size for a in self.allocations if a.color == self.space),
                "peak_memory_bytes": xla_peak if isinstance(xla_peak, int) else None,
                "spaces_peak": sum(max(live) for live in self._live.values() if live),
                "live_range_peak": self.live.peak_bytes if self.live.peak else None,
                "live_range_peak_at": self.live.peak_at, "idle": idle}

    def _reconciliation(self, f: dict, idle: list) -> list[str]:
        """``reported()``'s figures in words, a phrase each."""
        words = [f"peak {f['peak_bytes']:,} bytes = the {f['allocated']:,} bytes of argument, output and temporary "
                 f"allocations - {f['idle_at_peak']:,} of them idle at the peak + {f['constants_at_peak']:,} bytes of "
                 "constants"]
        if idle:
            top = sorted(idle, key=lambda x: -x[1])[:3]
            words.append("idle: " + ", ".join(f"allocation {a.index} ({a.kind}, {b:,} of {a.size:,} bytes)"
                                              for a, b in top))
        analysis = f["memory_analysis"]
        if analysis is not None:
            gap = f["peak_bytes"] - analysis
            if gap == 0:
                words.append(f"memory_analysis() gives the same {analysis:,} bytes (argument + output + temporary "
                             "- aliased)")
            else:
                words.append(f"memory_analysis() gives {analysis:,} bytes ({-gap:+,} from the peak)" + (
                    ": it leaves constants out" if gap == f["constants_at_peak"] else
                    ": it counts whole allocations, the idle bytes above with them (the temporary buffer is sized "
                    "for every position of the schedule, an output has its buffer before it is written)"
                    if analysis == f["allocated"] else
                    f"; the buffer assignment's argument, output and temporary allocations hold {f['allocated']:,}"))
        xla_peak, spaces_peak = f["peak_memory_bytes"], f["spaces_peak"]
        if xla_peak is not None and len(self._live) > 1:  # several memory spaces: the chip's peak is theirs
            words.append(f"XLA's peak_memory_in_bytes: {xla_peak:,}; the peaks of every memory space together: "
                         f"{spaces_peak:,}" + (f" ({spaces_peak - xla_peak:+,})" if spaces_peak != xla_peak else ""))
        usage, total = f["usage_report"], f["all_allocations"]
        if usage is not None:
            words.append(f"XLA's memory-usage report: {usage:,} bytes in all" + (
                " (every allocation, constants and reductions' scratch too)" if usage == total else
                f" ({total:,} in the buffer assignment's allocations)"))
        if self.live.peak:
            words.append(f"XLA's live-range dump states {self.live.peak_bytes:,} bytes at position {self.live.peak_at} "
                         "(its per-value estimate)")
        return words

    # -- donation -----------------------------------------------------------------------------------------
    def donation(self) -> "pd.DataFrame":
        """Arguments and donation: one row per argument that could be donated (an output has its shape and dtype
        and it is not donated: ``saves`` its bytes) or that was donated (``aliased``: whether XLA reuses its buffer
        for an output, and if not, why as far as the module says). Columns ``argument, parameter, shape, bytes,
        donated, aliased, output, saves, why``."""
        entry = self._module.entry
        outputs = _output_leaves(entry)
        aliases = input_output_alias(self.stage.text)
        aliased_params = {p for _, p, _, _ in aliases}
        aliased_params |= {a.parameter for a in self.allocations if a.parameter is not None and a.live_out}
        taken = {out for out, _, _, _ in aliases}
        free: dict[str, list[str]] = {}  # shape -> the outputs of that shape no argument's buffer holds yet
        for index, shape in outputs:
            if index not in taken:
                free.setdefault(shape, []).append(index)
        rows = []
        for number, ins in sorted(self._parameters.items()):
            shape = without_layout(ins.shape)
            size = sum(a.size for a in self.allocations if a.parameter == number)
            if number in aliased_params:
                continue  # donated and used: nothing to say
            if number in self.donated:
                why = ("no output has its shape and dtype" if not any(s == shape for _, s in outputs) else
                       "XLA did not reuse its buffer for an output (it is read after the output is written, or "
                       "another argument took the output)")
                rows.append(self._donation_row(number, shape, size, True, False, None, 0, why))
            elif free.get(shape):
                rows.append(self._donation_row(number, shape, size, False, False, free[shape].pop(0), size,
                                               "an output has its shape and dtype: donating it lets XLA write "
                                               "the output into its buffer"))
        df = self._frame(rows, ("argument", "parameter", "shape", "bytes", "donated", "aliased", "output", "saves",
                                "why"))
        df.attrs.update(saves=int(sum(r["saves"] for r in rows)))
        return df

    def _donation_row(self, number, shape, size, donated, aliased, output, saves, why) -> dict:
        return {"argument": self._argument_name(number), "parameter": number, "shape": shape, "bytes": size,
                "donated": donated, "aliased": aliased, "output": output if output is not None else "",
                "saves": saves, "why": why}

    # -- rematerialization -------------------------------------------------------------------------------------
    def rematerialization(self) -> "pd.DataFrame":
        """What XLA's rematerialization passes changed, as far as the compile's stages show it: one row per XLA
        stage made by a pass whose name says remat (the TPU's ``rematerialization``), with the instructions it
        added. Empty where no such pass changed the module (the CPU's pipeline has none)."""
        rows = []
        for s in self._xla_stages:
            if "remat" in s.name.lower() and s.group == "xla" and not s.error:
                parent = next((t for t in self._xla_stages if t.name == s.parent), None)
                before = _instruction_count(parent.text) if parent is not None else None
                after = _instruction_count(s.text)
                rows.append({"stage": s.name, "produced_by": s.produced_by, "instructions_before": before,
                             "instructions_after": after,
                             "added": after - before if before is not None else None})
        df = self._frame(rows, ("stage", "produced_by", "instructions_before", "instructions_after", "added"))
        ran = [p for p in self.xla_passes if "remat" in p.lower()]
        df.attrs.update(ran=ran, words=(
            f"{', '.join(ran)} ran and changed the module {len(rows)} time{'s' * (len(rows) != 1)}" if ran and rows else
            f"{', '.join(ran)} ran and changed nothing: the program fit without recomputing" if ran else
            "no rematerialization pass in this compile's pipeline" if self.xla_passes else
            "the compile's pass list is not known"))
        return df

    # -- comparing -------------------------------------------------------------------------------------------
    def compare(self, other: "Memory") -> "MemoryChange":
        """What changed from this compile's peak to ``other``'s: the two peaks and the buffers live at one peak
        and not the other, matched by user line, shape and kind (instruction names change between compiles)."""
        return MemoryChange.between(self, other)

    def summary(self) -> str:
        """One line: the peak, where, and its largest line."""
        lines = self.by_line()
        top = lines.iloc[0] if len(lines) else None
        where = f" at {self.peak_instruction}" + (f" in {self.peak_computation}" if self.peak_computation else "")
        most = f"; most from {top['line']} ({human_bytes(int(top['bytes']))})" if top is not None else ""
        others = [f"{space_name(self.platform, c)} peak {human_bytes(max(live))}" for c, live in sorted(self._live.items())
                  if c != self.space and space_name(self.platform, c) in ("VMEM", "HBM") and live]
        return (f"peak {human_bytes(self.peak_bytes)} of {space_name(self.platform, self.space)}{where}{most}"
                + (f" ({'; '.join(others)})" if others else ""))

    def __repr__(self) -> str:
        return f"<Memory {self.summary()}>"

    def to_json(self, rows: int = 200) -> dict:
        """What a view or a script needs: the peak, its position, the timeline (at most ~``4 * rows`` points,
        the peak kept), the live set at the peak (the ``rows`` largest, the rest summed), the bytes by line (each
        line and buffer with ``at``: where it is in the user's code, ``user_line``) and the donation candidates."""
        live = self._series()
        step = max(1, math.ceil(len(live) / (4 * rows)))
        points = sorted(set(range(0, len(live), step)) | {self.peak_at})
        peak = self.at_peak()
        buffers = peak.head(rows).to_dict("records")
        rest = peak.iloc[rows:]
        return {"peak_bytes": self.peak_bytes, "peak_at": self.peak_at, "peak_instruction": self.peak_instruction,
                "peak_computation": self.peak_computation, "space": space_name(self.platform, self.space),
                "platform": self.platform, "positions": len(live),
                "timeline": [[k, live[k], self.live.sequence[k] if k < len(self.live.sequence) else ""]
                             for k in points],
                "buffers": [_located_row(r) for r in buffers],
                "more_buffers": int(len(rest)), "more_bytes": int(rest["bytes"].sum()) if len(rest) else 0,
                "by_line": [_located_row(r) for r in self.by_line().to_dict("records")],
                "donation": [{k: _plain(v) for k, v in r.items()} for r in self.donation().head(rows).to_dict("records")],
                "reported": self.reported(), "summary": self.summary()}


def user_line(line: str) -> dict | None:
    """Where ``line`` (a ``by_line()`` or ``at_peak()`` line: ``file:line``) is in the user's code, as
    ``{file, line}``; None for an argument, a constant, a library's line or no location."""
    file, _, number = line.rpartition(":")
    if not file or line.startswith("(") or line.endswith(LIBRARY_ONLY) or not number.isdigit():
        return None
    return {"file": file, "line": int(number)}


def _located_row(row: dict) -> dict:
    out = {k: _plain(v) for k, v in row.items()}
    out["at"] = user_line(str(out["line"]))
    return out


def memory_of(stages: Sequence[Stage], platform: str, analysis: dict | None = None, donated: Sequence[int] = (),
              mlir: Stage | None = None, space: int = 0, xla_passes: Sequence[str] = ()) -> Memory:
    """The Memory of an exploration's XLA stages (``xla:optimized`` and the buffer-assignment and live-range
    backend stages); WorkbenchError naming what is missing."""
    by = {s.name: s for s in stages}
    missing = [n for n in ("xla:optimized", "backend:buffer-assignment", "backend:live-range")
               if n not in by or by[n].error]
    if missing:
        raise WorkbenchError(f"XLA wrote no {', '.join(missing)} for this compile, so its memory cannot be read "
                             "(a compile that failed, or an exploration saved before live ranges were kept)")
    usage = by["backend:memory-usage"].text if "backend:memory-usage" in by else ""
    return Memory(by["xla:optimized"], by["backend:buffer-assignment"].text, by["backend:live-range"].text, platform,
                  analysis, mlir, donated, [s for s in stages if s.group == "xla"], space, usage, xla_passes)


def _output_leaves(entry) -> list[tuple[str, str]]:
    """(output index, shape without layout) of each array the entry computation returns."""
    if entry is None:
        return []
    root = next((i for i in entry.instructions if i.root), None)
    if root is None:
        return []
    parts = tuple_shapes(root.shape)
    if not parts:
        return [("{}", without_layout(root.shape))]
    return [(f"{{{k}}}", without_layout(s)) for k, s in enumerate(parts)]


def _instruction_count(text: str) -> int:
    return sum(len(c.instructions) for c in read_hlo(text).computations)


def _plain(v):
    if hasattr(v, "item"):
        return v.item()
    return v
