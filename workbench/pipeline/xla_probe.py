"""Compiles that cannot take the kernel down: XLA run in a child process first, where it is allowed to abort.

Some XLA options make XLA abort the whole process instead of raising (a failed CHECK): disabling the HLO
passes a module cannot compile without (``copy-insertion`` for a program with random numbers is one). A
notebook kernel must never die of that, so a compile with user-disabled passes is first tried here, in a
child process (a ``children.Child`` running this module, serving ``METHODS``): ``guard_compile`` raises
``XlaAbortError`` with XLA's CHECK message when the child died, and lets the real compile go on
otherwise. An explore or toggle with disabled passes does not compile twice: ``compile_guarded`` has the
child make the compile itself, with the CompileOptions JAX builds here, writing its dumps into this
process's folder, and the stages are read from those. The bisection of XLA passes
(``analysis.search.bisect``) asks ``probe_compile`` which passes are always needed the same way.

Only a SIGABRT is XLA refusing the options (a failed CHECK ends in ``abort()``); another signal is XLA
crashing on the module (a RET_CHECK of the SPMD pipeline can end in SIGSEGV). A SIGKILL -- what the
kernel's out-of-memory killer or a user's kill -9 sends -- or an exit says nothing about the module: ``probe_compile``
raises ``XlaProbeDied`` then, and no verdict is kept, so the next call tries again.
Requests and answers are numbered, and an interrupted wait ends the child, so an answer is never
taken for another request's.

The child never opens an accelerator (``children.child_env``: CPU-only). It compiles for the CPU on its own
CPU devices, for a GPU on the GPU it sees (GPUs take several processes), and for a TPU -- which one process
holds -- through a compile-only topology of the same chips (``backends.topology``), loading libtpu beside
the notebook. Where that cannot work (a generation not known here, a libtpu that refuses), the child says
``CompileOnlyUnavailable``; the compile then happens in this process, unguarded, and the user is told so
once (``XlaPassWarning``), never that the child "died".

A sharded module is tried there too, whatever its options: XLA's SPMD pipeline can fail a RET_CHECK
that ends the process (measured: the sharded ``scan`` example through ``pipeline="canonicalize"`` and
Shardy's propagation stage, "hlo_sharding.cc:747 leaf_count == tuple_elements_.size()"). The child
compiles it for the same number of partitions on as many devices (its CPU device count is the
parent's), without the Exported wrapper; a verdict is kept per module and options, so the run after
an explore does not try again.
"""
from __future__ import annotations

import contextlib
import functools
import re
import signal
import threading
from dataclasses import dataclass
from typing import Any, Callable

from ..backends import Topology, backend_for, backend_of, default_platform
from ..children import Child, ChildDied, ChildTimeout, child_env, ended, leftovers, serve
from ..errors import XlaAbortError, XlaProbeDied
from .phase import say_phase

__all__ = ["XlaAbortError", "XlaProbeDied", "METHODS", "ShardedCompile", "guard_compile", "compile_sharded",
           "compile_here_as_asked", "compile_module_here_as_asked",
           "compile_guarded", "probe_compile", "probe_payload", "release_spare", "remember_verdict", "warm_soon"]

KILLED = "XLA killed the compiling process"


def _death(code: int | None, check: str | None) -> str:
    """XlaProbeDied's message for a child that ended with ``code`` (Popen's returncode), not by XLA's crash."""
    if code == -signal.SIGKILL:
        return (f"the child process compiling this module with XLA {ended(code)}. If it was the out-of-memory "
                "killer, the compile ran out of memory: free memory (other kernels, big arrays) and try again, or "
                "try a smaller program. Either way it says nothing about the module or its options, so nothing is "
                "kept")
    said = f"; it printed: {check}" if check else ""
    return (f"the child process compiling this module with XLA {ended(code)}{said}. That is not XLA's abort on "
            "these options; nothing is kept, so the next call tries again")


