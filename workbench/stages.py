"""The values at the bottom of the workbench: ``Stage`` (one program text after one step), ``Spec``
(everything that decides an Exploration's stages) and ``Traced`` (what tracing the user's function
produced). Frozen, typed, and importing nothing from the layers above. ``Staged`` is the Protocol of
what holds one exploration's stages, which the layers below the facade ask for instead of naming it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Protocol

from .errors import StageError, WorkbenchError
from .options import PatternSelection

__all__ = ["Stage", "StageKind", "Spec", "Staged", "Traced", "Loaded", "Edit", "EditKind", "STABLEHLO", "ArgLeaf",
           "Signature"]

STABLEHLO = "stablehlo"  # the stage of the module as the user's jit lowered it: every pipeline's start
StageKind = Literal["trace", "mlir", "xla", "backend"]  # a Stage's group: which tool made it
EditKind = Literal["text", "insert", "remove"]


@dataclass(frozen=True)
class Stage:
    """One program text after one step.

    ``produced_by`` is the exact pass or pipeline string that made it from ``parent`` (pasteable into
    ``enzymexlamlir-opt --pass-pipeline=...`` for MLIR stages). ``seconds`` is None where the tool
    that made it does not report a time (single XLA passes). ``cached`` is True when the step was
    served from a cache instead of run: an MLIR stage whose input text and pass ran before (in any
    Exploration of this session), or ``xla:optimized`` of a module XLA compiled before; its
    ``seconds`` is then the time measured on that first run, not a new measurement. ``error`` is
    set on a stage that failed; its ``text`` is then empty.
    """

    name: str
    group: StageKind
    text: str
    produced_by: str
    changed: bool
    seconds: float | None
    parent: str | None
    error: str | None = None
    text_with_locations: str = field(default="", repr=False, compare=False)
    cached: bool = field(default=False, compare=False)
    edit: str = ""  # "text": its text replaced by hand; "inserted": its pass added; "after-removed": the one before left out

    @property
    def is_module(self) -> bool:
        """Whether the text is an MLIR module that passes can run on, the cost model can read and JAX
        can run: StableHLO as lowered, the text given, an MLIR pipeline stage; not the jaxpr, not
        XLA's HLO or backend output, not a failed stage."""
        return self.group in ("trace", "mlir") and self.name != "jaxpr" and not self.error

    @property
    def lines(self) -> int:
        return self.text.count("\n") + (1 if self.text and not self.text.endswith("\n") else 0)

    def __repr__(self) -> str:
        state = "ERROR" if self.error else ("changed" if self.changed else "unchanged")
        t = "" if self.seconds is None else f", {self.seconds * 1e3:.1f} ms" + (" (cached)" * self.cached)
        return f"Stage({self.name!r}, {self.group}, {state}, {self.lines} lines{t})"

    def _repr_html_(self) -> str:
        from markupsafe import Markup

        return str(Markup("<details open><summary><code>{}</code></summary><pre>{}</pre></details>").format(
            repr(self), self.error or self.text))


@dataclass(frozen=True)
class Edit:
    """One edit of an exploration's pipeline, applied in order when it is built: ``kind`` "text" (the module
    after step ``at`` replaced by ``text``; ``at`` -1: the module the pipeline starts from), "insert" (the
    pass ``pass_`` run as step ``at``, the later steps one further) or "remove" (step ``at``, ``pass_``,
    left out). ``at`` counts the pipeline's steps as they are when the edit is made (earlier edits
    applied); ``stage`` is the stage's name then, for people."""

    kind: EditKind
    at: int
    stage: str
    text: str = field(default="", repr=False)
    pass_: str = ""

    def __repr__(self) -> str:
        what = {"text": f"the text of {self.stage!r} replaced by hand",
                "insert": f"{self.pass_!r} inserted after {self.stage!r}",
                "remove": f"{self.stage!r} ({self.pass_[:60]}) removed"}[self.kind]
        return f"Edit({what})"


