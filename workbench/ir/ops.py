"""The one op counter for program text: which ops a module holds, by name, read off the text.

MLIR: an op is the name at op position -- the start of a line, after its results (``%0 = ``,
``%a, %b:2 = ``): ``stablehlo.add``, a generic ``"stablehlo.add"(...)``, or a name the printer
wrote without its dialect (``return`` and ``call @f`` in a function are ``func``'s, ``module`` is
``builtin``'s). A name in a string, an attribute or a type never counts. ``func.func`` counts; the
outermost ``module`` is the container, not an op of the program, so a text without the ``module {}``
wrapper counts the same. stablehlo prints a reduce whose body is one op as ``applies
stablehlo.add``: the body still holds that op and its ``stablehlo.return``, and both count.

HLO: the opcode of every instruction of every computation, parameters included.

Other text (a jaxpr, backend output) holds no op. The counts are those of a walk over the module
parsed by jaxlib (tests/test_ir.py checks them against the cost model's walk), without the parse:
they work on any dialect and on text jaxlib cannot read.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

from .hlo import read_hlo
from .text import OP_NAME, SSA_VALUE, VISIBILITY, input_kind, mask_strings, skip_string, word_at

__all__ = ["op_counts", "op_counts_by_function"]

_RESULT = rf"{SSA_VALUE}(?::\d+)?"
_RESULTS = re.compile(rf"[ \t]*(?:{_RESULT}[ \t]*,[ \t]*)*{_RESULT}[ \t]*=[ \t]*")
_INDENT = re.compile(r"[ \t]*")
_NAME = re.compile(OP_NAME)
_APPLIES = re.compile(r"\bapplies\s+([A-Za-z_][\w$]*(?:\.[\w$]+)+)")
_SYMBOL = re.compile(rf"\s+(?:{VISIBILITY}\s+)?@")
_GENERIC_SYMBOL = re.compile(r"\bsym_name\s*=\s*")


def op_counts(text: str) -> Counter[str]:
    """How many ops of each name the module holds (MLIR op names, or HLO opcodes)."""
    return Counter(name for _, name in _sites(text))


def op_counts_by_function(text: str) -> dict[str, Counter[str]]:
    """The op counts of each function body (MLIR ``func.func @name``) or HLO computation, by name.

    Ops outside any function -- ``func.func`` itself, ``sdy.mesh`` -- are under ``""``; a function
    with an empty body is absent.
    """
    out: dict[str, Counter[str]] = {}
    for function, name in _sites(text):
        out.setdefault(function, Counter())[name] += 1
    return out


def _sites(text: str) -> Iterator[tuple[str, str]]:
    """(function or computation, op name) for every op, in text order."""
    kind = input_kind(text)
    if kind == "hlo":
        for computation in read_hlo(text).computations:
            for ins in computation.instructions:
                yield computation.name, ins.opcode
    elif kind == "mlir":
        yield from _mlir_sites(text)


def _mlir_sites(text: str) -> Iterator[tuple[str, str]]:
    depth = 0  # open braces before the line: regions, and attribute dictionaries never span lines
    function, body_depth = "", -1
    first = True
    for line in text.splitlines():
        found = _line_op(line)
        code = mask_strings(line)
        if found is not None:
            name, end = found
            if not (first and name == "builtin.module"):
                yield function, name
                if name.endswith(".reduce") and (m := _APPLIES.search(code, end)):
                    yield function, m.group(1)
                    yield function, f"{name.partition('.')[0]}.return"
            first = False
        before = depth
        depth += code.count("{") - code.count("}")
        if function and depth <= body_depth:
            function = ""
        elif found is not None and found[0] == "func.func" and not function and depth > before:
            function, body_depth = _function_name(line, found[1]), before


def _line_op(line: str) -> tuple[str, int] | None:
    """The op at the start of ``line`` and where its name ends, or None if the line has no op."""
    results = _RESULTS.match(line)
    pos = results.end() if results else _INDENT.match(line).end()
    if line.startswith('"', pos):  # the generic form: the name is a string
        end = skip_string(line, pos)
        return (line[pos + 1:end - 1], end) if end - pos > 2 else None
    m = _NAME.match(line, pos)
    if m is None:
        return None
    name, tail = m.group(), line[m.end():]
    if "." in name:
        return name, m.end()
    # A bare word is an op when it defines results or reads values or symbols ("return %0",
    # "call @f(...)", "return"); region keywords ("cond {", "reducer(%a: ...)") are not.
    rest = tail.lstrip()
    if results or not rest or (tail[0].isspace() and rest[0] in "%@"):
        return ("builtin.module" if name == "module" else f"func.{name}"), m.end()
    if name == "module" and tail[0] in " {":  # "module {", "module attributes {...} {"
        return "builtin.module", m.end()
    return None


def _function_name(line: str, end: int) -> str:
    """The symbol of the ``func.func`` whose name ends at ``end``: ``@main``, ``@"a b"``, or the
    ``sym_name`` of the generic form."""
    m = _SYMBOL.match(line, end) or _GENERIC_SYMBOL.search(mask_strings(line), end)
    return (word_at(line, m.end()) or "") if m is not None else ""
