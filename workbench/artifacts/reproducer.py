"""A reproducer folder for a bug report: the module before a stage, the pass string from that stage
on, the example inputs, ``repro.py`` (it decides a predicate with enzyme-ad and jax alone, never
importing the workbench) and a README with the command lines and versions.

The predicate must be a built-in one (``analysis.search.bisect``): each carries a ``recipe`` (kind and
arguments) that ``repro.py`` encodes standalone. A custom function has no such form and is refused
with ReproducerError, never replaced by something else.
"""
from __future__ import annotations

import ast
import datetime
import json
import platform
import shlex
from pathlib import Path

import jax
import numpy as np

from ..errors import ReproducerError, WorkbenchError
from ..ir.ops import op_counts
from ..ir.text import host_callback_count, publish_functions
from ..pipeline.array_limit import ArrayTooLargeError, Planned, refuse_large, write_npz
from ..pipeline.exported import exported_for_text, main_signature
from ..pipeline.trace import resolve_device
from .versions import versions
from ..analysis.run.check import RTOL
from ..analysis.run.execute import example_args

__all__ = ["write_reproducer", "KINDS", "TOLERANCES"]

KINDS = ("miscompiles", "crashes", "op_count_above", "op_count_at_most", "slower_than", "differs_from", "has_op",
         "lacks_op")
# repro.py's miscompile tolerance, relative to an output's largest finite magnitude: the workbench's own
# per-dtype table (``check.RTOL``), written into repro.py's config.
TOLERANCES = RTOL
_NATIVE = set("?bhilqBHILQefdgFD")  # numpy dtype characters np.save stores as they are


def write_reproducer(ex, directory, stage=None, predicate=None) -> Path:
    """Write the folder (created if needed, its files replaced) and return its path. ``input.mlir`` is
    the module of ``stage``'s parent, ``pipeline.txt`` the passes from ``stage`` (an MLIR stage) on.
    Without ``stage``: where the predicate starts to hold, when cheap to find -- the failed stage for
    ``crashes``, the first changed stage failing the numeric check for ``miscompiles`` (one ``ex.run``
    per changed stage; they join ``ex.runs``), the first stage satisfying an op count (``has_op``/``lacks_op``
    of the last MLIR stage too), the stage after the one ``differs_from`` compares with (so that
    ``input.mlir`` is that stage) -- else (also for ``slower_than``, ``has_op`` on "xla:optimized" and no
    predicate) the first MLIR stage. The README says which and why."""
    recipe, described = _recipe(ex, predicate)
    mlir = [s for s in ex.pipeline_stages if s.group == "mlir"]
    if not mlir:
        raise ReproducerError("this Exploration has no MLIR pipeline stage: there is no pass to reproduce")
    if stage is None:
        chosen, why = _default_stage(ex, mlir, recipe)
    else:
        chosen = ex.stage(stage)
        if chosen.group != "mlir":
            raise ReproducerError(f"stage {chosen.name!r} is a {chosen.group} stage; a reproducer starts at an MLIR "
                                  f"pipeline stage: {', '.join(s.name for s in mlir)}")
        why = f"{chosen.name!r} was named by the caller"
    later = mlir[mlir.index(chosen):]
    parent = ex.stage(chosen.parent)
    if (recipe or {}).get("kind") == "differs_from" and parent.name != recipe["stage"]:
        raise ReproducerError(f"differs_from({recipe['stage']!r}) compares with stage {recipe['stage']!r}, and repro.py "
                              f"compares input.mlir with the pipeline's output: a reproducer starting at {chosen.name!r} "
                              f"has {parent.name!r} as input.mlir. Leave stage=None (it starts after {recipe['stage']!r})")
    text = publish_functions(parent.text_with_locations or parent.text, {"main"})
    pipeline = ",".join(s.produced_by for s in later)
    inputs, args, not_written = _inputs(ex, text, recipe, predicate)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    (out / "input.mlir").write_text(text)
    (out / "pipeline.txt").write_text(pipeline + "\n")
    (out / "inputs.npz").unlink(missing_ok=True)
    if inputs and not not_written:
        try:
            write_npz(out / "inputs.npz", {i["name"]: a for i, a in zip(inputs, args)}, "the reproducer would write "
                      "the arguments of @main to inputs.npz")
        except (ArrayTooLargeError, OSError) as e:  # a full disk, say: the file is not left half written
            not_written = str(e) if isinstance(e, ArrayTooLargeError) else f"writing it failed: {e}."
    config = {"stage": chosen.name, "parent": parent.name, "device": (recipe or {}).get("device") or ex.spec.device,
              "predicate": recipe, "predicate_text": described, "inputs": inputs, "timeout": float(ex.spec.timeout),
              "versions": _versions(), "cannot_run": _cannot_run(text), "inputs_not_written": not_written}
    (out / "repro.py").write_text(_script({**config, "rtol": dict(TOLERANCES)}))
    (out / "README.md").write_text(_readme(ex, chosen, parent, later, pipeline, config, why,
                                           _workbench_verdict(ex, predicate)))
    return out


