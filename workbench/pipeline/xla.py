"""Compile a module with XLA and read back XLA's own per-pass dumps as stages.

XLA writes the HLO module after every pass that changed it when ``xla_dump_hlo_pass_re=.*`` is set;
we compile once into a fresh directory and turn those files into stages, in XLA's order. What the
files are called differs by backend (the optimized module's ending, the backend's outputs: LLVM IR, PTX,
the TPU's module after code generation): ``backends.DumpNames``, found from the platform compiled for. The
persistent compilation cache is switched off for this compile because a cache hit writes no dumps.
XLA's cost and memory analyses of the executable, and removing the dump files, run on a thread of
their own after the dumps are read: the stages never wait for them, reading ``cost``/``memory`` does.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

import jax

from ..backends import DumpNames, backend_for
from ..children import leftovers
from ..errors import XlaOptionError
from ..ir.mlir import context_ahead
from .phase import say_phase

__all__ = ["XlaStage", "XlaResult", "XlaDumps", "read_dumps", "platform_of_lowered", "compile_with_dumps",
           "compile_lowered_with_dumps", "lower_exported", "xla_cost", "xla_memory", "check_options", "dump_options",
           "no_persistent_cache"]


@dataclass(frozen=True)
class XlaStage:
    name: str
    group: str  # "xla" or "backend"
    text: str
    produced_by: str


@dataclass(frozen=True)
class XlaResult:
    stages: tuple[XlaStage, ...]
    passes: tuple[str, ...]  # every HLO pass name XLA's dumps mention, in first-seen order
    seconds: float
    options: dict = field(default_factory=dict)
    analyses: Future | None = field(default=None, repr=False, compare=False)  # of (cost, memory), see below
    warnings: tuple[str, ...] = ()  # what the workbench noticed about the options (an unknown pass name)
    # every per-pass dump XLA wrote, in its order: (pipeline, pass, next pass, the stage it made or ""); see XlaDumps
    runs: tuple[tuple[str, str, str, str], ...] = field(default=(), repr=False, compare=False)

    @property
    def cost(self) -> dict:
        """XLA's HloCostAnalysis of the optimized module (waits for the analysis thread)."""
        return self.analyses.result()[0] if self.analyses is not None else {}

    @property
    def memory(self) -> dict:
        """XLA's memory analysis of the executable, bytes (waits for the analysis thread)."""
        return self.analyses.result()[1] if self.analyses is not None else {}


_AFTER = ThreadPoolExecutor(1, thread_name_prefix="wb-xla-after")  # analyses and clean-up after a compile


def check_options(options: dict) -> dict:
    """Refuse option combinations that make XLA abort the process instead of raising."""
    opts = {k: (",".join(v) if isinstance(v, (list, tuple, set, frozenset)) else v) for k, v in options.items()}
    if opts.get("xla_disable_hlo_passes") and opts.get("xla_enable_hlo_passes_only"):
        raise XlaOptionError(
            "xla_disable_hlo_passes and xla_enable_hlo_passes_only cannot be given together: XLA aborts the "
            "process on that combination (a failed CHECK in HloPassPipeline). Keep one of them.")
    for k in opts:
        if not k.startswith("xla_"):
            raise XlaOptionError(f"{k!r} is not an XLA option (they start with 'xla_')")
    return opts


@contextlib.contextmanager
def no_persistent_cache():
    before = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    try:
        yield
    finally:
        jax.config.update("jax_enable_compilation_cache", before)


# A per-pass dump: ``module_N.<name>.NNNN.<pipeline>.`` then ``after_<pass>[.before_<next>]`` (XLA's pass
# pipelines, and a pass's own steps such as copy-insertion's) or ``before_<next>`` alone (the TPU's tiling
# rewriter, which dumps the module it receives inside layout assignment)
_PASS_FILE = re.compile(r"^module_(\d+)\.(.+?)\.(\d{4})\.([^.]+)\."
                        r"(?:after_([^.]+?)(?:\.before_([^.]+))?|before_([^.]+))\.txt$")
_BEFORE = ".before_optimizations.txt"
_MARKS = ("pipeline-start", "pipeline-end")  # where a pipeline's dumps start and end: no pass


