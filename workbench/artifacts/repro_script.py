#!/usr/bin/env python3
"""Reproducer written by hlo-workbench: runs input.mlir through the passes in pipeline.txt and decides
the predicate that README.md describes. It needs jax, jaxlib, numpy and enzyme-ad only.

    python repro.py           prints the verdict on its last line and exits with its code:
                              FAIL  (1)  the predicate holds: the bug reproduces
                              PASS  (0)  the predicate does not hold: the bug does not reproduce
                              ERROR (2)  it could not be decided (a module did not run, no such device)
    python repro.py --device cpu:0 --output out.mlir   another device; keep the pipeline's output

The pipeline runs in a child process (this script again, with --child), so that a pass that aborts
or hangs is reported instead of taking this process down.
"""
import argparse
import dataclasses
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# hlo-workbench puts the folder's settings here, once, as a string literal of JSON
CONFIG = json.loads(__CONFIG__)  # noqa: F821
# miscompiles: a floating output element passes when |output - input| <= RTOL[dtype] * max|input|
# (the largest finite magnitude of that output of input.mlir); NaN, +inf and -inf must be where
# input.mlir has them; integers and booleans must be equal.
RTOL = CONFIG["rtol"]
OTHER_FLOAT_RTOL = 0.25  # float8 and other narrow floating types
EXIT = {"PASS": 0, "FAIL": 1, "ERROR": 2, "NO PREDICATE": 0}
ELEMENT = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16", "i1": "bool", "complex<f32>":
           "complex64", "complex<f64>": "complex128", "f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2",
           **{f"{u}i{b}": f"{u and 'u'}int{b}" for u in ("", "u") for b in (4, 8, 16, 32, 64)}}


class Undecided(Exception):
    """Something outside the predicate went wrong: the verdict is ERROR."""


def read(name):
    with open(os.path.join(HERE, name)) as f:
        return f.read()


def publish(text, entry):
    """enzyme-ad's runner makes the entry function private while it works: make it public again."""
    head = r"(?m)^([ \t]*func\.func[ \t]+)private([ \t]+@" + re.escape(entry) + r"\()"
    return re.sub(head, r"\1public\2", text, count=1)


# ---- the pipeline, run in a child process ------------------------------------------------------------


def for_jax(text, enzyme_call):
    """The text without the enzymexla.* attributes jaxlib cannot parse (enzyme-ad drops them so too)."""
    if "enzymexla" not in text:
        return text
    entry, out = enzyme_call.run_pass_pipeline([], text, "drop-unsupported-attributes")
    return publish(out, entry)


def child(out_path, repeat, compile_on):
    """Exit codes: 0 ran, 3 the pipeline (or XLA's compile) raised, 4 this process could not work."""
    from enzyme_ad.jax import enzyme_call

    text, pipeline = read("input.mlir"), read("pipeline.txt").strip()
    seconds = []
    try:
        for _ in range(max(1, repeat)):
            start = time.perf_counter()
            entry, out = enzyme_call.run_pass_pipeline([], text, pipeline)
            seconds.append(time.perf_counter() - start)
    except Exception as e:  # a failed verification or a pass error: the child's exit code says so
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 3
    result = {"text": publish(out, entry), "seconds": seconds}
    try:
        result["jax_input"], result["jax_output"] = for_jax(text, enzyme_call), for_jax(result["text"], enzyme_call)
    except Exception as e:
        result["prepare_error"] = f"{type(e).__name__}: {e}"
    with open(out_path, "w") as f:  # written before XLA compiles: the parent then knows the pipeline ran
        json.dump(result, f)
    if compile_on:
        import jax

        jax.config.update("jax_enable_x64", True)
        options = (CONFIG["predicate"] or {}).get("xla_options") or None
        try:
            exported, _ = exported_for(result.get("jax_output", result["text"]), device_for(compile_on))
            compiled = jax.jit(exported.call).lower(*exported.in_avals).compile(compiler_options=options)
        except Undecided:  # no @main: XLA has nothing to compile, as in the workbench
            return 0
        except Exception as e:
            print(f"{type(e).__name__}: {e}", file=sys.stderr)
            return 3
        result["hlo"] = compiled.as_text()  # XLA's optimized module
        with open(out_path, "w") as f:
            json.dump(result, f)
    return 0


