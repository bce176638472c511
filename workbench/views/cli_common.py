"""What every ``hlo-workbench`` command shares: its exit status, its target, its ``--json`` document.

Exit status, the same meaning for every command (``EXIT_HELP`` says it in each ``--help``):

    0  done, and nothing found: the same, no drift, the check passed
    1  found: a difference, a drift, a regression, a culprit, a stage that failed (stdout says what)
    2  could not do it: the one-line reason on stderr (a target that does not load, an unknown name, input
       that does not parse, a device that is not there)

``--json``: one JSON document on stdout, nothing else. Every document starts ``{"schema": 1,
"command": NAME, "exit": STATUS, ...}``; where the command could not do it (status 2) the rest is
``"error": {"type", "message"}``. ``hlo-workbench schema NAME`` prints the JSON Schema (draft 2020-12)
each command's document follows (``views/cli_schema.py``); the command's own module declares its part
(``command_parser(..., result=...)``).

The target of a command that explores a program (``explore_target``): ``PATH.py:FUNC`` (its arguments
from ``--args`` or the module's ``args()``), a built-in example's name, an MLIR/StableHLO file, or a saved
exploration (``.hlox``).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from ..errors import WorkbenchError
from ..ir.dtypes import element_dtype

__all__ = ["EXIT_OK", "EXIT_FOUND", "EXIT_TROUBLE", "EXIT_HELP", "JSON_VERSION", "RESULTS", "TargetError",
           "builtin_examples", "command_parser", "emit", "error_document", "explore_args", "explore_target",
           "is_saved_exploration", "load_target", "parse_args_spec", "read_text_file", "records", "say"]

EXIT_OK, EXIT_FOUND, EXIT_TROUBLE = 0, 1, 2
JSON_VERSION = 1  # the "schema" of every --json document; a reader checks it before it reads the rest

EXIT_HELP = """\
exit status (the same for every command):
  0  done, nothing found: the same, no drift, the check passed
  1  found: a difference, a drift, a regression, a culprit, a stage that failed (stdout says what)
  2  could not do it (a target that does not load, an unknown name, input that does not parse);
     one line on stderr says why, and with --json the document on stdout has "error"
--json prints one JSON document on stdout instead of text: {"schema": 1, "command": ..., "exit": ...};
'hlo-workbench schema COMMAND' prints the JSON Schema it follows."""

EXAMPLES = "workbench.examples"  # the built-in programs live inside the package, so a wheel has them
# the --args spellings offered (the jaxpr's, and HLO's pred); ir/dtypes.py says which type each one is
DTYPES = ("f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "u32", "pred", "bool")

# command name -> the JSON Schema of its result document's own fields (cli_schema.py wraps it)
RESULTS: dict[str, dict] = {}


class TargetError(WorkbenchError, ValueError):
    """A command's target that cannot be read: no such file, example or function, arguments that do not parse."""


# -- the target ---------------------------------------------------------------------------------------------