@dataclass(frozen=True)
class Spec:
    """Everything that decides an Exploration's stages."""

    title: str
    pipeline: str = "all"
    inline: bool = True
    selection: PatternSelection = field(default_factory=PatternSelection)
    xla_options: tuple[tuple[str, str], ...] = ()
    device: str = "cpu:0"
    timeout: float = 600.0
    source: Any = field(default=None, compare=False, repr=False)  # a Traced, the input text, or a Loaded
    shardy: str = "none"  # Reactant's shardy_passes mode, resolved (pipeline/shardy.py)
    optimize_communications: bool = True  # Reactant's option of the same name (the Shardy stages' comm passes)
    edits: tuple[Edit, ...] = ()  # hand edits of the pipeline and its texts, in order (``Edit``)

    @property
    def traced(self) -> "Traced | None":
        return self.source if isinstance(self.source, Traced) else None

    @property
    def loaded(self) -> "Loaded | None":
        """What a saved exploration (``wb.load``) holds of its trace, or None."""
        return self.source if isinstance(self.source, Loaded) else None

    @property
    def input_text(self) -> str:
        """The module the MLIR pipeline starts from, with locations (StableHLO as lowered, or the text given)."""
        if isinstance(self.source, Traced):
            return self.source.stablehlo
        if isinstance(self.source, Loaded):
            return self.source.text
        return self.source

    @property
    def signature(self) -> "Signature | None":
        """The traced function's name and arguments (``Signature``), what a saved file recorded of them, or
        None for a program given as text."""
        if isinstance(self.source, Traced):
            return Signature(self.title, self.source.arg_leaves())
        if isinstance(self.source, Loaded):
            return self.source.signature
        return None

    @property
    def xla_disabled(self) -> tuple[str, ...]:
        """The XLA HLO passes this spec skips (its ``xla_disable_hlo_passes``), sorted."""
        value = dict(self.xla_options).get("xla_disable_hlo_passes", "")
        return tuple(sorted(p for p in value.split(",") if p))


