"""The Exploration value and its Stepwise variant; ``workbench.exploration`` re-exports them with
the calls that make them (explore, explore_text, load).
"""
from __future__ import annotations

import dataclasses
import numbers
import threading
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FuturesTimeout
from typing import Sequence

from ..analysis.search.bisect import bisect
from ..analysis.diff import Changes, changes_between, diff_texts
from ..analysis.run.execute import REFERENCE, RunResult, check_outputs, run_stage
from ..analysis.graph import stage_graph
from ..analysis.run.multiprocess import DEFAULT_TIMEOUT, run_processes
from ..analysis.provenance import lineage, op_locations
from ..analysis.search.reduce import reduce as reduce_module
from ..artifacts.report import write_report
from ..artifacts.reproducer import write_reproducer
from ..analysis.sharding.collectives import collective_table
from ..analysis.cost import cost_table, hlo_op_costs, op_costs, plot_cost
from ..analysis.search.scan import StepRun, pattern_timing, scan_patterns, step_patterns
from ..errors import StageError, UnknownNameError
from ..pipeline.build import (Built, build, rebuild_xla, with_exactly, with_toggles,
                             with_xla_options, xla_passes_known)
from ..ir.text import strip_locations
from ..stages import STABLEHLO, Stage
from ..analysis.run.history import program_of
from .comparing import Comparing
from .drifting import Drifting
from .editing import Editing
from .backend import InBackend
from .backend_change import kernels_change
from .memory import InMemory
from .profiling import Measured
from .running import refuse_shapes, refuse_unfaithful_hlo, remembered_reference, runs_table

__all__ = ["Exploration", "Stepwise", "XLA_WAIT", "xla_checked"]

XLA_WAIT = 0.3  # seconds a view (the %%hlo output) waits for XLA's stages before it shows without them


def xla_checked(ex: "Exploration") -> "Exploration":
    """Start XLA's compile in the background, and wait for it when the call names XLA passes to skip
    that no compile has reported, so that a name XLA did not run is reported (XlaPassWarning) by
    the call that gave it, not later by whatever first reads a stage (a name reported before cannot
    draw the warning)."""
    if ex._late_fn is not None:
        ex._late_fn.start()
    if ex.spec.xla_disabled and not xla_passes_known(ex.spec.xla_disabled):
        ex.warnings  # noqa: B018 -- computing the XLA stages runs the check
    return ex


def _unknown_stage(name: str, names: Sequence[str], kind: str = "stage") -> UnknownNameError:
    """The error for a stage name that is not there: the closest names when some are close, else
    every name (the error is the UnknownNameError, a KeyError, that lookups have always raised)."""
    names = list(names)
    err = UnknownNameError(kind, name, names)
    if err.suggestions or not names:
        return err
    return UnknownNameError(kind, name, names, known_note=f"the {kind}s are {', '.join(names)}")