def run_pipeline(repeat=1, compile_on=None):
    """The child's result: the output text and the pipeline's seconds, or with "failure" (how the
    pipeline or the XLA compile failed) and "phase" ("pipeline" or "xla")."""
    fd, path = tempfile.mkstemp(prefix="repro-", suffix=".json")
    os.close(fd)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", path, "--repeat", str(repeat)]
    cmd += ["--compile-on", compile_on] if compile_on else []
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=CONFIG["timeout"], cwd=HERE)
        code, stderr = proc.returncode, proc.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        code, stderr = None, (e.stderr or b"").decode(errors="replace")
    with open(path) as f:
        result = json.load(f) if os.path.getsize(path) else {}
    os.unlink(path)
    said = " | ".join([line.strip() for line in stderr.splitlines() if line.strip()][-3:])[:400]
    if code == 4:
        raise Undecided(f"the child process could not run the pipeline: {said}")
    if code == 0:
        return result
    how = (f"ran for more than {CONFIG['timeout']:.0f} s and was stopped" if code is None else "raised" if code == 3
           else f"died with signal {-code}" if code < 0 else f"died with exit code {code}") + (f" ({said})" if said else "")
    return {**result, "failure": how, "phase": "xla" if result else "pipeline"}


# ---- running a module with jax --------------------------------------------------------------------------


def device_for(ident):
    import jax

    platform, _, index = ident.partition(":")
    try:
        devices = jax.devices(platform)
    except RuntimeError:
        raise Undecided(f"this machine has no {platform} device (choose one with --device)") from None
    for d in devices:
        if str(d.id) == (index or str(devices[0].id)):
            return d
    raise Undecided(f"no device {ident}: this machine has {', '.join(f'{platform}:{d.id}' for d in devices)}")


def exported_for(text, device):
    """A jax.export.Exported that runs ``text``'s @main, and its results' names: a placeholder function
    with @main's argument and result types is exported (public API), then its module is swapped for
    ``text`` (parsed with JAX's own MLIR context, as bytecode) and every argument marked as kept."""
    import jax
    import jax.numpy as jnp
    from jaxlib.mlir import ir

    try:  # JAX's own MLIR context (its dialects registered); jax.interpreters.mlir re-exports it
        from jax.interpreters.mlir import make_ir_context
    except ImportError:  # older or newer layouts keep it here (a private module)
        from jax._src.interpreters.mlir import make_ir_context
    module = ir.Module.parse(text, context=make_ir_context())
    with module.context:
        main = next((op for op in module.body.operations if op.operation.name == "func.func"
                     and ir.StringAttr(op.attributes["sym_name"]).value == "main"), None)
        if main is None:
            raise Undecided("the module has no @main function to run")
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)

        def aval(t):
            rt = ir.RankedTensorType(t)
            return jax.ShapeDtypeStruct(tuple(rt.shape), jnp.dtype(ELEMENT[str(rt.element_type)]))

        ins, outs = [aval(t) for t in ftype.inputs], [aval(t) for t in ftype.results]
        names = []
        for i in range(len(outs)):
            try:
                info = ir.StringAttr(ir.DictAttr(main.attributes["res_attrs"][i])["jax.result_info"]).value
            except (KeyError, ValueError, IndexError):
                info = ""
            names.append(f"output {i}" + (f" {info!r}" if info else ""))
        buffer = io.BytesIO()
        module.operation.write_bytecode(file=buffer)

    def placeholder(*_):
        return tuple(jnp.zeros(o.shape, o.dtype) for o in outs)

    base = jax.export.export(jax.jit(placeholder), platforms=[device.platform])(*ins)
    exported = dataclasses.replace(base, module_kept_var_idx=tuple(range(len(ins))),
                                   mlir_module_serialized=buffer.getvalue())
    return exported, names


def load_inputs():
    import jax.numpy as jnp

    if not CONFIG["inputs"]:
        return []
    path = os.path.join(HERE, "inputs.npz")
    if CONFIG.get("inputs_not_written") and not os.path.exists(path):
        names = ", ".join(f"{i['name']} {i['dtype']}{i['shape']} stored as {i['stored_as']}" for i in CONFIG["inputs"])
        raise Undecided(f"inputs.npz was not written (why: above), so the modules cannot run; write the arguments "
                        f"there (np.savez('inputs.npz', name=array): {names}) to run them")
    with np.load(path, allow_pickle=False) as saved:
        # dtypes numpy cannot store (bfloat16, float8) are saved as unsigned integers of their width
        return [saved[i["name"]].view(jnp.dtype(i["dtype"])) for i in CONFIG["inputs"]]


def run_module(text, device, args, what):
    import jax

    try:
        exported, names = exported_for(text, device)
        outputs = jax.jit(exported.call)(*[jax.device_put(a, device) for a in args])
        return [np.asarray(o) for o in jax.block_until_ready(outputs)], names
    except Undecided:
        raise
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise Undecided(f"{what} did not run on {device}: {type(e).__name__}: {first[:300]}") from None