def _recipe(ex, predicate) -> tuple[dict | None, str]:
    if predicate is None:
        return None, "none given"
    recipe = getattr(predicate, "recipe", None)
    if not isinstance(recipe, dict) or recipe.get("kind") not in KINDS:
        name = getattr(predicate, "__name__", type(predicate).__name__)
        raise ReproducerError(
            f"the predicate {name} has no standalone form, so repro.py cannot decide it without the workbench. "
            "The predicates a reproducer can encode are wb.miscompiles(device), wb.crashes(include_xla=...), "
            "wb.op_count_above(op, n), wb.op_count_at_most(op, n), wb.slower_than(seconds), wb.differs_from(stage), "
            "wb.has_op(op) and wb.lacks_op(op); pass one of them, or predicate=None for a script that prints the "
            "outputs' differences.")
    recipe = dict(recipe)
    if recipe["kind"] == "miscompiles" or (recipe["kind"] == "differs_from" and recipe["numbers"]):
        recipe["device"] = recipe.get("device") or ex.spec.device
    if recipe["kind"] == "differs_from":
        _check_compared_stage(ex, recipe["stage"])
    if recipe["kind"] in ("has_op", "lacks_op"):
        recipe["stage"] = _op_stage(ex, recipe.get("stage"))
        if recipe["stage"] == "xla:optimized":
            recipe["xla_options"] = dict(ex.spec.xla_options)
    if recipe["kind"] == "slower_than":
        recipe.setdefault("repeat", 3)
    described = getattr(predicate, "__name__", recipe["kind"])
    return recipe, (f"miscompiles({recipe['device']!r})" if recipe["kind"] == "miscompiles" else described)


def _check_compared_stage(ex, name) -> None:
    """differs_from's stage must be a module stage before the last MLIR stage (input.mlir will be it)."""
    firsts = [s.name for s in ex.pipeline_stages if s.is_module and not s.error][:-1]
    if name not in firsts:
        raise ReproducerError(f"differs_from({name!r}): repro.py compares input.mlir, which is then stage {name!r}, with "
                              f"the pipeline's output, so the stage must be a module stage before the last MLIR stage: "
                              f"{', '.join(firsts) or 'this Exploration has none'}")


def _op_stage(ex, stage):
    """has_op/lacks_op's stage as repro.py decides it: None (the pipeline's output) or "xla:optimized"."""
    last = ex.default_run_stage().name
    if stage in (None, last):
        return None
    if stage == "xla:optimized":
        return stage
    raise ReproducerError(f"repro.py decides has_op/lacks_op on the pipeline's output (stage=None, {last!r}) or on "
                          f"XLA's optimized module of it ('xla:optimized'), not on stage {stage!r}")


