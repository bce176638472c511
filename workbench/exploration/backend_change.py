"""The kernels two explorations have, side by side: what ``compare_explorations``, a toggle's ``changes_since`` and a
golden's ``max_bundles_growth`` read (``analysis.backend.KernelsChange``), and the kernels of a loaded ``.hlox``.

Which kernels a side has, without compiling: those ``ex.backend()`` computed or read from a dump (``ex._kernels``),
else those a loaded file kept (``SavedKernels``). No comparison starts an LLO compile by itself, with two
exceptions, both on a machine that holds the side's TPU (never on a CPU):

* a toggle's ``changes_since(before)`` (with ``wait``, as it waits for XLA's compile) computes the kernels of the
  exploration after the toggle when those before it exist: a user who looked at the kernels sees what the toggle
  did to them; one who did not pays nothing. The panel asks without ``wait`` and so never compiles for it;
* a golden check with ``max_bundles_growth`` computes the kernels of the program explored now: the limit asks for
  them.

Where a side has none, the note says why ("" when both have them), and a limit says it could not be checked.
"""
from __future__ import annotations

from ..analysis.backend import Kernels, KernelsChange
from ..backends import backend_of, default_device_id
from ..ir.llo import LloIndex

__all__ = ["explored_device", "kernels_known", "kernels_change", "not_compiled_here", "kernels_to_save",
           "compile_kernels_here"]


def explored_device(ex) -> str:
    """The device ``ex`` was explored for ("tpu:0"), JAX's default where its spec names none."""
    d = ex.spec.device
    return d if isinstance(d, str) and d else default_device_id()


def _here(device: str) -> bool:
    """Whether this machine has ``device``'s platform (a TPU file loaded on a CPU: no)."""
    import jax

    try:
        return bool(jax.devices(backend_of(device).platform))
    except RuntimeError:
        return False


def compile_kernels_here(ex) -> bool:
    """Whether ``ex.backend()`` can dump its LLO on this machine: its device's runtime writes LLO and is here."""
    device = explored_device(ex)
    return bool(backend_of(device).llo_flags) and _here(device)


def not_compiled_here(ex) -> Kernels | None:
    """What ``ex.backend()`` gives where it cannot compile: a loaded file's saved table (or why it cannot be read)
    when the file's TPU is not on this machine, an unavailable Kernels saying why when there is no table; None where
    it may compile (the TPU is here; a CPU or GPU, whose ``backend()`` says why it has no LLO)."""
    device = explored_device(ex)
    if not backend_of(device).llo_flags or _here(device):
        return None
    saved = getattr(ex, "_saved_kernels", None)
    if saved is not None:
        return saved
    return Kernels(LloIndex(), None, why=(
        f"this exploration compiled for {device}, which this machine does not have, so no child can dump its LLO here; "
        "ex.backend(dump=folder) reads a dump libtpu wrote for this program, and a .hlox saved after ex.backend() on "
        "the TPU keeps its kernel table"))


def kernels_known(ex) -> Kernels | None:
    """The kernels ``ex`` has without compiling: computed or read from a dump, else a loaded file's (None: none)."""
    computed = getattr(ex, "_kernels", None)
    if computed is not None:
        return computed
    return getattr(ex, "_saved_kernels", None)


def kernels_to_save(ex) -> Kernels | None:
    """The kernels ``ex.save`` keeps: those computed, else those the file it was loaded from kept (a loaded file saved
    again keeps its table); None where neither is available."""
    for k in (getattr(ex, "_kernels", None), getattr(ex, "_saved_kernels", None)):
        if k is not None and k.available:
            return k
    return None


def _why_none(k: Kernels | None, label: str) -> str:
    if k is None:
        return f"{label} has no kernels computed or saved (ex.backend() on the TPU, or a .hlox saved after it)"
    return f"{label} has no kernels: {k.why}"


def kernels_change(a, b, labels: tuple[str, str] = ("before", "after"), compute_b: bool = False
                   ) -> tuple[KernelsChange | None, str]:
    """The kernels of ``a`` and ``b`` side by side, and "" -- or None and why not ("" where neither has any computed
    or saved). ``compute_b``: compute ``b``'s when ``a`` has kernels and ``b``'s TPU is on this machine (see the
    module's docstring)."""
    ka, kb = kernels_known(a), kernels_known(b)
    if kb is None and compute_b and ka is not None and ka.available and compile_kernels_here(b):
        kb = b.backend()
    if ka is None and kb is None:
        return None, ""  # no one asked for kernels: nothing to say
    for k, label in ((ka, labels[0]), (kb, labels[1])):
        if k is None or not k.available:
            return None, _why_none(k, label)
    return KernelsChange(ka, kb), ""