class Exploration(Measured, Drifting, Editing, Comparing, InMemory, InBackend):
    """Every stage of one program through one pipeline, in order.

    ``ex.stages`` lists them all; ``ex["stablehlo"]``, ``ex[-1]`` and ``ex.stage("canonicalize#2")``
    pick one; ``ex.changed()`` keeps those whose text differs from their parent. ``ex.error`` is the
    StageError of a failed stage (the stages before it stay usable), or None.
    """

    def __init__(self, built: Built, earlier: Sequence = ()):
        self._built = built
        self._spec = built.spec
        self._early = tuple(built.early)
        self._error = built.error
        self._late_fn = built.late
        self._late: tuple[Stage, ...] | None = None if built.late else ()
        self._late_error: StageError | None = None
        self._xla = None  # the XlaResult: passes seen, XLA's cost and memory analysis of the compile
        self._lock = threading.Lock()
        self._refs: dict = {}
        self._runs: list = list(getattr(built, "runs", ()))
        self._earlier = tuple(earlier)  # the runs of the Explorations this one was made from (``history``)
        self._profiles: dict = {}  # the last ex.profile() and ex.compile_profile() (``profiles``)
        self._saved_compile_time: dict | None = None  # a loaded file's save(compile_time=True)
        self._saved_kernels = None  # a loaded file's kernel table (saved after ex.backend()): backend_change.py
        self._tap_sides: dict = {}  # stages read for tapping by ``drift``

    # -- computing ---------------------------------------------------------------------------------
    def _ensure_late(self) -> None:
        with self._lock:
            if self._late is None:
                xla = self._late_fn()
                self._late, self._late_error, self._xla = tuple(xla.stages), xla.error, xla.result

    def xla_ready(self, wait: float = 0.0) -> bool:
        """Whether the XLA stages can be read without waiting for XLA: computed already, compiled (or
        failed) in the background, or none to make (the MLIR pipeline failed; text without @main).
        With ``wait``, first waits up to that many seconds for XLA's compile to end (the wait is then
        withdrawn; the compile goes on for whoever else waits)."""
        if self._late is not None:
            return True
        ready = self._late_fn.ready
        if wait > 0 and not ready():
            watch = self.xla_future()
            try:
                watch.result(timeout=wait)
            except (FuturesTimeout, CancelledError):
                watch.cancel()
        return ready()

    def xla_phase(self) -> str:
        """What XLA's compile of these stages does now, in words: "queued behind 1 compile", "XLA compiling
        in a child process ..." (disabled passes), "XLA compiling, ...", "reading XLA's 48 dump files"; ""
        when the XLA stages can be read without waiting."""
        return "" if self._late is not None else self._late_fn.phase()

    def xla_steps(self) -> list[tuple[str, float]]:
        """The steps XLA's compile of these stages took so far, each with its seconds, as the compile said
        them (a probe in a child process, XLA's compile with dumps, reading the dumps, a check of disabled
        pass names); [] before it starts, and for stages read from a saved file."""
        return self._late_fn.steps() if self._late_fn is not None else []

    def xla_future(self) -> Future:
        """A new Future, done (result None) when the XLA stages can be read without waiting (a failed
        compile too: the stage says why), starting the compile if it is not under way. While it is
        pending, no newer Exploration's compile cancels this one's; ``cancel()`` it when its stages
        are no longer wanted. Callbacks run on XLA's compile thread: hand work on from them (the
        panel queues a job) rather than read the stages there."""
        if self._late is None:
            return self._late_fn.watch()
        done: Future = Future()
        done.set_result(None)
        return done

    # -- reading -----------------------------------------------------------------------------------
    @property
    def stages(self) -> list[Stage]:
        self._ensure_late()
        return list(self._early + self._late)

    @property
    def pipeline_stages(self) -> list[Stage]:
        """The trace and MLIR pipeline stages only: never starts the XLA compile."""
        return list(self._early)

    @property
    def pipeline_error(self) -> StageError | None:
        """The StageError of a failed MLIR pipeline stage (not XLA's), without compiling."""
        return self._error

    @property
    def xla_result(self):
        """What the XLA compile reported besides its stages (``workbench.xla.XlaResult``: passes seen,
        XLA's cost and memory analysis, compile seconds), or None when XLA did not compile."""
        self._ensure_late()
        return self._xla

    @property
    def warnings(self) -> list[str]:
        """What the workbench noticed about the options without failing (an XLA pass name that XLA did
        not report running, so disabling it has no effect). Computing them compiles with XLA."""
        self._ensure_late()
        return list(self._xla.warnings) if self._xla else []

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.stages]

    @property
    def error(self) -> StageError | None:
        if self._error is None:
            self._ensure_late()
            return self._late_error
        return self._error

    @property
    def spec(self):
        """The settings this Exploration was built with (pipeline, patterns, XLA options, device)."""
        return self._spec

    @property
    def pipeline_string(self) -> str:
        """The whole MLIR pipeline as one string, for ``enzymexlamlir-opt --pass-pipeline``."""
        return ",".join(s.produced_by for s in self._early if s.group == "mlir" and not s.error)

    @property
    def xla_passes(self) -> list[str]:
        """The HLO pass names XLA's dumps mentioned in the last compile (toggle them with ``with_xla``)."""
        self._ensure_late()
        return list(self._xla.passes) if self._xla else []

    def stage(self, key: str | int | Stage) -> Stage:
        """One stage by name, position (negative counts from the end) or as a Stage; every lookup of
        a stage (``ex[...]``, ``diff``, ``run``, ``cost``, ``graph``) comes here, and a key that names
        no stage raises UnknownNameError with the closest names."""
        if isinstance(key, Stage):
            return key
        if isinstance(key, numbers.Integral) and not isinstance(key, bool):
            key = int(key)
            if 0 <= key < len(self._early):  # a trace/MLIR stage: no waiting for XLA's compile
                return self._early[key]
            stages = self.stages
            if -len(stages) <= key < len(stages):
                return stages[key]
            raise UnknownNameError("stage index", str(key), [], known_note=(
                f"this Exploration has {len(stages)} stages, so an index is 0 to {len(stages) - 1} "
                f"(or -{len(stages)} to -1)"))
        if not isinstance(key, str):
            raise UnknownNameError("stage", repr(key), [], known_note=(
                "a stage is picked by its name (see ex.names), its position, or a Stage"))
        for s in self._early:
            if s.name == key:
                return s
        for s in self.stages:
            if s.name == key:
                return s
        if key.startswith("backend:llo:") and self._kernels is not None and self._kernels.available:
            return self._kernels.stage(key)  # a kernel's LLO after one pass: ex.backend() made them
        raise _unknown_stage(key, self.names)

    __getitem__ = stage

    def __len__(self) -> int:
        return len(self.stages)

    def __iter__(self):
        return iter(self.stages)

    def changed(self) -> list[Stage]:
        return [s for s in self.stages if s.changed or s.error]

    def parent_of(self, key) -> Stage | None:
        s = self.stage(key)
        return self.stage(s.parent) if s.parent else None

    def table(self):
        """The stages as a pandas DataFrame (name, group, changed, lines, ms, cached, error, produced_by);
        ``cached``: the step was served from a cache, so ``ms`` is the time of its first run."""
        import pandas as pd

        return pd.DataFrame([
            {"stage": s.name, "group": s.group, "changed": s.changed, "lines": s.lines,
             "ms": None if s.seconds is None else round(s.seconds * 1e3, 2), "cached": s.cached,
             "error": s.error or "", "produced_by": s.produced_by}
            for s in self.stages
        ])

    # -- deriving new explorations --------------------------------------------------------------------
    def _derived(self, spec) -> "Exploration":
        """A new Exploration of ``spec`` (this one's, changed), its runs carried along, XLA started."""
        return xla_checked(Exploration(build(spec), self.history))

    def with_patterns(self, disable: Sequence[str] = (), enable: Sequence[str] = ()) -> "Exploration":
        """A new Exploration with these patterns switched off/on on top of the current toggles.

        Only the stages from the first one whose input or pass string changes are recomputed.
        """
        return xla_checked(Exploration(build(with_toggles(self._spec, disable, enable)), self.history))

    def with_only_patterns(self, names: Sequence[str]) -> "Exploration":
        """A new Exploration with exactly ``names`` enabled among the Enzyme-JaX patterns (every other
        pattern off), as bisect builds its candidates; the rest of the settings stay."""
        return Exploration(build(with_exactly(self._spec, names)), self.history)

    def with_xla(self, disable: Sequence[str] = (), enable: Sequence[str] = (), **options) -> "Exploration":
        """A new Exploration with XLA HLO passes switched off (or back on) and other XLA options set.

        The MLIR stages are reused as they are; only XLA recompiles.
        """
        spec = with_xla_options(self._spec, disable, enable, options)
        return xla_checked(Exploration(rebuild_xla(self._built, spec), self.history))

    def diff(self, a, b=None):
        """A structural diff of two stages (names, indices or Stage objects); with one argument, the
        stage against its parent. SSA renumbering and locations are ignored; see ``Diff.unified()``,
        ``.side_by_side()``, ``.ops_delta()``, ``.is_empty``."""
        if b is None:
            new = self.stage(a)
            old = self.parent_of(new)
            if old is None:
                raise UnknownNameError("parent stage", f"{new.name} (it has none)", self.names)
        else:
            old, new = self.stage(a), self.stage(b)
        return diff_texts(old.text, new.text, old.name, new.name)

    def changes_since(self, before: "Exploration", wait: bool = True) -> Changes:
        """What this Exploration changed against ``before`` (the one it was derived from, by a toggle):
        the settings that differ, the stages recomputed and reused, whether the final MLIR module and
        ``xla:optimized`` changed, with their ops delta; ``.diff("mlir")``/``.diff("xla")`` give the
        diffs (``workbench.analysis.diff.changes``). ``wait=False`` never waits for XLA: a compile still
        under way leaves XLA's part out, and says so. Where ``before`` has the TPU's kernels (``ex.backend()``)
        and this one's TPU is here, ``wait`` computes this one's too and the summary says how each fusion's
        bundles and MXU occupancy changed (``.kernels()``: the table; ``exploration/backend_change.py``)."""
        return changes_between(before, self, wait=wait, kernels=kernels_change(before, self, compute_b=wait))

    # -- provenance: which line of the user's code became which op (analysis/provenance.py) ----------------
    def locations(self, stage=None):
        """One row per op of ``stage`` (default: the last MLIR stage), with the line of the user's code it
        came from: ``op, result, func, fusion, text_line, your_file, your_line, your_function`` (the user's own
        frame), ``file, line, column, function`` (the innermost), ``name, origins, how, via`` (``how``: "own",
        or how the line of an op without a location of its own was inferred through the dataflow, from
        ``via``). MLIR stages read each op's ``loc(...)``, XLA's HLO stages each instruction's metadata."""
        return op_locations(self.stage(stage) if stage is not None else self._last_module(), self._last_module())

    def lineage(self, stage, op: str):
        """The counterparts of op ``op`` (a result such as ``"%12"``, or an XLA instruction such as
        ``"fusion.3"``) of ``stage`` in every stage: the ops with a source position in common with it,
        one row each (``stage, group, result, op, source, line, text``), and a row saying so for a stage with
        none. ``attrs["removed_by"]`` names the stage that removed it (None if it lives on),
        ``attrs["sources"]`` the user's lines it came from (for a fusion: those of all it holds)."""
        return lineage(self.stages, self.stage(stage), op)

    def _last_module(self) -> Stage:
        """The last MLIR stage that is a module: the one XLA compiles."""
        return next(s for s in reversed(self.pipeline_stages) if s.is_module)

    def cost(self, stage=None, device: str | None = None, dtype: str = "fp32"):
        """Without ``stage``: one row per stage (ops, flops, transcendentals, bytes, XLA's numbers,
        memory analysis, seconds; roofline times with ``device`` such as "H100"). With ``stage``: one
        row per op of that stage -- the analytic model's for an MLIR stage, XLA's own HloCostAnalysis
        per instruction for an XLA HLO stage (``xla:...``)."""
        if stage is None:
            return cost_table(self, device=device, dtype=dtype)
        st = self.stage(stage)
        if st.group == "xla" and not st.error:
            return hlo_op_costs(st.text)
        if not st.is_module:
            costed = [s.name for s in self.stages if s.is_module or (s.group == "xla" and not s.error)]
            what = ("failed" if st.error else "a jaxpr" if st.name == "jaxpr"
                    else "backend output, not a module" if st.group == "backend" else "not a module")
            raise UnknownNameError("stage with a per-op cost", st.name, costed, known_note=(
                f"{st.name} is {what}; per-op costs exist for MLIR stages (the analytic model) and XLA HLO "
                f"stages (XLA's HloCostAnalysis), e.g. {', '.join(costed[:3] + costed[-2:])}"))
        return op_costs(st.text)

    def plot_cost(self):
        """A chart of ops, flops and bytes across the stages."""
        return plot_cost(self)

    def collectives(self, stage=None):
        """One row per collective op (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute,
        collective-broadcast; Shardy's all_slice and reshard) of ``stage``, or of every stage: ``stage, kind,
        op, dialect (stablehlo | sdy | hlo), func, result, shape, dtype, replica_groups, mesh_axes, group_size,
        buffer_bytes, bytes_per_device, source, note``. ``bytes_per_device`` is the ring estimate with S the
        per-device buffer and n the group size: all-reduce 2(n-1)/n S, all-gather (n-1)/n S_out,
        reduce-scatter (n-1)/n S_in, all-to-all (n-1)/n S, collective-permute S; Shardy's ops (global shapes)
        are sized by their out_sharding's shard. ``workbench.analysis.sharding.collectives`` says what is assumed."""
        return collective_table(self.stages if stage is None else [self.stage(stage)])

    def graph(self, stage=None, max_ops: int = 400, group: str | None = None):
        """The dataflow of a stage as a graphviz graph (SVG in notebooks); ops changed relative to the
        parent stage are highlighted. Above ``max_ops`` ops, the top level of the stage's hierarchy by
        JAX's name stack (one box per group); ``group="block_0/attn"`` draws that group's level. At most
        1,000 ops are drawn one by one, whatever ``max_ops`` says. graphviz lays it out within
        ``graph.layout_seconds`` (30 s unless set); past that it is stopped and GraphTooLargeError says
        how to draw less."""
        st = self.default_run_stage() if stage is None else self.stage(stage)
        return stage_graph(st, self.parent_of(st), max_ops=max_ops, group=group)

    # -- executing ---------------------------------------------------------------------------------
    def default_run_stage(self) -> Stage:
        """The last MLIR stage that succeeded (or the first module stage when the pipeline is empty)."""
        runnable = [s for s in self._early if s.is_module]
        return runnable[-1]

    def run(self, stage=None, device: str | None = None, repeat: int = 20, args=None, check: bool = True,
            reference: "Exploration | None" = None, processes: int | None = None, coordinator: str | None = None,
            num_processes: int | None = None, process_id: int | None = None, timeout: float = DEFAULT_TIMEOUT):
        """Execute a stage on ``device`` (default: the one explored for) and check its numbers.

        Returns a RunResult: ``outputs`` (the user's pytree), ``timing`` (median/min/IQR of ``repeat``
        calls after a warm-up, ``seconds`` the raw times) and ``check``. The check measures the
        stage against the as-lowered module promoted to float64 (or the traced function evaluated
        in float64), next to the as-lowered program's own error, and passes a stage that is not
        materially less accurate than the program as lowered, at the precision it computes in (the
        rules are in ``workbench.analysis.run.check``). Where no float64 evaluation exists, the program's
        own noise (its inputs moved by one ulp) sets the tolerance, and ``check.note`` says why. ``reference`` checks
        against another Exploration's program instead (e.g. a hand-edited module from
        ``explore_text`` against the function it came from), run on the same arguments.

        What the first call prints (``jax.debug.print``, a callback's ``print``, warnings) is printed once, as
        the user's own call would print it, and kept as ``printed`` (lines); the timing repeats and the
        reference's calls print nothing.

        ``processes=N`` runs a stage sharded over several devices (arguments placed with NamedSharding
        on a Mesh) as N fresh local processes joined by ``jax.distributed``, each with devices / N CPU
        devices, the global mesh over all of them; ``outputs`` are gathered, ``timing`` is measured in
        process 0, ``device`` says e.g. "2 processes x 4 cpu devices", and the check is against this
        process's own single-process reference. A single-device stage is refused (WorkbenchError).
        ``coordinator="host:port", num_processes=M, process_id=k`` is one host of a real cluster: run
        the same notebook or script on every host with its own ``process_id`` (host 0 serves the
        coordinator at that address); since this process's JAX started long ago, it starts ONE child
        process that joins the cluster with this host's share of the devices, and gets the outputs.
        Both stop every process they started after ``timeout`` seconds or when one fails, and raise
        ProcessRunError naming the process and showing its stderr (``workbench.analysis.run.multiprocess``).
        """
        st = self.default_run_stage() if stage is None else self.stage(stage)
        device = device or self._spec.device
        traced = self._spec.traced
        refuse_shapes(traced, st, args)
        spread = not (processes is None and coordinator is None and num_processes is None and process_id is None)
        printed: list[str] = []  # what the warm-up call printed (echoed as it happened); the repeats' dropped
        if spread:
            outputs, timing, where = run_processes(self, st, processes=processes, coordinator=coordinator,
                                                   num_processes=num_processes, process_id=process_id,
                                                   repeat=repeat, args=args, timeout=timeout)
        else:
            refuse_unfaithful_hlo(self, st, device, None if args is None else tuple(args), self._refs)
            outputs, timing = run_stage(self, st, device, repeat, args, printed=printed)
            where = device
        result_check = None
        if check:
            owner = reference or self  # the reference runs with XLA's defaults: a toggled run is not one
            known = (st, outputs) if owner is self and not self._spec.xla_options and not spread else None
            result_check = check_outputs(outputs, remembered_reference(owner, owner._refs, device, args, known,
                                                                       foreign=owner is not self))
        returned = traced.returned(outputs, None if args is None else tuple(args)) if traced is not None else outputs
        result = RunResult(st.name, where, returned, timing, result_check, program_outputs=outputs,
                           program=program_of(self._spec, st), printed=tuple(printed))
        self._runs.append(result)
        return result

    def reference_stage(self) -> Stage:
        """The unoptimized program every run is checked against: "stablehlo" (or "input" for text); where that
        stage was edited by hand (``with_text``), the program as it was before the edit, under its name."""
        st = next((s for s in self._early if s.name == REFERENCE), self._early[0])
        if st.edit == "text":
            text = self._spec.input_text
            st = dataclasses.replace(st, text=strip_locations(text), text_with_locations=text, edit="")
        return st

    def compare(self, stages: Sequence = (), device: str | None = None, repeat: int = 20):
        """Run several stages and tabulate: stage, median ms, speed-up over the reference, check passed."""
        names = [self.stage(s).name for s in stages] or [REFERENCE, self.default_run_stage().name]
        return runs_table(self, names, device, repeat)

    # -- patterns, one at a time ------------------------------------------------------------------
    def applicable(self, stage=None, details: bool = False, progress: bool = True, on_progress=None,
                   exact: bool = False, executor=None):
        """The patterns that change ``stage`` (default: "stablehlo") when applied alone, in catalog order.

        Every pattern of the catalog is asked, on copies of the module in the worker pool: by group
        testing (batches of patterns in one run each; only batches that change the module are split,
        down to single patterns), or with ``exact`` one run per pattern. Both give the same answer
        unless a pattern's match depends on what the compared text does not show (locations, the
        order of a value's uses); ``workbench.analysis.search.scan`` says why. With ``details`` a DataFrame
        of every pattern (name, group, changed, seconds, error, batch): ``batch`` is 1 for a pattern
        that ran alone (every one that applies or fails), with its own ``seconds``; otherwise the size
        of the unchanged batch that decided it, and ``seconds`` is NaN. ``progress`` draws a bar in a
        notebook or a terminal (never in a log); ``on_progress(done, total)`` hears the patterns
        decided so far, as the long calls' callbacks do. ``executor`` runs the requests elsewhere: an
        Executor, a ``dask.distributed.Client`` or "tcp://host:port" (default ``wb.config()``'s, else
        the built-in pool; ``workbench.pipeline.remote``), as it does for ``step``, ``bisect``,
        ``reduce`` and ``pattern_timing``.
        """
        rows = scan_patterns(self, stage or STABLEHLO, progress=progress, on_progress=on_progress, exact=exact,
                             executor=executor)
        if details:
            import pandas as pd

            return pd.DataFrame([dataclasses.asdict(r) for r in rows])
        return [r.name for r in rows if r.changed]

    def step(self, stage=None, max_steps: int = 200, progress: bool = True, on_progress=None, exact: bool = False,
             executor=None):
        """An Exploration that applies one enabled pattern at a time to ``stage`` (default "stablehlo"),
        the first applicable each step in list order (stages ``pattern:<name>#k``), until none applies;
        its ``matches_reference``/``difference`` compare the end with one greedy run of all the patterns.
        The first applicable pattern is found by group testing, or with ``exact`` by running the
        patterns alone (as ``applicable`` does). ``on_progress(steps, None)`` hears each step (how
        many there will be is not known)."""
        return Stepwise(self._built, step_patterns(self, stage or STABLEHLO, max_steps=max_steps, progress=progress,
                                                   on_progress=on_progress, exact=exact, executor=executor))

    def bisect(self, predicate, candidates=None, progress: bool = True, on_progress=None, over: str = "patterns",
               executor=None):
        """A 1-minimal set for which ``predicate(exploration)`` holds (delta debugging) ``over`` the enabled patterns
        ("patterns"), the XLA passes the compile ran ("xla", ``ex.xla_passes``; passes it cannot compile without
        are ``.always_needed``) or both ("all"); see ``workbench.analysis.search.bisect``. Built-in predicates:
        ``wb.miscompiles``, ``crashes``, ``slower_than``, ``op_count_above``/``_at_most``, ``has_op``/``lacks_op``,
        ``differs_from``. Returns ``.patterns``, ``.xla_passes``, ``.runs``, ``.table()``, ``.diff``;
        ``on_progress(runs, None)`` hears each try (how many there will be is not known)."""
        return bisect(self, predicate, candidates=candidates, progress=progress, on_progress=on_progress, over=over,
                      executor=executor)

    def reduce(self, predicate, stage=STABLEHLO, progress: bool = True, on_progress=None, executor=None):
        """The smallest module reachable from ``stage``'s by deleting and cutting ops on which ``predicate``
        holds, each candidate explored as text with this spec (``workbench.analysis.search.reduce``): a ReduceResult."""
        edited = bool(self._spec.edits)  # candidates run the edited pipeline's passes (its hand texts are theirs)
        spec = dataclasses.replace(self._spec, edits=(), pipeline=self.pipeline_string if edited else self._spec.pipeline)
        return reduce_module(self, predicate, lambda text: Exploration(build(dataclasses.replace(
            spec, source=text, title=f"{self._spec.title}:reduced"))), stage, progress, on_progress, executor)

    def pattern_timing(self, stage=None, per_pattern: bool = False, progress: bool = True, on_progress=None,
                       executor=None):
        """Seconds each pattern group (or each pattern, every one run alone) takes on ``stage``,
        slowest first; ``on_progress(done, total)`` counts the groups (or patterns) run."""
        return pattern_timing(self, stage or STABLEHLO, per_pattern=per_pattern, progress=progress,
                              on_progress=on_progress, executor=executor)

    # -- saving and sharing --------------------------------------------------------------------------
    def report(self, path, graph=None, limits=None):
        """Write one self-contained HTML file (no network access, JS and CSS inlined) with the
        header, the stage table, the diff viewer with stage pickers, the cost table and plot, the
        graph of stage ``graph`` (default: the last MLIR stage), where the bytes go (``memory()``) and the runs made
        so far. Returns
        the path. ``limits`` (``workbench.artifacts.report_texts.ReportLimits``) bound what it reads,
        embeds, diffs and lays out; the header states them and what they left out."""
        kw = {} if limits is None else {"limits": limits}
        return write_report(self, path, graph=None if graph is None else self.stage(graph).name, **kw)

    def reproducer(self, directory, stage=None, predicate=None):
        """Write a folder a compiler engineer can attach to a bug report: the module before
        ``stage``, the pass string from ``stage`` on, the inputs, and ``repro.py``, which runs it
        with enzyme-ad and jax alone and prints PASS or FAIL for ``predicate``. Returns the folder."""
        return write_reproducer(self, directory, stage=stage, predicate=predicate)

    @property
    def runs(self) -> list:
        """The RunResults of the ``run`` calls made on this Exploration, oldest first (kept with
        ``save``; a loaded Exploration has those it was saved with)."""
        return list(self._runs)

    @property
    def history(self) -> list:
        """The session's runs, oldest first: those the Explorations this one was made from by toggles
        (``with_patterns``, ``with_xla``, ``with_pipeline``) had when it was made, then ``runs``. Each
        knows its program (``r.program.settings``); ``r.stale_for(ex)``: whether ``ex``'s program differs."""
        return [*self._earlier, *self._runs]

    # -- display -----------------------------------------------------------------------------------
    def __repr__(self) -> str:
        failed = self._error or (self._late_error if self._late is not None else None)
        err = f", FAILED at {failed.stage!r}" if failed else ""
        return (f"{type(self).__name__}({self._spec.title!r}, pipeline={self._spec.pipeline!r}, "
                f"device={self._spec.device!r}, {self._count()}{err})")

    def _count(self) -> str:
        """How many stages there are, counted as ``len(ex)`` and ``ex.table()`` count them once XLA
        has compiled; before that, how many exist so far (reading ``ex.stages`` compiles)."""
        n = len(self._early)
        if self._late is None:
            return f"{n} stage{'s' * (n != 1)} so far; XLA stages on demand"
        if self._late_fn is None:  # the MLIR pipeline failed: XLA never compiles
            return f"{n} stage{'s' * (n != 1)}, no XLA stages"
        return f"{n + len(self._late)} stages: {n} trace/MLIR + {len(self._late)} XLA/backend"

    def _repr_html_(self) -> str:
        from .display import exploration_html

        return exploration_html(self)


class Stepwise(Exploration):
    """An Exploration whose stages apply one pattern at a time (``pattern:<name>#k``) until none applies.

    ``reference`` is the stage the whole pattern list makes from the same start in one greedy run;
    ``matches_reference`` says whether stepping ended at the same module, ``difference`` shows how not.
    """

    def __init__(self, built: Built, run: StepRun):
        super().__init__(Built(built.spec, run.stages, None, None))
        self.reference = run.reference
        self.skipped = run.skipped
        self._applied = run.applied

    @property
    def matches_reference(self) -> bool:
        return self._early[-1].text == self.reference.text

    @property
    def difference(self):
        return diff_texts(self._early[-1].text, self.reference.text, self._early[-1].name, self.reference.name)

    def applied(self) -> list[str]:
        """The pattern each step applied, in order (as stepping recorded them, not read back from stage names)."""
        return list(self._applied)

    @property
    def summary(self) -> str:
        """What stepping did, in words: the patterns applied (or that none applies), whether the end
        is where one greedy run of the whole list ends, and the patterns that raised."""
        from .display import stepwise_summary

        return stepwise_summary(self)

    def __repr__(self) -> str:
        return f"Stepwise({self._spec.title!r}, {self.summary})"