def _default_stage(ex, mlir, recipe):
    """The stage where the predicate starts to hold, when cheap to find; else the first MLIR stage."""
    kind = (recipe or {}).get("kind")
    first = mlir[0]
    if kind == "crashes" and ex.pipeline_error is not None:
        failed = next((s for s in mlir if s.name == ex.pipeline_error.stage), first)
        return failed, f"{failed.name!r} is the stage that failed (stage=None with crashes)"
    if kind == "miscompiles" and ex.spec.traced is not None and ex.spec.traced.abstract_args():
        return first, ("the function was explored with shapes that have no values (jax.ShapeDtypeStruct), so no stage "
                       "was run to find where the numbers go wrong: the reproducer starts at the first MLIR stage")
    if kind == "miscompiles":
        for s in mlir:
            if s.error:
                break
            if not s.changed:
                continue  # the same module as its parent: the same verdict
            try:
                passed = ex.run(s.name, device=recipe["device"], repeat=1).check.passed
            except ArrayTooLargeError as e:
                return first, (f"the stages were not run to find where the numbers go wrong ({e}), so the "
                               "reproducer starts at the first MLIR stage")
            except WorkbenchError:
                break
            if not passed:
                return s, (f"{s.name!r} is the first MLIR stage whose outputs fail the workbench's numeric check on "
                           f"{recipe['device']} (stage=None with miscompiles; its parent passes)")
        return first, "no MLIR stage failed the numeric check, so the reproducer starts at the first MLIR stage"
    if kind == "differs_from":
        after = next(s for s in mlir if s.parent == recipe["stage"])
        return after, (f"{after.name!r} is the stage after {recipe['stage']!r}, so input.mlir is the stage "
                       "differs_from compares with (stage=None)")
    if kind in ("op_count_above", "op_count_at_most") or (kind in ("has_op", "lacks_op") and recipe["stage"] is None):
        def holds(s):
            count = op_counts(s.text)[recipe["name"]]
            return {"op_count_above": lambda: count > recipe["n"], "op_count_at_most": lambda: count <= recipe["n"],
                    "has_op": lambda: count > 0, "lacks_op": lambda: count == 0}[kind]()

        found = next((s for s in mlir if not s.error and holds(s)), None)
        if found is not None:
            return found, f"{found.name!r} is the first MLIR stage whose text satisfies {kind} (stage=None)"
        return first, f"no MLIR stage satisfies {kind}, so the reproducer starts at the first MLIR stage"
    return first, "stage=None: the reproducer starts at the first MLIR stage (the whole pipeline)"


def _flat_arguments(ex, text, predicate=None):
    """The arguments of the module's @main, in its order: the traced leaves that the module kept
    (typed PRNG keys as their raw data); for a text exploration, the arrays the predicate decided on
    (``predicate.inputs_for(ex)``: ``drifts_at`` runs a reduced module on the program's own inputs), those
    it was saved with, or seeded example arguments."""
    traced = ex.spec.traced
    own = getattr(predicate, "inputs_for", None)
    chosen = own(ex) if traced is None and callable(own) else None
    if chosen is not None:
        return list(chosen)
    loaded = ex.spec.loaded
    if traced is None and loaded is not None and loaded.args:
        return jax.tree_util.tree_leaves(loaded.args)
    if traced is None:
        exported = exported_for_text(text, resolve_device(ex.spec.device).platform)
        return jax.tree_util.tree_leaves(example_args(exported, doing="the reproducer would make seeded arguments "
                                                                      "of @main for inputs.npz"))
    return traced.module_args()


def _cannot_run(text: str) -> str:
    """Why repro.py cannot run input.mlir at all ("" when it can try)."""
    callbacks = host_callback_count(text)
    return (f"input.mlir calls {callbacks} host callback(s) (jax.debug.print, pure_callback, io_callback) whose "
            "Python functions live only in the kernel that traced it") if callbacks else ""