def at(index, shape):
    return " at [" + ", ".join(map(str, np.unravel_index(index, shape))) + "]" if shape else ""


def check_leaf(want, got):
    """(passed, largest error, tolerance, what is wrong or where the largest error is)."""
    if want.shape != got.shape or want.dtype != got.dtype:
        return False, float("inf"), 0.0, f"is {got.dtype}{list(got.shape)}, not {want.dtype}{list(want.shape)}"
    if want.size == 0:
        return True, 0.0, 0.0, "is empty"
    if not np.issubdtype(want.dtype, np.inexact) and str(want.dtype) not in RTOL and "float" not in str(want.dtype):
        w, g = want.astype(np.int64).ravel(), got.astype(np.int64).ravel()
        bad = np.flatnonzero(w != g)
        if bad.size:
            i = bad[0]
            return False, float(np.abs(g - w).max()), 0.0, (f"is {g[i]}{at(i, want.shape)} where input.mlir gives {w[i]} "
                                     f"({bad.size} of {w.size} elements)")
        return True, 0.0, 0.0, "equal"
    wide = np.complex128 if np.iscomplexobj(want) else np.float64
    with np.errstate(invalid="ignore", over="ignore"):
        return check_floats(want.shape, str(want.dtype), want.astype(wide).ravel(), got.astype(wide).ravel())


def check_floats(shape, dtype, w, g):
    finite = np.isfinite(w) & np.isfinite(g)
    special = (np.isnan(w) & np.isnan(g)) | (np.isinf(w) & np.isinf(g) & (w == g))
    scale = float(np.abs(w[np.isfinite(w)]).max(initial=0.0))  # the largest finite magnitude
    tol = RTOL.get(dtype, OTHER_FLOAT_RTOL) * max(scale, float(np.finfo(np.float32).tiny))
    errors = np.where(finite, np.abs(g - w), 0.0)
    i = int(np.argmax(errors))
    err = float(errors[i])
    bad = np.flatnonzero(~(finite | special))
    if bad.size:
        j = bad[0]
        return False, float("inf"), tol, (f"is {g[j]}{at(j, shape)} where input.mlir gives {w[j]} "
                                          f"({bad.size} of {w.size} elements)")
    if err > tol:
        return False, err, tol, (f"is off by {err:.3g}{at(i, shape)} (input.mlir {w[i]}, output {g[i]}), "
                                 f"beyond the tolerance {tol:.3g}")
    return True, err, tol, f"largest error {err:.3g}{at(i, shape)}, within {tol:.3g}"


def compare_modules(result, device, strict, label="miscompiles"):
    """Run input.mlir and the pipeline's output on the inputs and compare them output by output."""
    if "prepare_error" in result:
        raise Undecided(f"the modules could not be prepared for JAX: {result['prepare_error']}")
    args = load_inputs()
    want, names = run_module(result["jax_input"], device, args, "input.mlir")
    got, _ = run_module(result["jax_output"], device, args, "the pipeline's output")
    if len(want) != len(got):
        return "FAIL", f"the output has {len(got)} results, input.mlir {len(want)}"
    rows = []
    for name, w, g in zip(names, want, got):
        ok, err, _tol, detail = check_leaf(w, g)
        rows.append((ok, err, f"{name} {w.dtype}{list(w.shape)}", detail))
        print(f"  {rows[-1][2]}: {'ok' if ok else 'WRONG'}, {detail}")
    if not strict:
        return "NO PREDICATE", "no predicate was given: the differences above are for reading, not a verdict"
    bad = [r for r in rows if not r[0]]
    if bad:
        ok, err, name, detail = max(bad, key=lambda r: r[1])
        return "FAIL", f"{label}: {name} {detail}; {len(bad)} of {len(rows)} outputs differ from input.mlir"
    ok, err, name, detail = max(rows, key=lambda r: r[1]) if rows else (True, 0.0, "-", "no outputs")
    return "PASS", f"all {len(rows)} outputs match input.mlir; {name}: {detail}"


STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
SSA = r"%[\w$.\-]+(?::\d+)?"
OP_AT = re.compile(rf'[ \t]*(?:({SSA}(?:[ \t]*,[ \t]*{SSA})*)[ \t]*=[ \t]*)?("(?:[^"\\]|\\.)*"|[A-Za-z_][\w$]*(?:\.[\w$]+)*)')
APPLIES = re.compile(r"\bapplies\s+([A-Za-z_][\w$]*(?:\.[\w$]+)+)")