@dataclass(frozen=True)
class Traced:
    """What tracing produced: texts for the first two stages, and the ``jax.stages.Lowered`` that
    compiles and calls every later stage as the user's own jit would.

    ``args`` are the traced positional arguments as the user gave them (static ones removed);
    ``call_args(full)`` turns the user's full positional arguments into what the lowered program's
    executable takes (``(args, kwargs)``: flattened as the user's jit flattens them, a library's
    state split from its arrays). ``exported`` is a ``jax.export.Exported`` of the same program,
    built on first use, for the features that need it serialized; where that is impossible it raises
    ``WorkbenchError`` with ``why_not_exported``. ``fn`` and ``all_args`` are kept so the function
    can be evaluated again as the numeric check's reference; ``memo`` holds that reference and the
    as-lowered outputs once computed, shared by every Exploration derived from this trace.
    """

    jaxpr_text: Any  # the jaxpr's text, or what prints it (.result(): trace._Printing, on a thread while the MLIR passes run)
    stablehlo_text: Any  # with locations (stages show it without), or what makes it (.result(): trace._Portable)
    lowered: Any  # jax.stages.Lowered
    args: tuple
    static_argnums: tuple[int, ...]
    seconds_jaxpr: float
    seconds_lower: float
    fn: Callable | None = field(default=None, compare=False, repr=False)
    all_args: tuple = field(default=(), compare=False, repr=False)  # every positional argument, static ones too
    memo: dict = field(default_factory=dict, compare=False, repr=False)
    how: str = ""  # the jit that lowered it, e.g. "jax.jit(f)" or "train_step (a flax JitWrapped)"
    call_args: Callable[[tuple], tuple[tuple, dict]] | None = field(default=None, compare=False, repr=False)
    exporter: Callable[[], Any] | None = field(default=None, compare=False, repr=False)
    why_not_exported: str = ""
    nr_devices: int = 1
    in_avals: tuple = field(default=(), compare=False, repr=False)  # flattened, every argument
    out_avals: tuple = field(default=(), compare=False, repr=False)  # flattened
    platforms: tuple[str, ...] = ()
    host_callbacks: int = 0  # jax.debug.print, pure_callback, io_callback calls in the program
    to_returned: Callable[[tuple, Any], Any] | None = field(default=None, compare=False, repr=False)
    library_jit: str = ""  # the type of a library's jit that lowered it ("JitWrapped", "_JitWrapper"), else ""
    kept_var_idx: tuple[int, ...] | None = None  # the flattened arguments @main takes (None: all)

    def full_args(self, dynamic: tuple) -> tuple:
        """The positional arguments with ``dynamic`` in place of the traced ones (static ones as given)."""
        dynamic = list(dynamic)
        return tuple(a if i in self.static_argnums else dynamic.pop(0) for i, a in enumerate(self.all_args))

    def abstract_args(self, dynamic: tuple | None = None) -> list[str]:
        """Where the traced arguments ``dynamic`` (default: the ones traced with) hold shapes with no
        values (``jax.ShapeDtypeStruct``): enough to trace and compile, not to run. As
        ``"args[0]['w']: float32[3,4]"``."""
        import jax

        found = []
        for path, leaf in jax.tree_util.tree_leaves_with_path(self.args if dynamic is None else tuple(dynamic)):
            if isinstance(leaf, jax.ShapeDtypeStruct):
                shape = ",".join(map(str, leaf.shape))
                found.append(f"args{jax.tree_util.keystr(path)}: {leaf.dtype}[{shape}]")
        return found

    def arg_leaves(self) -> tuple["ArgLeaf", ...]:
        """The traced arguments (static ones left out) as the user gave them, one ``ArgLeaf`` per pytree
        leaf in ``jax.tree_util`` order: where it sits in the tree, its shape and its dtype."""
        import jax
        import numpy as np

        out = []
        for path, leaf in jax.tree_util.tree_leaves_with_path(self.args):
            dtype = getattr(leaf, "dtype", None)
            if dtype is None:  # a Python number, or another leaf JAX accepts: its type as numpy reads it
                try:
                    dtype = f"{np.asarray(leaf).dtype} ({type(leaf).__name__})"
                except Exception:  # noqa: BLE001 -- a leaf numpy cannot read: its Python type alone
                    dtype = type(leaf).__name__
            out.append(ArgLeaf(jax.tree_util.keystr(path), tuple(int(d) for d in np.shape(leaf)), str(dtype)))
        return tuple(out)

    def executable_args(self, dynamic: tuple | None = None) -> tuple[tuple, dict]:
        """What the lowered program's executable is called with, for the traced arguments ``dynamic``
        (default: the ones it was traced with)."""
        return self.call_args(self.full_args(self.args if dynamic is None else tuple(dynamic)))

    def module_args(self, dynamic: tuple | None = None) -> list:
        """The arrays ``@main`` takes, in its order, for the traced arguments ``dynamic`` (default:
        the traced ones): the executable's arguments flattened, those JAX pruned as unused left out,
        typed PRNG keys as their raw data, Python numbers as arrays of the type JAX traced them at
        (as the module sees them)."""
        import jax
        import numpy as np

        leaves = jax.tree_util.tree_leaves(self.executable_args(dynamic))
        avals = self.in_avals if len(self.in_avals) == len(leaves) else (None,) * len(leaves)

        def as_module_sees(x, aval):
            if jax.dtypes.issubdtype(getattr(x, "dtype", np.float32), jax.dtypes.extended):
                return jax.random.key_data(x)
            if not hasattr(x, "shape") and aval is not None:  # a Python number: a weakly typed scalar
                return np.asarray(x, dtype=aval.dtype)
            return x

        leaves = [as_module_sees(x, a) for x, a in zip(leaves, avals)]
        return leaves if self.kept_var_idx is None else [leaves[i] for i in self.kept_var_idx]

    def returned(self, program_outputs: Any, dynamic: tuple | None = None) -> Any:
        """What the user's function returns, given what its compiled program returned: the same for
        ``jax.jit`` and plain functions; through a library's jit (``nnx.jit``, ``eqx.filter_jit``) its
        own unpacking, applied to copies of the arguments (the state it writes back lands there)."""
        if self.to_returned is None:
            return program_outputs
        return self.to_returned(self.full_args(self.args if dynamic is None else tuple(dynamic)), program_outputs)

    @property
    def jaxpr(self) -> str:
        """The jaxpr's text (waits for its printing where that still runs)."""
        text = self.jaxpr_text
        return text if isinstance(text, str) else text.result()

    @property
    def stablehlo(self) -> str:
        """The lowered module's text with locations, as every pipeline starts from it (made on first use)."""
        text = self.stablehlo_text
        return text if isinstance(text, str) else text.result()

    def text_for_xla(self) -> str:
        """A text of the lowered module that XLA makes the same HLO of as of ``stablehlo``: that text once it is
        made, else the module as JAX printed it (``stablehlo`` waits for StableHLO's portable round trip)."""
        text = self.stablehlo_text
        return text if isinstance(text, str) else text.for_xla()

    @property
    def exported(self) -> Any:
        if "exported" not in self.memo:
            if self.exporter is None:
                raise WorkbenchError(f"this program cannot be serialized with jax.export: {self.why_not_exported}")
            self.memo["exported"] = self.exporter()
        return self.memo["exported"]


