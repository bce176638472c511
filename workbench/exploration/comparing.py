"""The facade's side of regression gates: ``save`` (with a measured compile time), ``compile_time``,
``check_outputs`` (outputs made elsewhere, checked against this program) and ``compare_explorations``.
A mixin of ``Exploration``: each method one call down into ``analysis`` or ``artifacts``."""
from __future__ import annotations

from ..analysis.cost import cost_table
from ..analysis.diff.explorations import Comparison, comparison_of
from ..analysis.run.check import Check, check_outputs
from ..analysis.run.compile_time import REPEAT, CompileTime, measure_compile_time
from ..artifacts.saved import save_exploration
from ..artifacts.saved_backend import backend_json
from ..artifacts.versions import versions
from ..errors import WorkbenchError
from .backend_change import kernels_change, kernels_to_save
from .running import remembered_reference

__all__ = ["Comparing", "compare_explorations", "module_args"]


def module_args(spec) -> tuple:
    """The example arguments' values, flattened in the module's argument order (empty when unknown)."""
    if spec.traced is not None:
        return tuple(spec.traced.module_args())
    if spec.loaded is not None:
        return tuple(spec.loaded.args)
    return ()


class Comparing:
    def save(self, path, arrays: bool = False, cost: bool = True, profile: bool = False, compile_time: bool = False):
        """Write this Exploration to ``path`` (a ``.hlox`` file: a zip of JSON and the stage texts,
        never code): every stage, the spec, XLA's passes and analyses, the cost table, the runs made
        so far and the example arguments' shapes and dtypes (their values too with ``arrays``).
        ``wb.load`` reads it back. Written to a temporary file and renamed, so a crash mid-save
        leaves an older file whole. Returns the path. The cost table is what a first save spends
        most of its time on (ex.cost(): each stage read and costed, once per session); ``cost=False``
        leaves it out (a viewer without a kernel then shows none; ``wb.load`` computes its own).
        ``profile=True`` keeps ``ex.profiles`` (taking a run and a compile profile first where none was
        taken) with the profiler's own trace files; ``wb.load(path).profiles`` has them back.
        ``compile_time=True`` measures ``ex.compile_time()`` and keeps it: the golden that
        ``hlo-workbench check --max-compile-time-growth`` holds a later compile to. After ``ex.backend()`` (or
        for a file loaded with one) the TPU's kernel table is kept too, without the LLO: ``wb.load(path).backend()``
        gives it on any machine, and ``hlo-workbench check --max-bundles-growth`` holds a later compile to it."""
        if profile:
            self.profiles.get("run") or self.profile()
            self.profiles.get("compile") or self.compile_profile()
        measured = self.compile_time().as_json() if compile_time else None
        table = None
        if cost:
            try:
                table = cost_table(self)  # for viewers without a kernel (the JupyterLab extension)
            except Exception:  # noqa: BLE001 -- a table that cannot be made must not stop the save
                table = None
        return save_exploration(self, path, arrays=arrays, cost=table, profiles=self.profiles if profile else None,
                                compile_time=measured, backend=backend_json(kernels_to_save(self)))

    def compile_time(self, repeat: int = REPEAT) -> CompileTime:
        """This program's compile time through its pipeline (the MLIR passes in one go, then XLA's compile
        of the final module with this exploration's XLA options) against a bare compile (XLA's compile of
        the program as lowered, XLA's defaults), ``repeat`` rounds interleaved, medians: ``ratio`` holds on a
        noisy machine where the seconds do not (``workbench.analysis.run.compile_time``)."""
        return measure_compile_time(self, self.reference_stage(), self._last_module(), repeat=repeat)

    @property
    def saved_compile_time(self) -> CompileTime | None:
        """The compile time a loaded ``.hlox`` was saved with (``save(compile_time=True)``), else None."""
        saved = self._saved_compile_time
        return CompileTime(**saved) if saved else None

    def check_outputs(self, outputs, args=None, device: str | None = None) -> Check:
        """``outputs`` made elsewhere (a golden file's run, another machine's) checked against this program
        on ``args`` (default: the explored ones) by the numeric check's rule, as a run of a stage would be:
        a pytree of this program's output structure, or its leaves in order (as a ``.hlox`` saves them)."""
        import jax

        device = device or self.spec.device
        ref = remembered_reference(self, self._refs, device, args)
        want = jax.tree.structure(ref.lowered)
        leaves = jax.tree.leaves(outputs)
        if len(leaves) != want.num_leaves:
            raise WorkbenchError(f"the outputs have {len(leaves)} arrays; this program returns {want.num_leaves}")
        return check_outputs(jax.tree.unflatten(want, leaves), ref)


def _versions_of(ex) -> dict:
    loaded = ex.spec.loaded
    return dict(loaded.saved_by) if loaded is not None and loaded.saved_by else versions()


def _label(ex, default: str) -> str:
    loaded = ex.spec.loaded
    if loaded is not None and loaded.path:
        from pathlib import Path

        return Path(loaded.path).name
    return default


def compare_explorations(a, b, run: bool = False, device: str | None = None, repeat: int = 20,
                         labels: tuple[str, str] | None = None) -> Comparison:
    """Two explorations of one program side by side, live or loaded (two versions, two flag sets, two
    pipelines): the stage lists aligned by pass, the first stage whose module differs beyond renaming,
    per stage the ops and cost on both sides and their deltas (``table()``), the final modules' structural
    diffs (``mlir``, ``xla``), the versions and settings that differ, and with ``run=True`` each side's
    final MLIR stage run on ``device`` and timed (``times``), and where both have the TPU's kernels (computed with
    ``ex.backend()`` or saved in the file; none is compiled here) how each fusion's bundles and MXU occupancy
    changed (``kernels()``). ``str()`` says it in lines; ``labels`` name the two (default: a loaded file's name,
    else "a" and "b")."""
    labels = labels or (_label(a, "a"), _label(b, "b"))
    if labels[0] == labels[1]:
        labels = (f"{labels[0]} (a)", f"{labels[1]} (b)")
    times = None
    if run:
        times = tuple(ex.run(device=device, repeat=repeat).timing for ex in (a, b))
    costs = []
    for ex in (a, b):
        try:
            costs.append(cost_table(ex))
        except Exception:  # noqa: BLE001 -- a cost table that cannot be made leaves its columns empty
            costs.append(None)
    kernels, note = kernels_change(a, b, labels)  # only kernels computed or saved: never an LLO compile here
    return comparison_of(a.stages, b.stages, a.spec, b.spec, labels=labels, costs=tuple(costs),
                         versions=(_versions_of(a), _versions_of(b)), times=times, memory=memory_change(a, b),
                         kernels=kernels, kernels_note=note)


def memory_change(a, b):
    """What ``b`` did to ``a``'s peak memory (``analysis.memory.MemoryChange``), None where either has no memory
    to read (a text without a program, a failed compile, a file saved without XLA's live ranges)."""
    try:
        return a.memory().compare(b.memory())
    except WorkbenchError:
        return None

