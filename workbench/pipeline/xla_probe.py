"""Compiles that cannot take the kernel down: XLA run in a child process first, where it is allowed to abort.

Some XLA options make XLA abort the whole process instead of raising (a failed CHECK): disabling the HLO
passes a module cannot compile without (``copy-insertion`` for a program with random numbers is one). A
notebook kernel must never die of that, so a compile with user-disabled passes is first tried here, in a
fresh interpreter (``python -m workbench.pipeline.xla_probe``): ``guard_compile`` raises
``XlaAbortError`` with XLA's CHECK message when the child died, and lets the real compile go on
otherwise. The bisection of XLA passes (``analysis.bisect``) asks ``probe_compile`` which passes are
always needed the same way.

Only a SIGABRT is XLA refusing the options (a failed CHECK ends in ``abort()``); another signal is XLA
crashing on the module (a RET_CHECK of the SPMD pipeline can end in SIGSEGV). A SIGKILL -- what the
kernel's out-of-memory killer sends -- or an exit says nothing about the module: ``probe_compile``
raises ``XlaProbeDied`` then, and no verdict is kept, so the next call tries again.
Requests and answers are numbered, and an interrupted wait ends the child, so an answer is never
taken for another request's.

A sharded module is tried there too, whatever its options: XLA's SPMD pipeline can fail a RET_CHECK
that ends the process (measured: the sharded ``scan`` example through ``pipeline="canonicalize"`` and
Shardy's propagation stage, "hlo_sharding.cc:747 leaf_count == tuple_elements_.size()"). The child
compiles it for the same number of partitions on as many devices (its CPU device count is the
parent's), without the Exported wrapper; a verdict is kept per module and options, so the run after
an explore does not try again.
"""
from __future__ import annotations

import atexit
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection

from ..errors import XlaAbortError, XlaProbeDied
from . import leftovers
from .channel import Request, Response, ended, exchange

__all__ = ["XlaAbortError", "XlaProbeDied", "guard_compile", "compile_sharded", "probe_compile", "probe_payload",
           "release_spare", "remember_verdict", "serve_probes"]

KILLED = "XLA killed the compiling process"






def _death(code: int | None, check: str | None) -> str:
    """XlaProbeDied's message for a child that ended with ``code`` (Popen's returncode), not by XLA's crash."""
    if code == -signal.SIGKILL:
        return (f"the child process compiling this module with XLA {ended(code)}: the compile ran out of "
                "memory. That says nothing about the module or its options, so nothing is kept: free memory "
                "(other kernels, big arrays) and try again, or try a smaller program")
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
            "partitions": int(partitions)}


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
        _VERDICTS[key] = probe_compile({**probe_payload(source, device, partitions), "options": dict(options)},
                                       timeout, spare=False)
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


