"""The one way into jaxlib's MLIR: parse module text with JAX's own context.

Every reader of MLIR text that needs a real IR object (cost, graph, the route to ``jax.export``)
comes here. Enzyme-JaX can leave ``enzymexla.*`` attributes that jaxlib's MLIR cannot parse; they are
dropped before parsing (``pipeline.exported.prepare_for_jax``) by ``strip_enzymexla_attributes`` here (XLA's
input and the readers, where it parses to what enzyme-ad's pass gives, in a tenth of the time; and without
enzyme-ad) or by enzyme-ad's own ``drop-unsupported-attributes`` pass (elsewhere, and where what the
scrubber left does not parse).
"""
from __future__ import annotations

import re
import threading

from ..errors import ModuleParseError
from .text import skip_string

__all__ = ["parse_module", "context_ahead", "side_by_side_modules", "strip_enzymexla_attributes", "ModuleParseError", "OpaqueAttribute",
           "attribute", "attribute_items", "attribute_names"]


_SPARE: list = []  # JAX MLIR contexts made ahead (``context_ahead``), each for one parse_module
_WANTED = threading.Event()  # context_ahead asked the maker thread for one
_MAKER: list[threading.Thread] = []  # that thread, once started
_STARTING = threading.Lock()
_WARM = """module {
  func.func public @main(%a: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.add %a, %a : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
"""


def context_ahead() -> None:
    """Have the next parse_module's context made on a thread, unless one is ready. A context costs ~4 ms
    to make and ~1.3 ms more at its first parse (its dialects load then), on the way to XLA's compile of
    every exploration. Callers ask where the thread that would otherwise wait for the GIL is about to
    wait without it: the explore's thread for the pass worker, XLA's compile thread in the compile (which
    then leaves one ready for the next exploration). The thread is started once and woken by an event:
    starting a thread makes its starter wait for it, and a starter that then wants the GIL back waits
    as long as the context takes to make."""
    if _SPARE:
        return
    if not _MAKER:
        with _STARTING:
            if not _MAKER:
                thread = threading.Thread(target=_make_contexts, name="wb-mlir-context", daemon=True)
                thread.start()
                _MAKER.append(thread)
    _WANTED.set()


def _make_contexts() -> None:
    from jax._src.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir

    while True:
        _WANTED.wait()
        _WANTED.clear()
        if _SPARE:
            continue
        try:
            context = jax_mlir.make_ir_context()
            ir.Module.parse(_WARM, context=context)  # loads the dialects a module of JAX's uses
            _SPARE.append(context)
        except Exception:  # noqa: BLE001 -- the parse makes its own context then
            pass


def _fresh_context():
    """A new JAX MLIR context for one module (never shared: what a context uniques stays in it): one made
    ahead when there is one."""
    from jax._src.interpreters import mlir as jax_mlir

    try:
        return _SPARE.pop()
    except IndexError:
        return jax_mlir.make_ir_context()


def parse_module(text: str, *, allow_unregistered: bool = True):
    """``text`` as a ``jaxlib.mlir.ir.Module`` in a fresh JAX context; ModuleParseError if it does not parse.

    With ``allow_unregistered``, ops of dialects jaxlib does not register (``enzymexla.rotate``)
    parse as opaque ops whose results are still typed, which is all a reader of the dataflow needs;
    without it, only what JAX itself can compile parses.
    """
    from jax._src.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir

    try:
        return ir.Module.parse(text, context=_fresh_context())
    except ir.MLIRError as err:
        if not allow_unregistered:
            raise ModuleParseError(f"JAX's MLIR context cannot parse this module: {err}") from None
    ctx = jax_mlir.make_ir_context()
    ctx.allow_unregistered_dialects = True
    try:
        return ir.Module.parse(text, context=ctx)
    except ir.MLIRError as err:
        raise ModuleParseError(
            f"cannot parse the module even with unregistered dialects allowed: {err}. "
            "Check that the text is one whole MLIR module (print it with the generic form if a "
            "dialect's custom syntax is the problem)."
        ) from None


_ENZYMEXLA_ENTRY = re.compile(r"([{,])[ \t]*enzymexla\.[\w.$-]*")
_ENZYMEXLA_NEXT_ENTRY = re.compile(r"[ \t]*enzymexla\.[\w.$-]*")