@dataclass(frozen=True)
class XlaDumps:
    """One compile's dump folder, read: its stages in XLA's order (``xla:before_optimizations``, one per pass
    that changed the module, ``xla:optimized``, then the backend's outputs), every pass name the dumps
    mention in first-seen order, and ``runs``: every per-pass dump in XLA's order, as
    (pipeline, pass, next pass, the stage it made or ""); a dump written before a pass with no pass named
    after has pass ""."""

    stages: tuple[XlaStage, ...]
    passes: tuple[str, ...]
    runs: tuple[tuple[str, str, str, str], ...]


def _read(path: str) -> str:
    with open(path, errors="replace") as f:
        return f.read()


class DumpWatch:
    """XLA's per-pass dumps in ``folder`` read while XLA writes them (``texts``: file name -> text), so that
    reading them after the compile (``read_dumps(..., texts)``) only reads what came last. A dump is read once
    XLA has begun a later one of the same module: they are numbered in the order written, each written whole
    before the next pass runs. One thread reads for every watch (``_watch_folders``), started once (starting a
    thread makes its starter wait for it); it looks every 4 ms at first, less often as a compile goes on (at
    most every 50 ms), and each file name is read once (``examined``), so a long compile costs little."""

    def __init__(self, folder: str):
        self.folder, self.texts, self.looks, self.examined = folder, {}, 0, 0
        self._seen: set[str] = set()  # every name listed so far
        self._waiting: list[tuple[str, int, str]] = []  # (module, number, name) of dumps not read yet
        self._latest: dict[str, int] = {}  # each module's highest dump number seen
        self._before: dict[str, str] = {}  # each module's dump before its first pass, until read
        self._last: dict[str, str] = {}  # each module's last dump read
        self._lock = threading.Lock()  # held while this watch's folder is read
        self._stopped = False
        with _WATCHING:
            _WATCHES.append(self)
            _EVERY[0] = _EVERY_FIRST
            if not _WATCHER:
                _WATCHER.append(threading.Thread(target=_watch_folders, name="wb-xla-dumps", daemon=True))
                _WATCHER[0].start()
            _WATCHING.notify()

    def read_written(self) -> None:
        """Read the dumps XLA has finished writing and this watch has not read, in XLA's order. A dump the same
        as the one before it is kept as that one's text object: the watch holds no more texts than the stages
        read from them will."""
        with self._lock:
            if self._stopped:
                return
            self.looks += 1
            new = [f for f in os.listdir(self.folder) if f not in self._seen]
            self._seen.update(new)
            self.examined += len(new)
            for f in new:
                m = _PASS_FILE.match(f)
                if m:
                    module, k = m.group(1), int(m.group(3))
                    self._latest[module] = max(self._latest.get(module, -1), k)
                    self._waiting.append((module, k, f))
                elif f.endswith(_BEFORE):
                    self._before[f.split(".", 1)[0][len("module_"):]] = f
            for module in [m for m in self._before if m in self._latest]:  # before the module's first pass
                self._keep(module, self._before.pop(module))
            self._waiting.sort()
            left = []
            for module, k, f in self._waiting:
                if k < self._latest[module]:
                    self._keep(module, f)
                else:
                    left.append((module, k, f))
            self._waiting = left

    def _keep(self, module: str, name: str) -> None:
        text = _read(os.path.join(self.folder, name))
        last = self._last.get(module)
        if text == last:
            text = last
        self._last[module] = self.texts[name] = text

    def stop(self) -> dict[str, str]:
        """Stop watching (once the compile has returned) and give the texts read."""
        with _WATCHING:
            if self in _WATCHES:
                _WATCHES.remove(self)
        with self._lock:
            self._stopped = True
        return self.texts


_EVERY_FIRST, _EVERY_MOST = 0.004, 0.05  # seconds between the watcher's looks: at a compile's start, at most
_EVERY = [_EVERY_FIRST]
_WATCHING = threading.Condition()
_WATCHES: list[DumpWatch] = []
_WATCHER: list[threading.Thread] = []