def op_names(text):
    """Every op's name, once per op: the name at op position (after any results; the generic
    "dialect.op"(...) too; return and call are func's), never one in a string, attribute or type;
    the outermost module is no op; a reduce printed "applies dialect.op" holds that op and a return."""
    first = True
    for line in text.splitlines():
        m = OP_AT.match(line)
        if m is None:
            continue
        name, rest = m.group(2), line[m.end():]
        if name.startswith('"'):
            name = name[1:-1]  # the generic form
        elif "." not in name:
            tail = rest.lstrip()
            if name == "module" and rest[:1] in (" ", "{", ""):
                name = "builtin.module"
            elif m.group(1) or not tail or (rest[:1].isspace() and tail[0] in "%@"):
                name = "func." + name
            else:
                continue  # a region keyword (cond {, reducer(...)) or a resource key
        if name and not (first and name == "builtin.module"):
            yield name
            applies = APPLIES.search(STRING.sub('""', rest)) if name.endswith(".reduce") else None
            if applies:
                yield applies.group(1)
                yield name.partition(".")[0] + ".return"
        first = False


def canonical(text):
    """The module as jaxlib's MLIR printer writes it without locations: value names and numbering as the
    printer chooses them, so two texts that differ only in those (or in locations) print the same."""
    from jaxlib.mlir import ir

    try:
        from jax.interpreters.mlir import make_ir_context
    except ImportError:
        from jax._src.interpreters.mlir import make_ir_context
    context = make_ir_context()
    context.allow_unregistered_dialects = True
    return ir.Module.parse(text, context=context).operation.get_asm(enable_debug_info=False)


def hlo_opcodes(text):
    """The opcode of every instruction of every computation of HLO text (parameters included), as the
    workbench counts them: ``[ROOT] %name = shape opcode(...)``, the shape walked bracket by bracket."""
    inside = False
    for line in text.splitlines():
        if not inside:
            inside = line.rstrip().endswith("{") and not line[:1].isspace() and not line.startswith("HloModule")
            continue
        if line.strip() == "}":
            inside = False
            continue
        m = re.match(r"\s*(?:ROOT\s+)?%?[A-Za-z_][\w.\-]*\s*=\s*", line)
        if not m:
            continue
        rest, depth, i = line[m.end():], 0, 0
        while i < len(rest) and (depth or not rest[i].isspace()):
            depth += (rest[i] in "([{") - (rest[i] in ")]}")
            i += 1
        op = re.match(r"\s*([\w\-]+)\(", rest[i:])
        if op:
            yield op.group(1)


def decide(recipe, device_id, output=None):
    """(verdict, reason) of the predicate ``recipe`` (None: no predicate, the modules compared); raises
    Undecided when it cannot be decided. ``output``: where to write the pipeline's output module."""
    kind = recipe["kind"] if recipe else None
    if kind == "crashes":
        return decide_crashes(recipe, device_id)
    if kind in ("has_op", "lacks_op") and recipe.get("stage") == "xla:optimized":
        return decide_optimized_ops(recipe, kind, device_id)
    repeat = int(recipe.get("repeat", 3)) if kind == "slower_than" else 1
    result = run_pipeline(repeat=repeat)
    if output and "text" in result:
        with open(output, "w") as f:
            f.write(result["text"])
    if "failure" in result:
        if kind == "miscompiles":  # as the workbench's predicate: a failing pipeline is not a miscompile
            return "PASS", f"the pipeline failed, which miscompiles does not count (use crashes): it {result['failure']}"
        raise Undecided(f"the pipeline {result['failure']}")
    if kind in ("op_count_above", "op_count_at_most", "has_op", "lacks_op"):
        return decide_op_count(recipe, kind, result["text"])
    if kind == "differs_from" and not recipe["numbers"]:
        return decide_differs_as_text(result)
    if kind == "differs_from":
        return compare_modules(result, device_for(device_id), strict=True, label="differs_from")
    if kind == "slower_than":
        best = min(result["seconds"])
        holds = best > recipe["seconds"]
        return ("FAIL" if holds else "PASS"), (f"slower_than: the pipeline took {best:.3f} s (best of "
                                               f"{len(result['seconds'])}), {'more' if holds else 'not more'} than {recipe['seconds']} s")
    if kind not in ("miscompiles", None):
        raise Undecided(f"this script does not know the predicate kind {kind!r}")
    if kind is None and CONFIG.get("cannot_run"):
        return "PASS", f"the pipeline ran; {CONFIG['cannot_run']}, so it is not run here"
    return compare_modules(result, device_for(device_id), strict=kind == "miscompiles")