def _runs_modules(recipe) -> bool:
    """Whether repro.py runs the modules on inputs.npz to decide ``recipe`` (None: it prints the differences)."""
    return recipe is None or recipe["kind"] == "miscompiles" or (recipe["kind"] == "differs_from" and recipe["numbers"])


def _inputs(ex, text, recipe, predicate=None):
    """(what repro.py reads from inputs.npz, the arrays as stored, why they are not written or "");
    none when @main cannot run. Arrays over ``array_limit()`` are neither made nor written (checked
    from @main's types first): the folder says so."""
    runs = _runs_modules(recipe)
    traced = ex.spec.traced
    if runs and traced is not None and traced.nr_devices > 1:
        raise ReproducerError("the module is sharded over several devices; repro.py runs single-device modules "
                              "only (crashes, op counts and slower_than need no run and work on it)")
    callbacks = host_callback_count(text)
    if callbacks:  # repro.py would call Python functions that exist only in this kernel
        if recipe is not None and runs:
            raise ReproducerError(f"input.mlir calls {callbacks} host callback(s) (jax.debug.print, pure_callback, "
                                  f"io_callback), so repro.py cannot run it and {recipe['kind']} cannot be checked "
                                  "there; crashes, op counts and slower_than need no run")
        return [], [], ""
    try:
        ins, _ = main_signature(text)
        described = [_described(k, tuple(i.shape), np.dtype(i.dtype)) for k, i in enumerate(ins)]
        refuse_large([Planned(f"argument {k} (%arg{k} of @main)", i.shape, i.dtype) for k, i in enumerate(ins)],
                     "the reproducer would write the arguments of @main to inputs.npz")
        shapes = ex.spec.traced.abstract_args() if ex.spec.traced is not None else []
        if shapes:
            return described, [], (f"the function was explored with shapes that have no values (jax.ShapeDtypeStruct): "
                                   f"{', '.join(shapes)}.")
        arrays = [np.asarray(a) for a in _flat_arguments(ex, text, predicate)]
    except ArrayTooLargeError as e:
        return described, [], str(e)
    except WorkbenchError as e:
        if recipe is not None and runs:
            raise ReproducerError(f"input.mlir cannot run, so {recipe['kind']} cannot be checked: {e}") from None
        return [], [], ""
    got = [(a.shape, a.dtype) for a in arrays]
    if got != [(tuple(i.shape), np.dtype(i.dtype)) for i in ins]:
        raise ReproducerError(f"the example arguments {got} do not match @main's arguments {ins}")
    inputs = [_described(k, a.shape, a.dtype) for k, a in enumerate(arrays)]
    stored = [a if a.dtype.char in _NATIVE else a.view(f"uint{8 * a.dtype.itemsize}") for a in arrays]
    return inputs, stored, ""


def _described(k: int, shape: tuple, dtype: np.dtype) -> dict:
    """What repro.py reads about argument ``k``: its name in inputs.npz, dtype, shape and the dtype
    it is stored as (numpy cannot store bfloat16 and float8: their bits as unsigned integers)."""
    native = dtype.char in _NATIVE
    return {"name": f"arg{k}", "dtype": str(dtype), "shape": list(shape),
            "stored_as": str(dtype) if native else f"uint{8 * dtype.itemsize}"}