def probe_payload(source: str, device: str, partitions: int = 1) -> dict:
    """What the child needs to compile ``source`` (MLIR text with ``@main``) for ``device``: its bytecode,
    its argument and result types, whether 64-bit types are on, and its number of partitions."""
    import jax

    from .exported import main_signature, module_bytecode

    ins, outs = main_signature(source)
    return {"bytecode": module_bytecode(source), "device": device, "x64": bool(jax.config.jax_enable_x64),
            "ins": [(tuple(a.shape), str(a.dtype)) for a in ins], "outs": [(tuple(a.shape), str(a.dtype)) for a in outs],
            "partitions": int(partitions), "topology": topology_for(device)}


def topology_for(device: str) -> Topology | None:
    """The compile-only topology through which the child compiles for ``device`` (a TPU's chips), or None
    where the child compiles on devices of its own (the CPU, a GPU)."""
    import jax

    backend = backend_of(device)
    return backend.topology(jax.devices(backend.platform)) if backend.probe_platforms == "cpu" else None


_UNAVAILABLE = "CompileOnlyUnavailable"
_SAID_UNAVAILABLE: set[str] = set()


def _unavailable(reply, device: str) -> bool:
    """Whether the child's ``reply`` says it cannot compile for ``device`` at all (no compile-only topology):
    then the compile happens here, and the user is told once per device why the child cannot guard it."""
    if not (isinstance(reply, str) and reply.startswith(_UNAVAILABLE)):
        return False
    if device not in _SAID_UNAVAILABLE:
        import warnings

        from ..errors import XlaPassWarning

        _SAID_UNAVAILABLE.add(device)
        warnings.warn(f"XLA compiles with disabled passes for {device} run in this process, not in a child: "
                      f"{reply[len(_UNAVAILABLE) + 2:]}. A pass toggle that makes XLA abort would end this process; "
                      "the toggles themselves work", XlaPassWarning, stacklevel=3)
    return True


_VERDICTS: dict[tuple, str | None] = {}  # (hash of the module, options, partitions) -> probe_compile's answer


def _verdict_key(source: str, device: str, options: dict, partitions: int) -> tuple:
    import hashlib

    return hashlib.sha256(source.encode()).hexdigest(), device, tuple(sorted(options.items())), partitions


def remember_verdict(source: str, device: str, options: dict, partitions: int) -> None:
    """``source`` compiled with ``options`` in the child without harm: a guard of the same compile passes."""
    _VERDICTS[_verdict_key(source, device, options, partitions)] = None


def _sharded_refusal(why: str, partitions: int, how: str) -> XlaAbortError:
    """The error for a sharded module the child's XLA ended on (``why`` starts with KILLED) or refused."""
    killed = why.startswith(KILLED)
    what, said = ("aborts the process compiling", why[len(KILLED):].strip(" :")) if killed else ("refuses", why)
    return XlaAbortError(
        f"XLA {what} this module sharded over {partitions} devices ({said}); {how} in a child process, so this "
        "one lives on. An earlier stage may compile (ex.run(stage)), or another Shardy mode "
        "(shardy_passes='none' lets XLA propagate the shardings itself)")