def decide_crashes(recipe, device_id):
    """crashes: the pipeline (and with include_xla, XLA's compile of its output) fails or dies."""
    compile_on = device_id if recipe.get("include_xla") else None
    result = run_pipeline(compile_on=compile_on)
    if "failure" in result:
        what = "XLA's compile of the pipeline's output" if result["phase"] == "xla" else "the pipeline"
        return "FAIL", f"crashes: {what} {result['failure']}"
    return "PASS", "the pipeline ran and its output verified" + (" and compiled with XLA" if compile_on else "")


def decide_optimized_ops(recipe, kind, device_id):
    """has_op / lacks_op on xla:optimized: the instructions of XLA's optimized module of the pipeline's output."""
    result = run_pipeline(compile_on=device_id)
    if "failure" in result:
        if result.get("phase") != "xla":
            raise Undecided(f"the pipeline {result['failure']}")
        return "PASS", (f"XLA's compile of the pipeline's output {result['failure']}: there is no optimized module, "
                        f"so {kind} does not hold (as in the workbench)")
    if "hlo" not in result:
        raise Undecided("the pipeline's output has no @main for XLA to compile")
    count = sum(1 for op in hlo_opcodes(result["hlo"]) if op == recipe["name"])
    holds = count > 0 if kind == "has_op" else count == 0
    return ("FAIL" if holds else "PASS"), (f"{kind}: XLA's optimized module has {count} {recipe['name']} "
                                           f"instruction(s): the predicate {'holds' if holds else 'does not hold'}")


def decide_op_count(recipe, kind, text):
    """op_count_above, op_count_at_most, has_op, lacks_op on the pipeline's output ``text``."""
    count = sum(1 for name in op_names(text) if name == recipe["name"])
    if kind in ("op_count_above", "op_count_at_most"):
        holds = count > recipe["n"] if kind == "op_count_above" else count <= recipe["n"]
        relation = "more than" if kind == "op_count_above" else "at most"
        return ("FAIL" if holds else "PASS"), (f"{kind}: the output has {count} {recipe['name']} op(s); the "
                                               f"predicate asks for {relation} {recipe['n']}: it {'holds' if holds else 'does not'}")
    holds = count > 0 if kind == "has_op" else count == 0
    return ("FAIL" if holds else "PASS"), (f"{kind}: the output has {count} {recipe['name']} op(s): the "
                                           f"predicate {'holds' if holds else 'does not hold'}")


def decide_differs_as_text(result):
    """differs_from without numbers: whether the output prints differently from input.mlir, as jaxlib reads both."""
    if "prepare_error" in result:
        raise Undecided(f"the modules could not be prepared for jaxlib: {result['prepare_error']}")
    try:
        same = canonical(result["jax_input"]) == canonical(result["jax_output"])
    except Exception as e:
        raise Undecided(f"jaxlib could not read a module: {type(e).__name__}: {str(e).splitlines()[0][:300]}") from None
    return ("PASS" if same else "FAIL"), ("differs_from: the pipeline's output " + (
        "prints as input.mlir does (the predicate does not hold)" if same else
        "differs from input.mlir as text (the predicate holds)"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", help=f"where to run the modules (default {CONFIG['device']})")
    parser.add_argument("--output", help="write the pipeline's output module to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--compile-on", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        try:
            return child(args.child, args.repeat, args.compile_on)
        except Exception as e:  # enzyme-ad missing, say: not the pipeline's failure (a native exit(1) is)
            print(f"{type(e).__name__}: {e}", file=sys.stderr)
            return 4
    import jax

    jax.config.update("jax_enable_x64", True)  # the modules' own types decide; 64-bit ones need this
    recipe = CONFIG["predicate"]
    device_id = args.device or (recipe or {}).get("device") or CONFIG["device"]
    print(f"input.mlir (the module before {CONFIG['stage']!r}) through pipeline.txt; predicate: "
          f"{CONFIG['predicate_text']}; device {device_id}")
    if CONFIG.get("inputs_not_written") and not os.path.exists(os.path.join(HERE, "inputs.npz")):
        print(f"inputs.npz was not written: {CONFIG['inputs_not_written']}")
    try:
        word, reason = decide(recipe, device_id, args.output)
    except Undecided as e:
        word, reason = "ERROR", str(e)
    print(f"{word}: {reason}")
    return EXIT[word]


if __name__ == "__main__":
    sys.exit(main())