def _versions() -> dict:
    found = {k: v or "not installed" for k, v in versions().items()}
    return {**found, "platform": platform.platform(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def _workbench_verdict(ex, predicate) -> str:
    if predicate is None:
        return "no predicate was given"
    try:
        return f"the workbench's {predicate.__name__} {'held' if predicate(ex) else 'did not hold'} on this Exploration"
    except Exception as e:  # the verdict is information for the README, not a reason to fail
        return f"the workbench's predicate raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def _explain(config, ex, later) -> str:
    recipe, device = config["predicate"], config["device"]
    kind = (recipe or {}).get("kind")
    rows = "\n".join(f"| {d} | {t:g} |" for d, t in TOLERANCES.items())
    table = f"\n\n| dtype | rtol |\n| --- | --- |\n{rows}\n| other floating types (float8) | 0.25 |"
    if kind == "miscompiles":
        return (f"**miscompiles** on `{device}`: `repro.py` runs `input.mlir` and the pipeline's output with JAX on "
                "the arguments in `inputs.npz` and compares them output by output. FAIL when an element is NaN (or "
                "another special value) where `input.mlir` gives a number or the other way round, when an integer or "
                "boolean element differs, or when a floating element differs by more than "
                "`rtol(dtype) * max|output of input.mlir|` (its largest finite magnitude):"
                f"{table}\n\nThe workbench's own check measures "
                "each stage against the as-lowered module promoted to float64; this script compares with `input.mlir`, "
                "the module before the failing stage. A pipeline that fails is not a miscompile (PASS; see crashes).")
    if kind == "crashes":
        xla = " then compiles its output with XLA (FAIL also when that fails or dies)," if recipe["include_xla"] else ""
        return (f"**crashes**: `repro.py` runs the pipeline in a child process (`sys.executable`),{xla} and prints "
                "FAIL when the pipeline raises (a pass error, a failed verification), dies (an abort, a segfault) or "
                f"runs for more than {config['timeout']:.0f} s.")
    if kind in ("op_count_above", "op_count_at_most"):
        relation = "more than" if kind == "op_count_above" else "at most"
        return (f"**{kind}**: FAIL when the pipeline's output has {relation} {recipe['n']} ops named "
                f"`{recipe['name']}`, counted at op position (a name in a string, an attribute or a type is no op).")
    if kind in ("has_op", "lacks_op"):
        relation = "has an" if kind == "has_op" else "has no"
        if recipe["stage"] is None:
            return (f"**{kind}**: FAIL when the pipeline's output {relation} op named `{recipe['name']}`, counted at "
                    "op position (a name in a string, an attribute or a type is no op).")
        return (f"**{kind}** on `xla:optimized`: `repro.py` compiles the pipeline's output with XLA (in the child "
                f"process, with the XLA options `{recipe['xla_options']}`) and prints FAIL when the optimized HLO "
                f"(`compiled.as_text()`) {relation} instruction with opcode `{recipe['name']}`. When XLA's compile "
                "fails there is no optimized module: PASS, as in the workbench.")
    if kind == "differs_from":
        if recipe["numbers"]:
            return (f"**differs_from** (numbers) on `{device}`: `input.mlir` is stage `{recipe['stage']}`; `repro.py` "
                    "runs it and the pipeline's output on `inputs.npz` and prints FAIL when an output differs by more "
                    "than `rtol(dtype) * max|output of input.mlir|`, where a NaN or infinity is not where input.mlir has "
                    f"one, or where an integer differs:{table}")
        return (f"**differs_from**: `input.mlir` is stage `{recipe['stage']}`; `repro.py` prints FAIL when the "
                "pipeline's output differs from it as text, both printed by jaxlib's MLIR printer without locations "
                "(so value names and numbering do not count).")
    if kind == "slower_than":
        replayed = {s.name for s in later}
        before = sum(s.seconds or 0.0 for s in ex.pipeline_stages if s.group == "mlir" and s.name not in replayed)
        return (f"**slower_than**: FAIL when the pipeline takes more than {recipe['seconds']} s (the best of "
                f"{recipe['repeat']} runs in a child process). The workbench's predicate sums the pass times of the "
                f"whole MLIR pipeline; {before:.3f} s of them were spent before this stage, in passes not replayed here.")
    return ("No predicate was given: `repro.py` runs the pipeline and both modules on `inputs.npz` and prints each "
            "output's largest difference (exit code 0: nothing to decide).")


def _without_inputs(config) -> str:
    if not config["inputs_not_written"] or config["cannot_run"] or not _runs_modules(config["predicate"]):
        return ""
    return ("\n\n`inputs.npz` was not written (the table above says why), so `repro.py` prints ERROR (exit 2) "
            "until it is there.")


def _one_line(text: str) -> str:
    """``text`` for a Markdown table cell: one line, its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _readme(ex, chosen, parent, later, pipeline, config, why, verdict) -> str:
    v = config["versions"]
    rows = "\n".join(f"| {k} | {v[k]} |" for k in ("jax", "jaxlib", "enzyme-ad", "python", "platform", "date"))
    command = "enzymexlamlir-opt input.mlir --pass-pipeline=" + shlex.quote(f"builtin.module({pipeline})")
    literal = (f"\n{command}" if len(command) <= 2000 else
               f"\n# the same with pipeline.txt written out is a {len(command)}-character line")
    inputs = ", ".join(f"`{i['name']}` {i['dtype']}{i['shape']}" for i in config["inputs"]) or "none (no runnable @main)"
    if config["inputs_not_written"]:
        inputs = (f"**not written**: {_one_line(config['inputs_not_written'])} `repro.py` says ERROR where it would "
                  f"run the modules, until an `inputs.npz` with the arguments of `@main` is put here: {inputs}")
    return f"""# Reproducer: {ex.spec.title} at stage `{chosen.name}`

Written by hlo-workbench on {v['date']}. It starts at stage `{chosen.name}` (pass
`{chosen.produced_by[:120]}{'...' if len(chosen.produced_by) > 120 else ''}`): {why}.
When written, {verdict}.

| file | what |
| --- | --- |
| `input.mlir` | the module before `{chosen.name}`: stage `{parent.name}`, with locations, `@main` public |
| `pipeline.txt` | the {len(later)} pass strings from `{chosen.name}` on, joined with commas |
| `inputs.npz` | the arguments of `@main` in its order: {inputs} |
| `repro.py` | decides the predicate with jax, jaxlib, numpy and enzyme-ad alone |

## Run it

```sh
python repro.py            # last line: FAIL (exit 1: the bug reproduces), PASS (exit 0), ERROR (exit 2)
python repro.py --device cpu:0 --output output.mlir
```

With the Enzyme-JaX driver (`pipeline.txt` holds the same string):

```sh
enzymexlamlir-opt input.mlir --pass-pipeline="builtin.module($(cat pipeline.txt))"{literal}
```

## What the predicate checks

Predicate: `{config['predicate_text']}`. FAIL means the predicate holds, i.e. the bug reproduces.

{_explain(config, ex, later)}{_without_inputs(config)}

## Versions

| | |
| --- | --- |
{rows}
"""


# ---- repro.py: repro_script.py, standalone (jax, jaxlib, numpy, enzyme-ad), copied with its one
# placeholder, __CONFIG__, filled in by the folder's settings (tolerances included) as a string literal of JSON.
_SCRIPT_FILE = Path(__file__).with_name("repro_script.py")
_PLACEHOLDER = "__CONFIG__"


def _script(config: dict) -> str:
    """The template with its placeholder replaced exactly once. The settings hold user text (op and stage
    names, the predicate's description), so nothing is replaced after they are in, and their literal is
    checked to read back as the same string: a raw triple-quoted one where that holds, for a readable
    script, else repr's."""
    before, *after = _SCRIPT_FILE.read_text().split(_PLACEHOLDER)
    if len(after) != 1:
        raise RuntimeError(f"{_SCRIPT_FILE} must hold {_PLACEHOLDER} exactly once, not {len(after)} times: "
                           "the installed workbench is damaged; reinstall it")
    text = json.dumps(config, indent=1)
    literal = f"r'''{text}'''"
    try:
        readable = ast.literal_eval(literal) == text
    except (SyntaxError, ValueError):
        readable = False
    return before + (literal if readable else repr(text)) + after[0]
