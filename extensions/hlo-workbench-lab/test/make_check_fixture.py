"""Writes the manifest tests' fixtures (test/manifest.test.ts):

- test/fixtures/checked.hlox: a real exploration saved with two runs and their checks. The first run
  passes its check with finite numbers; the second is checked against a program that computes NaN
  everywhere, so its leaf holds max_abs = max_rel = inf, which Python's json writes as a bare
  `Infinity`: a value the extension's schema check must accept there, as the Python loader does.
- test/fixtures/wrong-manifests.json: changes to that file's manifest (one field set or deleted each),
  with what the Python loader (manifest.py's check_manifest) says of the changed manifest: the field it
  refuses and why, or null where it accepts it. The extension must refuse the same field, or accept.

Run from the repository root with the project's Python; the outputs are committed, so the tests do not
need JAX: `.venv/bin/python extensions/hlo-workbench-lab/test/make_check_fixture.py`."""
import copy
import json
import math
import pathlib
import zipfile

import jax.numpy as jnp

import workbench as wb
from workbench.artifacts.manifest import ManifestError, check_manifest, parse_manifest

OUT = pathlib.Path(__file__).resolve().parent / "fixtures" / "checked.hlox"
CASES = OUT.with_name("wrong-manifests.json")
NAN, INF = float("nan"), float("inf")


def f(x):
    return jnp.tanh(x) * 2.0


def nan_everywhere(x):
    return jnp.log(-1.0 - x * x)  # a reference that disagrees with f at every element


def changes(m: dict) -> list[tuple[str, list, object]]:
    """(what, the field's path, its new value; DELETE to delete it), for `m` the saved manifest."""
    names = [s["name"] for s in m["stages"]]
    diffed = next(k for k, s in enumerate(m["stages"]) if "diff" in s)  # a stage carrying its structural diff
    return [
        ("a string for a number", ["stages", 3, "seconds"], "fast"),
        ("a negative duration", ["stages", 3, "seconds"], -1.0),
        ("NaN for a duration", ["stages", 3, "seconds"], NAN),
        ("an infinite run time", ["runs", 0, "times", 0], INF),
        ("a negative dimension", ["args", 0, "shape", 0], -2),
        ("a fraction for the format", ["format"], 1.5),
        ("an empty device", ["spec", "device"], ""),
        ("a group the workbench does not have", ["stages", 0, "group"], "hlo"),
        ("a text that is no SHA-256", ["stages", 1, "text"], "xyz"),
        ("a number for a stage error's stage", ["pipeline_error"], {"stage": 1, "produced_by": "", "reason": ""}),
        ("a number where a stage error is", ["xla_error"], 7),
        ("a stage without its group", ["stages", 2, "group"], DELETE),
        ("no texts_sha256", ["texts_sha256"], DELETE),
        ("a check leaf without its tolerance", ["runs", 1, "check", "leaves", 0, "tolerance"], DELETE),
        ("an unknown pattern option", ["spec", "pattern_options", "warp_speed"], True),
        ("an unknown field of a check leaf", ["runs", 0, "check", "leaves", 0, "colour"], "red"),
        ("an unknown field of a stage (stages are open records)", ["stages", 0, "colour"], "red"),
        ("a stage named as an earlier one", ["stages", 5, "name"], names[2]),
        ("a parent that comes later", ["stages", 2, "parent"], names[4]),
        ("a parent that is no stage", ["stages", 2, "parent"], "nowhere"),
        ("more early stages than stages", ["early"], len(names) + 1),
        ("a gap in the texts' index", ["texts", 1, "offset"], m["texts"][1]["offset"] + 1),
        ("texts_bytes past the index", ["texts_bytes"], m["texts_bytes"] + 1),
        ("a stage text the index lacks", ["stages", 4, "text"], "0" * 64),
        ("a stage diff's text the index lacks", ["stages", diffed, "diff", "after"], "0" * 64),
        ("a stage diff's runs that are no runs", ["stages", diffed, "diff", "runs"], "=1x"),
        ("a stage diff without its runs", ["stages", diffed, "diff", "runs"], DELETE),
        ("a run of a stage the file lacks", ["runs", 1, "stage"], "nowhere"),
        ("a run of a stage the file lacks, made before a toggle", ["runs", 0],
         {**m["runs"][0], "stage": "nowhere", "earlier": True}),  # the passed run's: its numbers are finite
        ("a number for a run's earlier mark", ["runs", 0, "earlier"], 1),
        ("a run's program without its text hash", ["runs", 0, "program", "text_sha256"], DELETE),
        ("an unknown field of a run's program", ["runs", 0, "program", "colour"], "red"),
        ("a cost row short of a cell", ["cost", "rows", 0], m["cost"]["rows"][0][:-1]),
        ("NaN in a check's error", ["runs", 0, "check", "leaves", 0, "max_rel"], NAN),
        ("-Infinity in a check's lowered error", ["runs", 1, "check", "leaves", 0, "lowered_abs"], -INF),
        ("NaN in XLA's cost", ["xla", "cost", "flops"], NAN),
        ("Infinity in a cost table cell", ["cost", "rows", 0, 3], INF),
    ]


DELETE = object()


def plain(v):
    """`v` as the fixture's JSON holds it: a non-finite number as {"nonfinite": "NaN"}, which JSON lacks."""
    if isinstance(v, float) and not math.isfinite(v):
        return {"nonfinite": "NaN" if math.isnan(v) else "Infinity" if v > 0 else "-Infinity"}
    return v


def cases(m: dict) -> list[dict]:
    out = []
    for what, path, value in changes(m):
        changed = copy.deepcopy(m)
        at = changed
        for key in path[:-1]:
            at = at[key]
        if value is DELETE:
            del at[path[-1]]
        else:
            at[path[-1]] = value
        try:
            check_manifest(changed)
            python = None
        except ManifestError as e:
            python = {"where": e.where, "why": e.why}
        out.append({"what": what, "path": path, "delete": value is DELETE,
                    **({} if value is DELETE else {"value": plain(value)}), "python": python})
    return out


def main() -> None:
    x = jnp.linspace(-1.0, 1.0, 8, dtype=jnp.float32)
    ex = wb.explore(f, x)
    passed = ex.run(repeat=3)
    failed = ex.run(repeat=3, reference=wb.explore(nan_everywhere, x))
    assert passed.check.passed and not failed.check.passed, (passed.check, failed.check)
    ex.save(OUT)
    raw = zipfile.ZipFile(OUT).read("manifest.json").decode()
    assert "Infinity" in raw, "the failed check's infinite error is not in the manifest"
    back = wb.load(OUT)  # the Python loader reads it back: the file is one the workbench accepts
    manifest = parse_manifest(raw.encode())
    print(f"{OUT}: {OUT.stat().st_size:,} bytes, {len(back.stages)} stages, {len(manifest['runs'])} runs")
    found = cases(manifest)
    CASES.write_text(json.dumps(found, indent=1, allow_nan=False) + "\n")
    print(f"{CASES}: {len(found)} changes, {sum(c['python'] is not None for c in found)} refused by the loader")


if __name__ == "__main__":
    main()