def _watch_folders() -> None:
    while True:
        with _WATCHING:
            _WATCHING.wait_for(lambda: _WATCHES)
            every = _EVERY[0]
            _EVERY[0] = min(every * 1.1, _EVERY_MOST)
            watches = list(_WATCHES)
        time.sleep(every)
        for watch in watches:
            try:
                watch.read_written()
            except OSError:  # the folder went away: what was read stands, the rest is read after the compile
                pass


def read_dumps(folder: str, names: DumpNames, texts: dict[str, str] | None = None) -> XlaDumps:
    """The stages of XLA's dumps in ``folder``, the optimized module and backend outputs found by ``names``
    (the backend's file endings: ``backend_of(device).dumps``). Only the last module compiled counts: any
    other was compiled on the side. A compile may go on under a later module number with the same name (the
    TPU's, of a program with an FFT and a loop: ``module_0056.jit_loss...`` holds the module before its
    passes and the first few, ``module_0059.jit_loss...`` the rest and the optimized module): those are
    the same compile's. ``texts``: files already read (``DumpWatch``), by name."""
    files = sorted(os.listdir(folder), key=_dump_order)
    texts = texts or {}

    def read(name: str) -> str:
        text = texts.get(name)
        return text if text is not None else _read(os.path.join(folder, name))

    befores = [f for f in files if f.endswith(_BEFORE)]
    if not befores:
        return XlaDumps((), (), ())
    number, name = _dump_order(befores[-1])[0], befores[-1][:-len(_BEFORE)].split(".", 1)[1]  # 56, "jit_loss.cl_9337"
    files = [f for f in files if _dump_order(f)[0] >= number and f.split(".", 1)[-1].startswith(name + ".")]
    stages, passes, runs = _pass_stages(files, read)
    opt = next((f for f in files if f.endswith(names.optimized) and not _PASS_FILE.match(f)), None)
    if opt:
        text = read(opt)
        if stages and text == stages[-1].text:
            text = stages[-1].text  # the last pass's module as it was: one object for both stages
        stages.append(XlaStage("xla:optimized", "xla", text, "XLA: the optimized HLO module"))
    for out in names.outputs:
        parts = [f for f in files if f.endswith(out.suffix)]
        if parts:
            text = "\n".join(f"; ==== {f} ====\n{read(f)}" if len(parts) > 1 else read(f) for f in parts)
            stages.append(XlaStage(out.stage, "backend", text, f"XLA backend: {out.what}"))
    return XlaDumps(tuple(stages), tuple(passes), tuple(runs))


_MODULE = re.compile(r"module_(\d+)\.")


def _dump_order(name: str) -> tuple[int, str]:
    """A dump file's place in XLA's order: its module's number (as a number: XLA writes four digits, then five
    from module 10000 on), then the rest of its name; -1 for a file of no module."""
    m = _MODULE.match(name)
    return (int(m.group(1)), name[m.end():]) if m else (-1, name)


def _pass_stages(files: list[str], read: Callable[[str], str]) -> tuple[list[XlaStage], list[str], list[tuple[str, str, str, str]]]:
    """``xla:before_optimizations`` and a stage per per-pass dump whose module differs from the one before it;
    the pass names mentioned; the runs (see ``XlaDumps``). A change belongs to the pass its dump is named
    after; a dump named only before a pass shows the work of the pass the previous dump named next (the TPU's
    layout assignment, handing its module to its tiling rewriter). A change first seen at a pipeline's start
    was made between pipelines, by no pass a dump names: the next stage shows it."""
    stages: list[XlaStage] = []
    passes: list[str] = []
    runs: list[tuple[str, str, str, str]] = []
    counts: dict[str, int] = {}
    before = next((f for f in files if f.endswith(_BEFORE)), None)
    last = read(before) if before else ""
    if before:
        stages.append(XlaStage("xla:before_optimizations", "xla", last, "XLA: HLO as converted from StableHLO"))
    handed = ""  # the pass the last dump named next
    for f in files:
        m = _PASS_FILE.match(f)
        if not m:
            continue
        pipeline, after, nxt = m.group(4), m.group(5) or "", m.group(6) or m.group(7) or ""
        passes += [p for p in (after, nxt) if p and p not in _MARKS and p not in passes]
        maker = after or (handed if handed and handed not in _MARKS else pipeline)
        handed = nxt
        text = read(f)
        made = ""
        if text != last and maker not in _MARKS:
            counts[maker] = counts.get(maker, 0) + 1
            made = f"xla:{maker}#{counts[maker]}"
            how = (f"XLA pipeline {pipeline!r}, pass {after!r}" if after else
                   f"XLA pass {maker!r}, the module it handed to {pipeline!r} (XLA's dump before {nxt!r})")
            stages.append(XlaStage(made, "xla", text, f"{how} (toggle with xla_disable_hlo_passes={maker})"))
        runs.append((pipeline, after, nxt, made))
        if text != last:  # unchanged: keep the text object already held (a stage's, mostly)
            last = text
    return stages, passes, runs