def guard_compile(source: str, device: str, options: dict, timeout: float = 600.0, partitions: int = 1) -> None:
    """Raise XlaAbortError when compiling ``source`` with ``options`` makes XLA abort, found by trying in
    the child process; tried are the compiles with disabled HLO passes (the options known to abort)
    and every sharded one (``partitions`` > 1: XLA's SPMD pipeline can abort too)."""
    if not options.get("xla_disable_hlo_passes") and partitions <= 1:
        return
    key = _verdict_key(source, device, options, partitions)
    if key not in _VERDICTS:
        say_phase("trying the compile in a child process first (XLA can abort on "
                  + ("disabled passes)" if options.get("xla_disable_hlo_passes") else "a sharded module)"))
        reply = probe_compile({**probe_payload(source, device, partitions), "options": dict(options)},
                              timeout, spare=False)
        if _unavailable(reply, device):
            return
        _VERDICTS[key] = reply
        if len(_VERDICTS) > 256:
            _VERDICTS.pop(next(iter(_VERDICTS)))
    why = _VERDICTS[key]
    if why is not None and partitions > 1 and not options.get("xla_disable_hlo_passes"):
        # any refusal counts: XLA's SPMD pipeline fails a RET_CHECK as an error at times and ends the
        # process at other times, on the same module, so what failed there is not compiled here
        raise _sharded_refusal(why, partitions, "tried")
    if why is not None and why.startswith(KILLED):
        names = [n for n in str(options["xla_disable_hlo_passes"]).split(",") if n]
        off = ", ".join(names) if len(names) <= 6 else f"{len(names)} passes ({', '.join(names[:4])}, ...)"
        if not why.startswith(f"{KILLED}: SIGABRT"):  # a crash, not a failed CHECK: no word on the passes
            raise XlaAbortError(
                f"XLA crashed the process compiling this module with these HLO passes disabled: {off} "
                f"({why[len(KILLED):].strip(' :')}); tried in a child process, so this one lives on. That is a "
                "crash in XLA rather than a refusal of the options: enabling the passes again, an earlier stage "
                "(ex.run(stage)) or other options may compile")
        raise XlaAbortError(
            f"XLA aborts the process compiling this module with these HLO passes disabled: {off} "
            f"({why[len(KILLED):].strip(' :')}); "
            "tried in a child process, so this one lives on. The module needs some of those passes: enable "
            "them again (ex.bisect(..., over='xla') lists the passes XLA cannot do without as always_needed)")


class _CompileHere(Exception):
    """The child gave no compile to keep (see ``compile_guarded``): compile in this process."""


class _Unguarded(Exception):
    """The child cannot compile for this device at all (said once): compile in this process, unguarded."""


def compile_guarded(lowered, source: str, device: str, options: dict, timeout: float = 600.0, partitions: int = 1):
    """XLA's compile of ``lowered`` (whose module is ``source``) with ``options`` and per-pass dumps, as
    ``compile_lowered_with_dumps`` makes it, where XLA may abort on the options (disabled HLO passes):
    the guard and the compile in one. The child process compiles the module with the settings JAX
    would use here (``program.compile_request``) and writes its dumps into this process's folder, so
    the stages come from that one compile and the module is not compiled twice (a probe, then again
    here). An abort raises XlaAbortError as ``guard_compile`` does. None where the guard is not needed
    or already decided, where the request cannot be built, or where XLA refused the module with an
    error: the caller then guards and compiles here (and gets XLA's whole message)."""
    from .program import compile_request
    from .xla import compile_begins, compile_lowered_with_dumps

    key = _verdict_key(source, device, options, partitions)
    if not options.get("xla_disable_hlo_passes") or partitions > 1 or key in _VERDICTS:
        return None

    def in_the_child(lowered, compiler_options: dict):
        request = compile_request(lowered, compiler_options)
        if request is None:
            raise _CompileHere
        say_phase("XLA compiling in a child process (it can abort on disabled passes), writing a dump after each HLO pass")
        compile_begins()
        reply = _PROBER.compile("compile_module", {**request, "topology": topology_for(device)}, timeout, spare=False)
        if _unavailable(reply, device):
            raise _Unguarded
        if isinstance(reply, str):  # XLA's refusal or abort: kept, as a probe's answer is
            _VERDICTS[key] = reply
            raise _CompileHere
        _VERDICTS[key] = None
        return reply["seconds"], _analyses(reply)

    try:
        return compile_lowered_with_dumps(lowered, options, compiler=in_the_child)
    except _Unguarded:
        return None
    except _CompileHere:
        guard_compile(source, device, options, timeout, partitions)  # raises XlaAbortError for an abort
        return None