def parse_args_spec(spec: str) -> tuple:
    """``"f32[64,64],f32[64,32]"`` -> two random arrays of those shapes (seeded, reproducible)."""
    import jax
    import jax.numpy as jnp

    items = re.findall(r"\s*([a-z0-9]+)\[([0-9,\s]*)\]\s*(?:,|$)", spec)
    rebuilt = ",".join(f"{d}[{s}]" for d, s in items).replace(" ", "")
    if rebuilt != spec.replace(" ", ""):
        raise TargetError(f"--args {spec!r}: expected comma-separated DTYPE[DIMS], e.g. 'f32[64,64],i32[8]'")
    from ..errors import ArrayTooLargeError
    from ..pipeline.array_limit import Planned, refuse_large

    for dtype, _ in items:
        if dtype not in DTYPES:
            raise TargetError(f"--args: unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    shapes = [tuple(int(d) for d in dims.split(",") if d.strip()) for _, dims in items]
    try:  # sized before any is made: a typo'd extra zero must not take the machine's memory
        refuse_large([Planned(f"array {k}", shape, element_dtype(d).name) for k, ((d, _), shape)
                      in enumerate(zip(items, shapes))], "--args asks for random arrays")
    except ArrayTooLargeError as e:
        raise TargetError(str(e)) from None
    key = jax.random.PRNGKey(0)
    out = []
    for (dtype, _), shape in zip(items, shapes):
        key, sub = jax.random.split(key)
        dt = jnp.dtype(element_dtype(dtype))
        if jnp.issubdtype(dt, jnp.floating):
            out.append(jax.random.normal(sub, shape, dt))
        elif dt == jnp.bool_:
            out.append(jax.random.bernoulli(sub, 0.5, shape))
        else:
            out.append(jax.random.randint(sub, shape, 0, 8).astype(dt))
    return tuple(out)


def builtin_examples() -> list[str]:
    """The names of the built-in examples: the modules of ``workbench.examples``."""
    return sorted(f.name[:-3] for f in resources.files(EXAMPLES).iterdir()
                  if f.name.endswith(".py") and not f.name.startswith("_"))


def load_target(target: str | None, args_spec: str | None):
    """``PATH.py:FUNC`` (or an example name) -> (fn, args, title); TargetError saying why it cannot."""
    if target is None:
        target = "attention"
    if ":" not in target and not target.endswith(".py"):
        if target not in builtin_examples():
            raise TargetError(f"no such built-in example: {target} (built-in examples: "
                              f"{', '.join(builtin_examples())}; or give PATH.py:FUNC)")
        mod, func, where, stem = importlib.import_module(f"{EXAMPLES}.{target}"), "fn", target, target
    else:
        path_s, _, func = target.partition(":")
        path, func = Path(path_s), func or "fn"
        if not path.exists():
            raise TargetError(f"no such file: {path} (built-in examples: {', '.join(builtin_examples())})")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(path.parent))
        try:
            spec.loader.exec_module(mod)
        except Exception as e:  # noqa: BLE001 -- the user's module: what it raised, in one line
            raise TargetError(f"importing {path} failed: {type(e).__name__}: {e}") from e
        finally:
            sys.path.remove(str(path.parent))
        where, stem = str(path), path.stem
    if not callable(getattr(mod, func, None)):
        names = [n for n, v in vars(mod).items() if callable(v) and not n.startswith("_")]
        raise TargetError(f"{where} has no function {func!r}; it defines: {', '.join(names)}")
    if args_spec:
        args = parse_args_spec(args_spec)
    elif callable(getattr(mod, "args", None)):
        args = mod.args()
    else:
        raise TargetError(f"give --args for {where}:{func} (e.g. --args 'f32[64,64],f32[64,32]')")
    return getattr(mod, func), args, f"{stem}:{func}"


def is_saved_exploration(path: str) -> bool:
    """Whether ``path`` names a saved exploration (a .hlox file, or a file that starts as a zip archive)."""
    if path.endswith(".hlox"):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PK\x03\x04"
    except OSError:
        return False


def read_text_file(path: str) -> str:
    """The text of ``path`` (``-``: standard input); a WorkbenchError that says why it cannot be read."""
    if path == "-":
        return sys.stdin.read()
    p = Path(path)
    if not p.exists():
        raise WorkbenchError(f"no such file: {path}")
    if p.is_dir():
        raise WorkbenchError(f"{path} is a folder, not a file")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise WorkbenchError(f"{path} is not a text file (it is not UTF-8): give MLIR or XLA HLO text") from None
    except OSError as e:
        raise WorkbenchError(f"cannot read {path}: {e.strerror or e}") from None


def _explore_options(ns) -> dict:
    out = dict(pipeline=ns.pipeline, disable=ns.disable or (), enable=ns.enable or (), device=ns.device,
               xla_disable=ns.xla_disable or ())
    if getattr(ns, "no_nan", False):
        out["no_nan"] = True
    return out


def explore_target(ns):
    """The Exploration the command's TARGET names, with its options (``explore_args``): a saved exploration
    (loaded as saved; the options do not apply), an MLIR/StableHLO file (``wb.explore_text``), else a
    ``PATH.py:FUNC`` or a built-in example (``wb.explore``)."""
    from ..exploration import explore, explore_text, load

    target = ns.target
    if target is not None and is_saved_exploration(target):
        if not Path(target).is_file():
            raise TargetError(f"no such saved exploration: {target}")
        return load(target)
    if target is not None and ":" not in target and not target.endswith(".py") and Path(target).is_file():
        return explore_text(read_text_file(target), title=Path(target).name, **_explore_options(ns))
    fn, args, _ = load_target(target, ns.args)
    return explore(fn, *args, **_explore_options(ns))


