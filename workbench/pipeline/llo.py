"""The TPU's own code for an exploration's compile: libtpu's LLO and bundles, from a child that compiles again.

libtpu writes the LLO of each kernel after each of its passes, and the final VLIW bundles, only when the
process that loads it starts with ``LIBTPU_INIT_ARGS`` naming a dump folder (``backends.Backend.llo_flags``),
and the notebook's process loaded libtpu long before. So a child of its own (``tpu-llo``) starts with those flags
and compiles the module XLA compiled for the exploration, with the same options, for a compile-only topology of
the same chips (it never opens the chip the notebook holds): the compile the notebook made, made again where
libtpu says what it did. After each compile the child moves what libtpu wrote into the folder the request
names, so one folder holds one compile's dump. Nothing is read here: ``ir.llo.index_llo`` reads the names.

The flags are libtpu's own, undocumented: where a compile writes no LLO (another libtpu, flags it ignores, a
platform without them) ``LloDump.why`` says so in words and the folder is empty.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass

from ..backends import backend_of
from ..children import Child, ChildDied, ChildFailed, ChildTimeout, child_env, leftovers, serve
from ..ir.llo import LloIndex, index_llo

__all__ = ["LloDump", "llo_dump", "llo_folder_index", "LLO_FOLDER_ENV"]

LLO_FOLDER_ENV = "HLO_WORKBENCH_LLO_FOLDER"  # the child's: where its libtpu writes


@dataclass(frozen=True)
class LloDump:
    """One compile's LLO dump: the ``folder`` holding it (the caller removes it), its ``index``, the compile's
    ``seconds`` in the child, and ``why`` there is none ("" where libtpu wrote it)."""

    folder: str
    index: LloIndex
    seconds: float = 0.0
    why: str = ""


def llo_folder_index(folder: str) -> LloIndex:
    """The LloIndex of a dump folder (a user's own ``--xla_jf_dump_to`` folder too): its names and sizes, no
    file opened."""
    with os.scandir(folder) as it:
        return index_llo((e.name, e.stat().st_size) for e in it if e.is_file())


def _child_env() -> dict:
    """The LLO child's environment: a CPU-only child (it never opens the chip) with libtpu's dump flags, into a
    folder of its own made at each start (``leftovers`` removes it with its owner)."""
    from ..backends import TPU

    env = child_env(platforms="cpu")
    folder = tempfile.mkdtemp(prefix=leftovers.prefix("llo"))
    flags = " ".join(f.format(folder=folder) for f in TPU.llo_flags)
    env["LIBTPU_INIT_ARGS"] = f"{env.get('LIBTPU_INIT_ARGS', '')} {flags}".strip()
    env[LLO_FOLDER_ENV] = folder
    return env


_CHILD: Child | None = None
_LOCK = threading.Lock()


def _child() -> Child:
    global _CHILD
    with _LOCK:
        if _CHILD is None:
            _CHILD = Child("workbench.pipeline.llo", "tpu-llo", env=_child_env, ready_within=None)
        return _CHILD


def llo_dump(spec, last, timeout: float = 600.0) -> LloDump:
    """libtpu's LLO dump of XLA's compile of ``last`` (the exploration's last MLIR stage) for ``spec.device``,
    with the exploration's XLA options, compiled again in the LLO child; the folder is new and the caller's
    to remove. A device whose backend writes no LLO, a compile the child cannot make, or a libtpu that
    wrote nothing gives an empty dump with ``why``."""
    from .build import xla_lowering
    from .program import compile_request
    from .xla_probe import probe_payload, topology_for

    device = spec.device if isinstance(spec.device, str) and spec.device else None
    if device is None:
        from ..backends import default_device_id

        device = default_device_id()
    backend = backend_of(device)
    folder = tempfile.mkdtemp(prefix=leftovers.prefix("llo"))
    if not backend.llo_flags:
        return LloDump(folder, LloIndex(), 0.0, f"{device} is not a TPU: its backend's own output is in the backend:* "
                                                 "stages (LLVM IR on a CPU, PTX on a GPU), not LLO")
    topology = topology_for(device)
    if topology is None:
        return LloDump(folder, LloIndex(), 0.0, f"no compile-only topology is known for {device}'s chips, so no "
                                                 "child can compile for them to dump their LLO")
    options = dict(spec.xla_options)
    source = last.text_with_locations or last.text
    request = None
    try:
        lowered, partitions = xla_lowering(spec, source)
        if partitions > 1:
            return LloDump(folder, LloIndex(), 0.0, "the LLO of a module sharded over several chips is not read yet: "
                                                     "explore it on one chip")
        request = compile_request(lowered, options)
    except Exception:  # noqa: BLE001 -- the module's text is compiled instead
        request = None
    if request is not None:
        payload = {"how": "module", "request": {**request, "topology": topology}}
    else:  # host callbacks on a TPU are handed to XLA as objects: the module's text is compiled instead
        payload = {"how": "text", "request": {**probe_payload(source, device), "options": options}}
    payload["folder"] = folder
    t0 = time.perf_counter()
    try:
        reply = _child().call("llo", (payload,), timeout).payload
    except ChildFailed as e:
        return LloDump(folder, LloIndex(), time.perf_counter() - t0, f"XLA refused the compile for the LLO dump ({e.message})")
    except ChildDied as e:
        return LloDump(folder, LloIndex(), time.perf_counter() - t0,
                       f"the child compiling for the LLO dump {e}; this process lives on")
    except ChildTimeout:
        return LloDump(folder, LloIndex(), time.perf_counter() - t0,
                       f"the compile for the LLO dump gave no answer within {timeout:g} s and was ended")
    index = llo_folder_index(folder)
    why = "" if index else ("libtpu wrote no LLO for this compile: its dump flags (" + " ".join(
        f.split("=")[0] for f in backend.llo_flags) + ") did nothing in this libtpu")
    return LloDump(folder, index, float(reply.get("seconds", time.perf_counter() - t0)), why)


# -- the child's side ---------------------------------------------------------------------------------------
def _llo(p: dict) -> dict:
    """Compile the request (a parent's serialized CompileOptions, or a module's text), then move what libtpu
    wrote meanwhile into ``p["folder"]``."""
    from .xla_probe import compile_here_as_asked, compile_module_here_as_asked

    source = os.environ.get(LLO_FOLDER_ENV, "")
    for name in os.listdir(source) if source else ():  # an earlier compile's that was not moved (it failed)
        _remove(os.path.join(source, name))
    t0 = time.perf_counter()
    try:
        if p["how"] == "module":
            compile_module_here_as_asked(p["request"])
        else:
            compile_here_as_asked(p["request"])
    finally:
        moved = 0
        for name in os.listdir(source) if source else ():
            shutil.move(os.path.join(source, name), os.path.join(p["folder"], name))
            moved += 1
    return {"seconds": time.perf_counter() - t0, "moved": moved}


def _remove(path: str) -> None:
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.remove(path)
        except OSError:
            pass


METHODS = {"llo": _llo}


if __name__ == "__main__":
    from workbench.pipeline import llo as _self

    serve(_self.METHODS)