class _Prober:
    """Fresh interpreters (``python -m workbench.pipeline.xla_probe``, never a fork: JAX is not fork-safe)
    that compile modules with XLA on request. One is started on first use, with a spare that warms up
    (imports JAX, starts XLA's CPU client) meanwhile, so that after a death the next compile does not
    wait for a whole start; ``release_spare`` ends the spare when the probing is over."""

    def __init__(self):
        self._lock = threading.Lock()
        self._live: tuple | None = None  # (process, connection)
        self._spare: tuple | None = None
        self._next_id = 0
        self.log_path: str | None = None  # the children's stderr (XLA's CHECK failures), made on first use

    def _start(self) -> tuple:
        if self.log_path is None:
            self.log_path = leftovers.log_file("xla-probe")
        parent, child = socket.socketpair()
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
        with open(self.log_path, "ab") as log:
            proc = subprocess.Popen([sys.executable, "-P", "-m", "workbench.pipeline.xla_probe", str(child.fileno())],
                                    pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    env={**os.environ, "PYTHONPATH": path, "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                                         "XLA_FLAGS": _child_xla_flags()})
        child.close()
        return proc, Connection(parent.detach())

    def compile(self, payload: dict, timeout: float, spare: bool = True) -> str | None:
        """None when XLA compiled it; else why not (its error, or KILLED, the signal and XLA's CHECK message
        when XLA ended the child). A child killed by SIGKILL, that exited, or that did not answer within
        ``timeout`` (it is ended) raises XlaProbeDied.
        ``spare``: keep a second child warming up meanwhile (for a burst of probes that may kill children)."""
        with self._lock:
            if self._live is None or self._live[0].poll() is not None:
                self._live, self._spare = (self._spare or self._start()), None
            if spare:
                self._spare = self._spare or self._start()
            proc, conn = self._live
            offset = leftovers.bounded(self.log_path)
            self._next_id += 1
            rid = self._next_id
            try:
                answer, _ = exchange(conn, Request(rid, "compile", (payload,)), timeout)
            except (EOFError, BrokenPipeError, ConnectionResetError):
                try:
                    code = proc.wait(10)
                except subprocess.TimeoutExpired:
                    code = None
                self._drop()
                with open(self.log_path, "rb") as f:
                    f.seek(offset)
                    said = [re.sub(r"^[EFWI]\d{4} [\d:.]+\s+\d+ \S+\] ", "", ln.strip())  # glog's prefix
                        for ln in f.read().decode(errors="replace").splitlines()
                        if "Check failed" in ln or "RET_CHECK failure" in ln]
                check = said[0][:200] if said else None
                if code is None or code >= 0 or code == -signal.SIGKILL:  # not XLA's doing: no verdict
                    raise XlaProbeDied(_death(code, check)) from None
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"signal {-code}"
                return f"{KILLED}: {name}" + (f", {check}" if check else "")
            except BaseException:  # interrupted: the answer would be unread, the stream perhaps cut mid-message
                self._drop()
                raise
            if answer is None:  # slow, not refused: a verdict would stand in for a compile that never ended
                self._drop()
                raise XlaProbeDied(
                    f"the child process compiling this module with XLA gave no answer within {timeout:g} s (the "
                    "exploration's timeout) and was ended. Whether XLA accepts the module is not known, so nothing "
                    "is kept: explore with a larger timeout= for a module this large, and the next call tries again")
            return answer.payload

    def _drop(self, which: str = "_live") -> None:
        got = getattr(self, which)
        setattr(self, which, None)
        if got is not None:
            proc, conn = got
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            conn.close()

    def release_spare(self) -> None:
        with self._lock:
            self._drop("_spare")

    def close(self) -> None:
        self._drop("_live")
        self._drop("_spare")
        if self.log_path is not None:
            try:
                os.unlink(self.log_path)
            except OSError:
                pass
            self.log_path = None


def _child_xla_flags() -> str:
    """The parent's XLA_FLAGS, with its number of CPU devices (a sharded module's partitions need them)."""
    import jax

    flags = os.environ.get("XLA_FLAGS", "")
    count = len(jax.devices("cpu"))
    if count > 1 and "xla_force_host_platform_device_count" not in flags:
        flags = f"{flags} --xla_force_host_platform_device_count={count}".strip()
    return re.sub(r"\s+", " ", flags)


_PROBER = _Prober()
atexit.register(_PROBER.close)


def probe_compile(payload: dict, timeout: float = 600.0, spare: bool = True) -> str | None:
    """Compile a module with XLA in the probe process: None when it compiled, else why not. Raises
    XlaProbeDied when the child died other than by XLA's abort (killed for memory, say): no answer."""
    return _PROBER.compile(payload, timeout, spare)


def serve_probes(conn: Connection) -> None:
    """The probe process's loop: compile each module it is sent (with per-pass dumps, as the
    workbench's own compile) and answer None or the error, until the client closes the connection."""
    import dataclasses

    import jax
    import jax.numpy as jnp

    from .trace import resolve_device
    from .xla import compile_with_dumps

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C reaches the group; the parent decides
    jax.jit(lambda x: x + 1).lower(1.0).compile()  # start XLA's CPU client before the first request comes
    while True:
        try:
            req: Request = conn.recv()
        except EOFError:
            return
        p, = req.args
        try:
            if "dumps" in p:
                conn.send(Response(req.id, "ok", _compile_with_dumps_here(p)))
                continue
            if p.get("partitions", 1) > 1:
                _compile_partitioned(p)
                conn.send(Response(req.id, "ok", None))
                continue
            with jax.enable_x64(p["x64"]):
                dev = resolve_device(p["device"])
                ins = [jax.ShapeDtypeStruct(s, jnp.dtype(d)) for s, d in p["ins"]]
                outs = [jax.ShapeDtypeStruct(s, jnp.dtype(d)) for s, d in p["outs"]]

                def placeholder(*_):
                    results = tuple(jnp.zeros(o.shape, o.dtype) for o in outs)
                    return results[0] if len(results) == 1 else results

                base = jax.export.export(jax.jit(placeholder), platforms=[dev.platform])(*ins)
                exported = dataclasses.replace(base, module_kept_var_idx=tuple(range(len(ins))),
                                               mlir_module_serialized=p["bytecode"])
                compile_with_dumps(exported, dev, p["options"])
            conn.send(Response(req.id, "ok", None))
        except Exception as e:  # XLA's refusal of the module or an option: the answer, not the end
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            conn.send(Response(req.id, "ok", f"{type(e).__name__}: {first[:300]}"))


def compile_sharded(exported, device: str, options: dict, shardings, timeout: float = 600.0):
    """XLA's compile of a sharded ``exported`` with per-pass dumps, done in the child process: the
    XlaResult the parent would have made (its stages, passes, XLA's cost and memory analyses), and no
    compile here, so an XLA that aborts on the module ends the child only (XlaAbortError); a module
    XLA refuses raises its error (RuntimeError with XLA's message). None when the arguments are not
    all on one NamedSharding mesh (then the caller compiles here, after ``guard_compile``)."""
    from concurrent.futures import Future

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
    reply = probe_compile({"dumps": blob, "device": device, "options": dict(options), "x64": bool(jax.config.jax_enable_x64),
                           "mesh": [list(names), list(sizes), list(types)]}, timeout, spare=False)
    if isinstance(reply, str):
        if reply.startswith(KILLED):
            raise _sharded_refusal(reply, exported.nr_devices, "compiled")
        raise RuntimeError(reply)
    done = Future()
    done.set_result((reply["cost"], reply["memory"]))
    stages = tuple(XlaStage(*st) for st in reply["stages"])
    return XlaResult(stages, tuple(reply["passes"]), reply["seconds"], reply["options"], done)


def _compile_with_dumps_here(p: dict) -> dict:
    """The child's side of ``compile_sharded``: the Exported rebuilt on a mesh of this process's devices."""
    import jax
    import numpy as np
    from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

    from .trace import resolve_device
    from .xla import compile_with_dumps

    names, sizes, types = p["mesh"]
    exp = jax.export.deserialize(bytearray(p["dumps"]))
    dev = resolve_device(p["device"])
    devices = jax.devices(dev.platform)[:int(np.prod(sizes))]
    mesh = Mesh(np.array(devices).reshape(sizes), tuple(names), axis_types=tuple(getattr(AxisType, t) for t in types))
    shardings = [sh if sh is not None else NamedSharding(mesh, PartitionSpec()) for sh in exp.in_shardings_jax(mesh)]
    with jax.enable_x64(p["x64"]):
        r = compile_with_dumps(exp, dev, p["options"], shardings)
        cost, memory = r.cost, r.memory
    return {"stages": [(st.name, st.group, st.text, st.produced_by) for st in r.stages], "passes": list(r.passes),
            "seconds": r.seconds, "options": dict(r.options), "cost": dict(cost), "memory": dict(memory)}


def _compile_partitioned(p: dict) -> None:
    """Compile a sharded module for its partitions on the first as many devices of its platform, as
    JAX's own compile of a sharded program does (SPMD partitioning with Shardy), with its options."""
    import jax
    import numpy as np
    from jax._src import compiler
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib import xla_client as xc
    from jaxlib.mlir import ir

    from .trace import resolve_device

    n = p["partitions"]
    devices = jax.devices(resolve_device(p["device"]).platform)
    if len(devices) < n:
        raise RuntimeError(f"the module has {n} partitions and this process {len(devices)} devices")
    devices = devices[:n]
    options = compiler.get_compile_options(num_replicas=1, num_partitions=n, device_assignment=np.array(devices).reshape(1, n),
                                           env_options_overrides=dict(p["options"]))
    with jax.enable_x64(p["x64"]), jmlir.make_ir_context():
        module = ir.Module.parse(p["bytecode"])
        devices[0].client.compile_and_load(module, executable_devices=xc.DeviceList(tuple(devices)),
                                           compile_options=options)


def release_spare() -> None:
    """End the warm spare child (when a burst of probes is over)."""
    _PROBER.release_spare()


if __name__ == "__main__":
    # Serve from the module under its own name, as the pipeline worker does.
    from workbench.pipeline import xla_probe as _self

    _self.serve_probes(Connection(int(sys.argv[1])))