@dataclass(frozen=True)
class ShardedCompile:
    """``compile_sharded``'s request: the serialized Exported, the device, XLA's options, whether 64-bit
    types are on, and the mesh (axis names, sizes and type names) its arguments are placed on."""

    exported: bytes
    device: str
    options: dict
    x64: bool
    mesh: tuple[tuple[str, ...], tuple[int, ...], tuple[str, ...]]
    topology: Topology | None = None  # where the child compiles for chips it must not open (a TPU's)


def _probe_env() -> dict:
    """The child's environment: as many CPU devices as this process has (a sharded module's partitions
    need them); CPU-only, except where the default backend's child compiles on its own devices (a GPU)."""
    import jax

    return child_env(cpu_devices=len(jax.devices("cpu")), platforms=backend_for(default_platform()).probe_platforms)


class _Prober:
    """The probe child, started on first use, with a spare that warms up (imports JAX, starts XLA's CPU
    client) meanwhile, so that after a death the next compile does not wait for a whole start;
    ``release_spare`` ends the spare when the probing is over. A start is not waited for: the
    request's time limit covers it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._live = self._child()
        self._spare = self._child()

    @staticmethod
    def _child() -> Child:
        return Child("workbench.pipeline.xla_probe", "xla-probe", env=_probe_env, ready_within=None)

    @property
    def pid(self) -> int | None:
        """The process id of the child that takes the next compile, while it runs."""
        return self._live.pid

    def compile(self, method: str, payload: Any, timeout: float, spare: bool = True):
        """``method``'s answer (None when XLA compiled it, else why not: its error, or KILLED, the signal and
        XLA's CHECK message when XLA ended the child). A child killed by SIGKILL, that exited, or that did
        not answer within ``timeout`` (it is ended) raises XlaProbeDied.
        ``spare``: keep a second child warming up meanwhile (for a burst of probes that may kill children)."""
        with self._lock:
            self._take_spare()
            if spare:
                self._spare.start()
            try:
                return self._live.call(method, (payload,), timeout).payload
            except ChildDied as e:
                return _verdict_of_death(e.exitcode, e.log)
            except ChildTimeout:  # slow, not refused: a verdict would stand in for a compile that never ended
                raise XlaProbeDied(
                    f"the child process compiling this module with XLA gave no answer within {timeout:g} s (the "
                    "exploration's timeout) and was ended. Whether XLA accepts the module is not known, so nothing "
                    "is kept: explore with a larger timeout= for a module this large, and the next call tries again"
                ) from None

    def _take_spare(self) -> None:
        """A warm spare takes the place of a live child that has died (under the lock)."""
        if not self._live.alive() and self._spare.alive():
            self._live, self._spare = self._spare, self._live

    def start_soon(self) -> None:
        with self._lock:
            self._take_spare()
            self._live.start_soon()

    def release_spare(self) -> None:
        with self._lock:
            self._spare.close()


def _verdict_of_death(code: int | None, log: str) -> str:
    """KILLED with the signal and XLA's CHECK message for a child that XLA ended; XlaProbeDied for one
    that was killed from outside (SIGKILL) or exited, which says nothing about the module."""
    said = [re.sub(r"^[EFWI]\d{4} [\d:.]+\s+\d+ \S+\] ", "", ln.strip())  # glog's prefix
            for ln in log.splitlines() if "Check failed" in ln or "RET_CHECK failure" in ln]
    check = said[0][:200] if said else None
    if code is None or code >= 0 or code == -signal.SIGKILL:  # not XLA's doing: no verdict
        raise XlaProbeDied(_death(code, check)) from None
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"{KILLED}: {name}" + (f", {check}" if check else "")


_PROBER = _Prober()


def probe_compile(payload: dict | ShardedCompile, timeout: float = 600.0, spare: bool = True):
    """Compile a module with XLA in the probe process: ``probe_payload``'s dict with the options (None
    when it compiled, else why not), or a ShardedCompile (what ``compile_sharded`` needs back, or why
    not). Raises XlaProbeDied when the child died other than by XLA's abort (killed for memory, say):
    no answer."""
    method = "compile_sharded" if isinstance(payload, ShardedCompile) else "compile"
    return _PROBER.compile(method, payload, timeout, spare)


def compile_sharded(exported, device: str, options: dict, shardings, timeout: float = 600.0):
    """XLA's compile of a sharded ``exported`` with per-pass dumps, done in the child process: the
    XlaResult the parent would have made (its stages, passes, XLA's cost and memory analyses), and no
    compile here, so an XLA that aborts on the module ends the child only (XlaAbortError); a module
    XLA refuses raises its error (RuntimeError with XLA's message). None when the arguments are not
    all on one NamedSharding mesh (then the caller compiles here, after ``guard_compile``)."""
    import jax

    from .xla import XlaResult, XlaStage

    meshes = {(tuple(sh.mesh.axis_names), tuple(int(n) for n in sh.mesh.axis_sizes),
               tuple(t.name for t in sh.mesh.axis_types))
              for sh in shardings if isinstance(sh, jax.sharding.NamedSharding)}
    if len(meshes) != 1 or not all(isinstance(sh, jax.sharding.NamedSharding) for sh in shardings):
        return None
    try:
        blob = bytes(exported.serialize())
    except Exception:  # noqa: BLE001 -- no flatbuffers, or a module JAX cannot serialize: the other road
        return None
    (names, sizes, types), = meshes
    say_phase("XLA compiling the sharded module in a child process, writing a dump after each HLO pass")
    reply = probe_compile(ShardedCompile(blob, device, dict(options), bool(jax.config.jax_enable_x64),
                                         (names, sizes, types), topology_for(device)), timeout, spare=False)
    if isinstance(reply, str):
        if reply.startswith(KILLED):
            raise _sharded_refusal(reply, exported.nr_devices, "compiled")
        raise RuntimeError(reply)
    stages = tuple(XlaStage(*st) for st in reply["stages"])
    return XlaResult(stages, tuple(reply["passes"]), reply["seconds"], reply["options"], _analyses(reply))


def _analyses(reply: dict):
    """The child's cost and memory analyses as ``XlaResult.analyses`` holds them: a Future, here done."""
    from concurrent.futures import Future

    done = Future()
    done.set_result((reply["cost"], reply["memory"]))
    return done


class CompileOnlyUnavailable(RuntimeError):
    """The child cannot compile for the platform asked: it sees no such device, and no compile-only topology
    was given, or libtpu refused it."""


def _child_devices(platform: str, topology: Topology | None) -> list:
    """The devices this child compiles for on ``platform``: its own (the CPU's; a GPU's), else the
    compile-only devices of ``topology`` (a TPU's chips, held by the parent)."""
    import jax

    try:
        found = jax.devices(platform)
    except RuntimeError:  # a CPU-only child asked for an accelerator
        found = []
    if found:
        return list(found)
    if topology is None:
        raise CompileOnlyUnavailable(f"the child process sees no {platform} device and knows no compile-only "
                                     f"topology for these chips")
    try:
        return topology.devices()
    except Exception as e:  # noqa: BLE001 -- libtpu's refusal, said in words
        first = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        raise CompileOnlyUnavailable(f"the compile-only topology {topology.name!r} was refused ({first})") from None


def _child_device(device: str, topology: Topology | None):
    """The device ``device`` ("tpu:0") names, among ``_child_devices``."""
    platform, _, idx = device.partition(":")
    devices = _child_devices(platform, topology)
    return next((d for d in devices if str(d.id) == idx), devices[0])


def _compile_sharded_here(req: ShardedCompile) -> dict:
    """The child's side of ``compile_sharded``: the Exported rebuilt on a mesh of this process's devices."""
    import jax
    import numpy as np
    from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

    from .xla import compile_with_dumps

    names, sizes, types = req.mesh
    exp = jax.export.deserialize(bytearray(req.exported))
    dev = _child_device(req.device, req.topology)
    devices = _child_devices(dev.platform, req.topology)[:int(np.prod(sizes))]
    mesh = Mesh(np.array(devices).reshape(sizes), tuple(names), axis_types=tuple(getattr(AxisType, t) for t in types))
    shardings = [sh if sh is not None else NamedSharding(mesh, PartitionSpec()) for sh in exp.in_shardings_jax(mesh)]
    with jax.enable_x64(req.x64):
        r = compile_with_dumps(exp, dev, req.options, shardings)
        cost, memory = r.cost, r.memory
    return {"stages": [(st.name, st.group, st.text, st.produced_by) for st in r.stages], "passes": list(r.passes),
            "seconds": r.seconds, "options": dict(r.options), "cost": dict(cost), "memory": dict(memory)}


def _compile_here(p: dict) -> None:
    """The child's side of ``probe_compile``: compile the module for its partitions, with its options
    and per-pass dumps, as the workbench's own compile does."""
    import dataclasses

    import jax
    import jax.numpy as jnp

    from .xla import compile_with_dumps

    if p.get("partitions", 1) > 1:
        return _compile_partitioned(p)
    with jax.enable_x64(p["x64"]):
        dev = _child_device(p["device"], p.get("topology"))
        ins = [jax.ShapeDtypeStruct(s, jnp.dtype(d)) for s, d in p["ins"]]
        outs = [jax.ShapeDtypeStruct(s, jnp.dtype(d)) for s, d in p["outs"]]

        def placeholder(*_):
            results = tuple(jnp.zeros(o.shape, o.dtype) for o in outs)
            return results[0] if len(results) == 1 else results

        base = jax.export.export(jax.jit(placeholder), platforms=[dev.platform])(*ins)
        exported = dataclasses.replace(base, module_kept_var_idx=tuple(range(len(ins))),
                                       mlir_module_serialized=p["bytecode"])
        compile_with_dumps(exported, dev, p["options"])
    return None


def _compile_module_here(p: dict) -> dict:
    """The child's side of ``compile_guarded``: compile the module with the serialized CompileOptions the
    parent built (its dump folder among them) on the devices it names; the compile's seconds and XLA's
    cost and memory analyses."""
    import time

    from jax._src.lib import xla_client as xc

    from .xla import xla_cost, xla_memory

    by_id = {d.id: d for d in _child_devices(p["platform"], p.get("topology"))}
    devices = tuple(by_id[i] for i in p["device_ids"])
    options = xc.CompileOptions.ParseFromString(p["options"])
    t0 = time.perf_counter()
    with _module_for(devices[0].client, p["module"]) as module:
        exe = _compiler_of(devices[0].client)(module, executable_devices=xc.DeviceList(devices), compile_options=options)
    return {"seconds": time.perf_counter() - t0, "cost": xla_cost(exe), "memory": xla_memory(exe)}


@contextlib.contextmanager
def _module_for(client, bytecode: bytes):
    """The module as ``client``'s compile takes it: a compile-only client (a TPU topology's) takes an MLIR module,
    not bytecode (measured: "incompatible function arguments"), so it is parsed in JAX's context, which stays
    open for the compile."""
    from jax._src.lib import _jax

    if not isinstance(client, _jax.CompileOnlyPyClient):
        yield bytecode
        return
    from jax._src.interpreters import mlir as jmlir
    from jaxlib.mlir import ir

    with jmlir.make_ir_context():
        yield ir.Module.parse(bytecode)


def _compile_partitioned(p: dict) -> None:
    """Compile a sharded module for its partitions on the first as many devices of its platform, as
    JAX's own compile of a sharded program does (SPMD partitioning with Shardy), with its options."""
    import jax
    import numpy as np
    from jax._src import compiler
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib import xla_client as xc
    from jaxlib.mlir import ir

    n = p["partitions"]
    devices = _child_devices(p["device"].partition(":")[0], p.get("topology"))
    if len(devices) < n:
        raise RuntimeError(f"the module has {n} partitions and this process {len(devices)} devices")
    devices = devices[:n]
    options = compiler.get_compile_options(num_replicas=1, num_partitions=n, device_assignment=np.array(devices).reshape(1, n),
                                           env_options_overrides=dict(p["options"]))
    with jax.enable_x64(p["x64"]), jmlir.make_ir_context():
        module = ir.Module.parse(p["bytecode"])
        _compiler_of(devices[0].client)(module, executable_devices=xc.DeviceList(tuple(devices)), compile_options=options)


def _compiler_of(client):
    """``client``'s compile: without loading for a compile-only client (a TPU topology's), else with."""
    from jax._src.lib import _jax

    return client.compile if isinstance(client, _jax.CompileOnlyPyClient) else client.compile_and_load


def _refusal_is_the_answer(compile_here: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A child method whose exception (XLA's refusal of the module or an option) is its answer, as
    ``"<Error>: <first line>"``, not an error: only a dead child is more than an answer."""

    @functools.wraps(compile_here)
    def method(request):
        try:
            return compile_here(request)
        except Exception as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            return f"{type(e).__name__}: {first[:300]}"

    return method


def compile_here_as_asked(p: dict) -> None:
    """In a child: compile a module from its text as ``probe_compile``'s payload asks (another child, the LLO one,
    compiles this way too)."""
    return _compile_here(p)


def compile_module_here_as_asked(p: dict) -> dict:
    """In a child: compile a module with the serialized CompileOptions a parent built (``program.compile_request``),
    on the devices it names; its seconds and XLA's analyses."""
    return _compile_module_here(p)


METHODS = {"compile": _refusal_is_the_answer(_compile_here),
           "compile_module": _refusal_is_the_answer(_compile_module_here),
           "compile_sharded": _refusal_is_the_answer(_compile_sharded_here)}


def _warm_up() -> None:
    """The child's start: import JAX, start XLA's CPU client, and compile a small program of the kinds of op
    a model has (a matmul, an elementwise chain, a reduction) with per-pass dumps, so that the first real
    compile pays less of the code paths' first use (measured on the attention example with algsimp off:
    1.7-1.9 s against 2.0-2.1 s after a warm-up of ``x + 1`` alone; that compile takes 2.0 s in a warm
    process). The dump folder is named by this process, so ``leftovers`` removes it if the child is killed."""
    import shutil
    import tempfile

    import jax
    import jax.numpy as jnp

    from .xla import dump_options

    def layer(w, x):
        y = jnp.tanh(x @ w)
        return y - jax.nn.logsumexp(y, axis=-1, keepdims=True)

    d = tempfile.mkdtemp(prefix=leftovers.prefix("xla"))
    try:
        jax.jit(layer).lower(jnp.ones((16, 16)), jnp.ones((4, 16))).compile(compiler_options=dump_options(d))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def warm_soon() -> None:
    """Start the probe child in the background (JAX's import and XLA's client), so that the first compile
    with disabled passes -- an XLA pass toggle -- finds it ready. Never blocks, never raises."""
    try:
        _PROBER.start_soon()
    except Exception:  # noqa: BLE001 -- the first compile starts it, or says why it cannot
        pass


def release_spare() -> None:
    """End the warm spare child (when a burst of probes is over)."""
    _PROBER.release_spare()


if __name__ == "__main__":
    # Serve from the module under its own name, as the pipeline worker does (ShardedCompile is unpickled
    # as workbench.pipeline.xla_probe's).
    from workbench.pipeline import xla_probe as _self

    serve(_self.METHODS, _self._warm_up)