@dataclass(frozen=True)
class Loaded:
    """What a saved exploration (``.hlox``) holds in place of a trace: its first stages as saved
    (``jaxpr`` and ``stablehlo``, or ``input`` for text), the module the MLIR pipeline starts from
    (with locations), the example arguments' shapes and dtypes (flattened, in the module's argument
    order), and their values when they were saved (``arrays``; else ``args`` is empty).
    ``saved_by`` is the versions and date the file records; ``path`` the file it came from."""

    first: tuple[Stage, ...]
    text: str
    avals: tuple[tuple[tuple[int, ...], str], ...]
    args: tuple = field(default=(), compare=False, repr=False)
    saved_by: dict = field(default_factory=dict, compare=False)
    path: str = ""
    signature: "Signature | None" = field(default=None, compare=False)  # None: a program given as text


@dataclass(frozen=True)
class ArgLeaf:
    """One leaf of a traced function's arguments: ``path`` in the arguments' tree as
    ``jax.tree_util.keystr`` writes it (``"[0]['w']"``: the first argument's entry ``w``), ``shape``, and
    ``dtype`` by name (a Python number's as ``"float32 (float)"``-like words)."""

    path: str
    shape: tuple[int, ...]
    dtype: str

    def words(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class Signature:
    """What a golden check holds a program to before comparing its stages: the traced ``function``'s name
    (``spec.title``: ``__name__``, ``"<lambda>"`` for a lambda) and its arguments' leaves (``leaves``, in
    tree order). A golden saved before signatures were recorded has ``leaves`` None (its tree is unknown;
    the flattened module arguments it saved are all there is), and ``function`` None when the saved file
    does not say the program came from a function."""

    function: str | None
    leaves: tuple[ArgLeaf, ...] | None

    def words(self) -> str:
        """``mm(args[0]: float32[16,16], args[1]: float32[16,8])``-like, shortened past eight leaves."""
        name = self.function if self.function is not None else "(a program given as text)"
        if self.leaves is None:
            return f"{name}(arguments not recorded)"
        shown = [f"args{leaf.path}: {leaf.words()}" for leaf in self.leaves[:8]]
        more = len(self.leaves) - len(shown)
        return f"{name}({', '.join(shown)}{f', ... {more} more' if more else ''})"

    def differences(self, now: "Signature") -> list[str]:
        """How ``now`` differs from this (the golden's) signature, in words, first difference first: the
        function's name, the arguments' tree (leaves added, removed or moved), a leaf's shape or dtype.
        Only what both sides recorded is compared; [] when they agree."""
        out = []
        if self.function is not None and now.function is not None and self.function != now.function:
            out.append(f"the function is {self.function!r} in the golden and {now.function!r} now")
        if self.leaves is None or now.leaves is None:
            return out
        mine, theirs = [leaf.path for leaf in self.leaves], [leaf.path for leaf in now.leaves]
        if mine != theirs:
            gone = [p for p in mine if p not in theirs]
            new = [p for p in theirs if p not in mine]
            said = (f"the golden has {len(mine)} argument leaves, the program now {len(theirs)}"
                    if len(mine) != len(theirs) else "the arguments' leaves sit elsewhere in their tree")
            if gone:
                said += "; only in the golden: " + ", ".join(f"args{p}" for p in gone[:4]) + (" ..." * (len(gone) > 4))
            if new:
                said += "; only now: " + ", ".join(f"args{p}" for p in new[:4]) + (" ..." * (len(new) > 4))
            out.append(f"the arguments' tree differs: {said}")
        at = {leaf.path: leaf for leaf in now.leaves}
        for leaf in self.leaves:
            other = at.get(leaf.path)
            if other is not None and (other.shape, other.dtype) != (leaf.shape, leaf.dtype):
                what = "dtype" if other.shape == leaf.shape else "shape" if other.dtype == leaf.dtype else "shape and dtype"
                out.append(f"argument args{leaf.path}'s {what}: {leaf.words()} in the golden, {other.words()} now")
        return out


class Staged(Protocol):
    """One exploration's stages as built: its ``spec``, every stage in order (``stages``), the MLIR
    pipeline's own (``pipeline_stages``), and the errors that stopped the whole build (``error``) or the
    pipeline (``pipeline_error``). The facade's ``Exploration`` has these; a layer below it that reads an
    exploration declares a Protocol extending this one with what else it reads."""

    @property
    def spec(self) -> Spec: ...

    @property
    def stages(self) -> list[Stage]: ...

    @property
    def pipeline_stages(self) -> list[Stage]: ...

    @property
    def error(self) -> StageError | None: ...

    @property
    def pipeline_error(self) -> StageError | None: ...