def xla_cost(compiled) -> dict:
    """XLA's cost analysis of a jax ``Compiled``, or of XLA's own executable (both have ``cost_analysis``)."""
    try:
        c = compiled.cost_analysis() or {}
    except Exception:  # some backends do not implement it: report nothing rather than a guess
        return {}
    return {k: float(v) for k, v in c.items() if isinstance(v, (int, float))}


def xla_memory(compiled) -> dict:
    """... of a jax ``Compiled``, or of XLA's own executable (``get_compiled_memory_stats``)."""
    try:
        m = (compiled.memory_analysis() if hasattr(compiled, "memory_analysis")
             else compiled.get_compiled_memory_stats())
    except Exception:  # as above
        return {}
    if m is None:
        return {}
    return {"argument_bytes": int(m.argument_size_in_bytes), "output_bytes": int(m.output_size_in_bytes),
            "temp_bytes": int(m.temp_size_in_bytes), "alias_bytes": int(m.alias_size_in_bytes),
            "generated_code_bytes": int(m.generated_code_size_in_bytes),
            **({"peak_memory_bytes": int(m.peak_memory_in_bytes)} if hasattr(m, "peak_memory_in_bytes") else {})}


def _count_files(d: str) -> int:
    try:
        return len(os.listdir(d))
    except OSError:
        return 0


def dump_options(directory: str) -> dict:
    """The compiler options that make XLA write its per-pass dumps into ``directory``."""
    return {"xla_dump_to": directory, "xla_dump_hlo_pass_re": ".*", "xla_dump_hlo_as_text": True}


def compile_with_dumps(exported, device, options: dict | None = None, shardings=None) -> XlaResult:
    """Compile ``exported`` (a ``jax.export.Exported``) for ``device`` with per-pass dumps; returns the
    stages XLA produced. ``shardings`` (one per flattened argument) places a sharded program on its
    mesh instead. See ``compile_lowered_with_dumps``."""
    return compile_lowered_with_dumps(lower_exported(exported, device, shardings), options)


def lower_exported(exported, device, shardings=None) -> jax.stages.Lowered:
    """``exported`` lowered for ``device`` (or placed by ``shardings``), ready to compile."""
    from jax.sharding import SingleDeviceSharding

    shardings = shardings or [SingleDeviceSharding(device)] * len(exported.in_avals)
    flat = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sh) for a, sh in zip(exported.in_avals, shardings)]
    args, kwargs = jax.tree_util.tree_unflatten(exported.in_tree, flat)
    say_phase("lowering the module for XLA")
    with no_persistent_cache():
        return jax.jit(exported.call).lower(*args, **kwargs)


def platform_of_lowered(lowered) -> str:
    """The platform ``lowered`` (a ``jax.stages.Lowered``) compiles for, whose dump names its compile writes
    (``program.platforms``: the one JAX lowered it for), else JAX's default backend."""
    from .program import platforms

    found = platforms(lowered)
    return found[0] if found else jax.default_backend()


_BEGUN = threading.Condition()
_begun = [0]  # XLA compiles this process has begun (entered XLA's C++, or handed to a child: no GIL held), and
# compile jobs that ended (also one that failed before XLA began): either way XLA's set-up no longer wants the GIL


def _counted() -> None:
    with _BEGUN:
        _begun[0] += 1
        _BEGUN.notify_all()


def compile_begins() -> None:
    """Say that an XLA compile begins now: this process waits for it without the GIL from here on."""
    _counted()