def _value_end(text: str, pos: int) -> int:
    """Index of the ``,`` or ``}`` that ends the attribute entry whose name ends at ``pos``."""
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    if pos >= len(text) or text[pos] != "=":
        return pos  # a unit attribute: the name is the whole entry
    depth = 0
    i = pos + 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i = skip_string(text, i)
            continue
        if ch in "([{<":
            depth += 1
        elif ch == ">" and text[i - 1] == "-":
            pass  # the arrow of a function type, not a closing bracket
        elif ch in ")]}>":
            if depth == 0:
                return i
            depth -= 1
        elif ch == "," and depth == 0:
            return i
        i += 1
    return i


def side_by_side_modules(text: str) -> list[str]:
    """The names (``@name``, or ``(unnamed)``) of the modules directly inside an unnamed outer module,
    when it holds nothing else and more than one: text pasted as two modules one after the other, which
    MLIR's parser wraps in one module of its own. Empty for one module (the common case: no parse)."""
    if text.count("module") < 2:
        return []
    from jaxlib.mlir import ir

    module = parse_module(text, allow_unregistered=True)
    with module.context:
        if "sym_name" in module.operation.attributes:
            return []
        inner = [o.operation for o in module.body.operations]
        if len(inner) < 2 or any(o.name != "builtin.module" for o in inner):
            return []
        return ["@" + ir.StringAttr(o.attributes["sym_name"]).value if "sym_name" in o.attributes else "(unnamed)"
                for o in inner]


def strip_enzymexla_attributes(text: str) -> str:
    """The text without ``enzymexla.*`` entries in attribute dictionaries (``enzymexla`` *ops* stay).

    What enzyme-ad's ``drop-unsupported-attributes`` does, done on the text (``pipeline.exported.prepare_for_jax``
    says where each is used): Enzyme-JaX annotates ops with facts (bounds, memory effects, symmetry) whose values jaxlib's
    MLIR may not parse, and they carry no cost or dataflow.
    """
    pieces: list[str] = []
    pos = 0
    while (m := _ENZYMEXLA_ENTRY.search(text, pos)) is not None:
        end = _value_end(text, m.end())
        if m.group(1) == ",":
            pieces.append(text[pos : m.start()])
            pos = end
            continue
        # The entry opens the dictionary: keep the brace, and drop the comma after the entry
        # together with any further enzymexla entries that would now open it.
        pieces.append(text[pos : m.start() + 1])
        while end < len(text) and text[end] == ",":
            nxt = _ENZYMEXLA_NEXT_ENTRY.match(text, end + 1)
            if nxt is None:
                end += 1
                break
            end = _value_end(text, nxt.end())
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces)


class OpaqueAttribute:
    """An attribute jaxlib's Python bindings cannot hand over (a ``DenseElementsAttr`` of complex numbers:
    "Can't cast unknown element type DenseTypedElementsAttr"; through ``NamedAttribute.attr`` that error is
    raised inside a C++ property and aborts the process), held as the text MLIR prints for it."""

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"OpaqueAttribute({self.text[:60]!r})"


def attribute(op, name: str):
    """``op``'s attribute ``name`` (None where it has none), or an ``OpaqueAttribute`` with its text where the
    bindings cannot cast it. Every read of an attribute whose kind is not known beforehand goes through here."""
    op = op.operation
    if name not in op.attributes:
        return None
    try:
        return op.attributes[name]
    except TypeError:  # raised by __getitem__ (not inside a property): the attribute's text instead
        return OpaqueAttribute(_attribute_text(op, name))


def attribute_names(op) -> list[str]:
    """The names of ``op``'s attributes, in order (a name is always safe to read; a value may not be)."""
    attrs = op.operation.attributes
    return [attrs[i].name for i in range(len(attrs))]


def attribute_items(op) -> list[tuple[str, object]]:
    """(name, ``attribute(op, name)``) of each of ``op``'s attributes, never through ``NamedAttribute.attr``."""
    return [(name, attribute(op, name)) for name in attribute_names(op)]


def _attribute_text(op, name: str) -> str:
    """The text of ``op``'s attribute ``name`` as MLIR's generic form prints it (``<{name = ...}>``)."""
    text = op.get_asm(print_generic_op_form=True)
    at = text.find(f"{name} = ")
    if at < 0:
        return ""
    start = at + len(name) + 3
    return text[start:_value_end(text, at + len(name))].strip()