def explore_args(sp, default_target: str | None = "attention") -> None:
    """The options of every command that explores a program: its TARGET, --args, the pipeline and its
    toggles, the device, --save and --full-errors."""
    tail = f" (default: {default_target})" if default_target else ""
    sp.add_argument("target", nargs="?" if default_target else None, metavar="TARGET",
                    help="PATH.py:FUNC, a built-in example name, an MLIR/StableHLO file, or a saved "
                    f"exploration (.hlox){tail}")
    sp.add_argument("--args", metavar="SHAPES", help="argument shapes, e.g. 'f32[64,64],f32[64,32]', as "
                    "random arrays (dtypes: " + ", ".join(DTYPES) + "; default: the module's args())")
    sp.add_argument("-p", "--pipeline", default="all", help="a preset (hlo-workbench pipelines lists them) "
                    "or a pass pipeline string; default: all")
    sp.add_argument("--disable", action="append", metavar="P1,P2", help="Enzyme-JaX patterns to switch off "
                    "(comma-separated, repeatable; hlo-workbench patterns lists them)")
    sp.add_argument("--enable", action="append", metavar="P1,P2",
                    help="Enzyme-JaX patterns to switch on (comma-separated, repeatable)")
    sp.add_argument("--xla-disable", action="append", metavar="PASS",
                    help="XLA HLO passes to switch off (comma-separated, repeatable)")
    sp.add_argument("-d", "--device", default=None, help="the device to lower, compile and run for "
                    "(cpu:0, tpu:0, gpu:0, ...); default: where jax.jit computes (JAX's default device)")
    sp.add_argument("--no-nan", action="store_true", help="assume no NaNs (Reactant's no_nan)")
    sp.add_argument("--save", metavar="FILE.hlox", help="also save the exploration (every stage, the "
                    "settings; 'hlo-workbench open FILE.hlox' and wb.load read it)")
    sp.add_argument("--full-errors", action="store_true", help="a failed pass's whole diagnostic: every "
                    "frame of each error, and what the pass runner printed (default: the short form)")


# -- the parser of one command --------------------------------------------------------------------------


def command_parser(sub, name: str, help: str, func: Callable, *, description: str | None = None,
                   result: dict | None = None, explores: bool = False, default_target: str | None = "attention",
                   **kwargs) -> argparse.ArgumentParser:
    """Add command ``name`` to the subparsers ``sub``: its ``--help`` ends with ``EXIT_HELP``; it takes
    ``--json`` where ``result`` (the JSON Schema of its document's own fields, an object schema) is given;
    ``explores``: the options of ``explore_args``. ``func(ns) -> int`` does the work."""
    text = f"{(description or help).rstrip()}\n\n{EXIT_HELP}"
    sp = sub.add_parser(name, help=help, description=text, formatter_class=argparse.RawDescriptionHelpFormatter,
                        **kwargs)
    if explores:
        explore_args(sp, default_target)
    if result is not None:
        RESULTS[name] = result
        sp.add_argument("--json", action="store_true", help="print one JSON document on stdout instead of text "
                        f"('hlo-workbench schema {name}' prints its JSON Schema)")
    sp.set_defaults(func=func, command_name=name)
    return sp


# -- what a command prints ------------------------------------------------------------------------------


def say(ns, *lines: str) -> None:
    """Print ``lines`` on stdout, unless the command prints JSON (then they go to stderr: a note, not data)."""
    print(*lines, sep="\n", file=sys.stderr if getattr(ns, "json", False) else sys.stdout)


def emit(ns, doc: dict[str, Any], status: int) -> int:
    """The command's --json document (``doc``: its own fields) on stdout as one JSON document, with the
    envelope every document has; returns ``status``. While a --json command works, main() sends what else is
    printed (the user's program at trace time, a run's jax.debug.print) to stderr; the document goes to the
    stdout it was given (``ns.document_stream``). Strict JSON: a NaN or an infinity is refused here,
    by the field that holds it (``records`` makes a table's null)."""
    from ..artifacts.jsonout import json_text

    full = {"schema": JSON_VERSION, "command": ns.command_name, "exit": status, **doc}
    print(json_text(full, ns.command_name, allow_nan=False, indent=1), file=getattr(ns, "document_stream", None))
    return status


def error_document(command: str, error: BaseException | str, kind: str | None = None) -> str:
    """The --json document of a command that could not do its work (status 2): ``kind`` (default: the error's
    class, "UsageError" for a message) and the message."""
    from ..artifacts.jsonout import json_text

    kind = kind or (type(error).__name__ if isinstance(error, BaseException) else "UsageError")
    message = str(error)
    return json_text({"schema": JSON_VERSION, "command": command, "exit": EXIT_TROUBLE,
                      "error": {"type": kind, "message": message}}, command, allow_nan=False, indent=1)


def records(df, columns=None) -> list[dict]:
    """A DataFrame's rows as JSON objects (``columns``: those, in that order; default all), each cell plain
    JSON (numpy scalars as numbers) and a missing value, NaN or infinity as null."""
    from ..artifacts.jsonout import plain_json

    cols = [str(c) for c in (df.columns if columns is None else columns)]

    def cell(v, at):
        v = plain_json(_scalar(v), at)
        return None if isinstance(v, float) and not math.isfinite(v) else v

    return [{c: cell(row[i], f"row {r}.{c}") for i, c in enumerate(cols)}
            for r, row in enumerate(df[cols].itertuples(index=False))]


def _scalar(v):
    import pandas as pd

    try:
        if v is None or (not isinstance(v, (list, tuple, dict)) and pd.isna(v)):
            return None
    except (TypeError, ValueError):
        pass
    return v