def compile_job_ends() -> None:
    """Say that a compile job is over, begun or not (its input could not be made, an option was refused):
    whoever waits for a compile to begin (``after_compile_begins``) waits no longer."""
    _counted()


def compiles_begun() -> int:
    """How many XLA compiles this process has begun so far, and compile jobs ended (see ``after_compile_begins``)."""
    return _begun[0]


def after_compile_begins(seen: int, work: Callable[[], Any], timeout: float = 1.0) -> None:
    """Run ``work`` once a compile beyond the first ``seen`` has begun (or a compile job ended), or after
    ``timeout`` seconds: work that holds the GIL (freeing what a trace left) done while XLA compiles, not before
    (it would delay the compile's own Python set-up by as long)."""
    with _BEGUN:
        _BEGUN.wait_for(lambda: _begun[0] > seen, timeout)
    work()


_INPUT_HELD: list = []  # the last compile's input (see _hold_input)


def _hold_input(lowered) -> None:
    """Keep ``lowered`` (the compile beginning now) until the next compile begins, and free the one held before
    on the analysis thread while this compile runs without the GIL. Freeing a module parsed for XLA frees its
    MLIR context too (~1.5 ms holding the GIL on a small program): done as the compile returns, it came
    between XLA's result and the thread waiting for it. One input is held at most."""
    before = _INPUT_HELD[:]
    _INPUT_HELD[:] = [lowered]
    if before:
        _AFTER.submit(before.clear)


def _compile_here(lowered, compiler_options: dict) -> tuple[float, Future]:
    t0 = time.perf_counter()
    say_phase("XLA compiling, writing a dump after each HLO pass")
    compile_begins()
    context_ahead()  # the next XLA input's context, made while XLA compiles without the GIL
    _hold_input(lowered)
    with no_persistent_cache():
        compiled = lowered.compile(compiler_options=compiler_options)
    gate = getattr(_DUMPS_READ, "event", None)

    def analyses():  # after the dumps are read (the stages do not wait for these calls, which hold the GIL)
        if gate is not None:
            gate.wait(_GATE_TIMEOUT)
        return xla_cost(compiled), xla_memory(compiled)

    # the thread drops ``compiled`` once both analyses are done, so no executable outlives them
    return time.perf_counter() - t0, _AFTER.submit(analyses)


_DUMPS_READ = threading.local()  # .event: set once the compile this thread runs has its dumps read
_GATE_TIMEOUT = 10.0


def compile_lowered_with_dumps(lowered, options: dict | None = None, compiler=_compile_here, around=None) -> XlaResult:
    """Compile ``lowered`` (a ``jax.stages.Lowered``: the user's program, or a stage's module in its
    place) with per-pass dumps; returns the stages XLA produced.

    Raises the JAX error as is when XLA rejects an option or the module (the caller turns it into a
    failed stage); options that would abort the process are refused beforehand by ``check_options``.
    ``compiler(lowered, compiler_options)`` compiles, returning its seconds and a future of XLA's (cost,
    memory) analyses: here by default, or in another process that writes the dumps into the same folder.
    ``around``: a context manager the compile itself runs in (a profiler trace), the dumps read outside it.
    """
    opts = check_options(dict(options or {}))
    d = tempfile.mkdtemp(prefix=leftovers.prefix("xla"))  # named by this process: see leftovers
    watch = DumpWatch(d) if around is None else None  # a profiled compile runs alone
    gate = _DUMPS_READ.event = threading.Event()
    try:  # the files are removed on the analysis thread: the result holds their texts
        try:
            with around if around is not None else contextlib.nullcontext():
                seconds, analyses = compiler(lowered, {**dump_options(d), **opts})
        finally:
            texts = watch.stop() if watch is not None else {}
        say_phase(f"reading XLA's {_count_files(d)} dump files")
        read = read_dumps(d, backend_for(platform_of_lowered(lowered)).dumps, texts)
        return XlaResult(read.stages, read.passes, seconds, opts, analyses, runs=read.runs)
    finally:
        _DUMPS_READ.event = None
        gate.set()
        _AFTER.submit(shutil.rmtree, d, ignore_errors=True)
