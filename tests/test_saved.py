"""Saved explorations (.hlox): ex.save and wb.load, on real programs; bad files give clear errors."""
import json
import os
import sys
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import workbench as wb
from workbench import examples
from workbench.errors import SavedFileError
from workbench.analysis.run.execute import Check, LeafCheck, RunResult, Timing
from workbench.artifacts import jsonout, saved
from workbench.pipeline.build import xla_compiles
from workbench.pipeline.runner import default_runner

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))


@pytest.fixture(scope="module")
def attention():
    fn, args = examples.load("attention")
    ex = wb.explore(fn, *args)
    ex.run(repeat=2)
    return ex


@pytest.fixture(scope="module")
def saved_file(attention, tmp_path_factory):
    return attention.save(tmp_path_factory.mktemp("saved") / "attn.hlox", arrays=True)


def test_a_loaded_exploration_has_every_stage_and_needs_no_pass_nor_compile(attention, saved_file):
    compiles, misses = xla_compiles(), default_runner().misses
    ex = wb.load(saved_file)
    assert ex.names == attention.names
    for a, b in zip(attention.stages, ex.stages):
        assert (a.group, a.text, a.produced_by, a.changed, a.parent, a.error) == \
               (b.group, b.text, b.produced_by, b.changed, b.parent, b.error), a.name
        assert a.text_with_locations == b.text_with_locations, a.name
    # an unchanged stage holds its parent's text object, as in the live Exploration
    for s in ex.stages:
        if s.parent and not s.changed and s.text:
            assert s.text is ex[s.parent].text
    last = ex.default_run_stage()
    assert not ex.diff("stablehlo", last).is_empty
    assert ex.diff("stablehlo", last).ops_delta().equals(attention.diff("stablehlo", last.name).ops_delta())
    assert ex.cost().ops.tolist() == attention.cost().ops.tolist()
    assert ex.cost("xla:optimized").shape[0] > 0
    assert "digraph" in ex.graph(last).source
    assert ex.xla_passes == attention.xla_passes
    assert ex.xla_result.cost == attention.xla_result.cost and ex.xla_result.memory == attention.xla_result.memory
    assert xla_compiles() == compiles and default_runner().misses == misses


def test_runs_and_arguments_come_back(attention, saved_file):
    ex = wb.load(saved_file)
    (before,), (after,) = attention.runs, ex.runs
    assert (after.stage, after.device, after.timing.times) == (before.stage, before.device, before.timing.times)
    assert after.check.passed == before.check.passed and after.check.kind == before.check.kind
    assert after.check.leaves[0].max_abs == before.check.leaves[0].max_abs
    import jax

    for x, y in zip(jax.tree_util.tree_leaves(before.outputs), after.outputs):
        np.testing.assert_array_equal(np.asarray(x), y)
    # run again on the saved arguments: the same numbers as the live Exploration's run
    again = ex.run(repeat=1)
    for x, y in zip(jax.tree_util.tree_leaves(before.outputs), jax.tree_util.tree_leaves(again.outputs)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6, atol=1e-7)
    assert again.check.passed and len(ex.runs) == 2


def test_toggles_recompute_from_the_saved_input(attention, saved_file):
    ex = wb.load(saved_file)
    live = attention.with_patterns(disable=["dot_transpose"])
    again = ex.with_patterns(disable=["dot_transpose"])
    assert again.default_run_stage().text == live.default_run_stage().text
    assert [s.name for s in again.pipeline_stages] == [s.name for s in live.pipeline_stages]
    assert again.stage("jaxpr").text == attention.stage("jaxpr").text
    xla = ex.with_xla(disable=["algsimp"])
    assert xla["xla:optimized"].text and "algsimp" in xla.spec.xla_disabled


def test_the_manifest_holds_enough_to_rerun(attention, saved_file):
    with zipfile.ZipFile(saved_file) as z:
        assert sorted(z.namelist()) == ["arrays.npz", "manifest.json", "texts.zst"]
        m = json.loads(z.read("manifest.json"))
        with np.load(__import__("io").BytesIO(z.read("arrays.npz")), allow_pickle=False) as npz:
            assert len([k for k in npz.files if k.startswith("arg")]) == len(m["args"])
    assert m["format"] == saved.FORMAT and m["kind"] == saved.KIND
    assert {"workbench", "jax", "jaxlib", "enzyme-ad", "python", "date"} <= set(m["saved_by"])
    assert m["spec"]["pipeline"] == "all" and m["spec"]["device"] == "cpu:0"
    assert m["spec"]["pattern_options"]["no_nan"] is False
    assert m["args"][0]["dtype"] == "float32" and m["args"][0]["shape"]
    assert m["input"] == next(r["located"] for r in m["stages"] if r["name"] == "stablehlo")


def test_without_arrays_the_shapes_remain_and_a_run_uses_seeded_ones(attention, tmp_path):
    path = attention.save(tmp_path / "a.hlox", cost=False)
    with zipfile.ZipFile(path) as z:
        assert "arrays.npz" not in z.namelist()
        assert json.loads(z.read("manifest.json"))["cost"] is None  # cost=False: no table stored
    ex = wb.load(path)
    assert ex.runs[0].outputs is None and ex.runs[0].check.passed
    r = ex.run(repeat=1)
    assert r.check.passed and r.check.source == "promoted"  # no function, but its module promoted to float64


def test_a_text_exploration_and_a_failed_one_round_trip(tmp_path):
    text = ('func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n'
            '  %0 = stablehlo.add %a, %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n')
    ex = wb.explore_text(text, pipeline="canonicalize,cse")
    back = wb.load(ex.save(tmp_path / "t.hlox"))
    assert back.names == ex.names and back["input"].text == ex["input"].text
    assert back.with_pipeline("canonicalize").names[:2] == ["input", "canonicalize#1"]
    # a pipeline whose pass fails: the failed stage and its error come back, nothing after it
    bad = wb.explore_text(text, pipeline="canonicalize,enzyme-hlo-generate-td{patterns=no_such_pattern},cse")
    assert bad.error is not None
    back = wb.load(bad.save(tmp_path / "bad.hlox"))
    assert back.names == bad.names and back.error.stage == bad.error.stage
    assert back.pipeline_error.reason == bad.pipeline_error.reason
    # a pass's error comes back as it was made: its short form (the op, its stage line) and all of it
    bad = wb.explore_text(text, pipeline="canonicalize,one-shot-bufferize")
    back = wb.load(bad.save(tmp_path / "bufferize.hlox"))
    k = next(i for i, ln in enumerate(bad["canonicalize#1"].text.splitlines(), 1) if "stablehlo.add" in ln)
    assert f"\n  op:   stablehlo.add, line {k} of stage 'canonicalize#1', the pass's input\n" in str(bad.error)
    assert str(back.error) == str(bad.error) and back.error.full == bad.error.full != str(bad.error)


def test_a_saved_file_saved_again_is_the_same(saved_file, tmp_path):
    ex = wb.load(saved_file)
    again = wb.load(ex.save(tmp_path / "again.hlox", arrays=True))
    assert [(s.name, s.text, s.text_with_locations) for s in again.stages] == \
           [(s.name, s.text, s.text_with_locations) for s in ex.stages]
    assert len(again.runs) == len(ex.runs)


# -- bad files -------------------------------------------------------------------------------------
def _refused(path, *words):
    before = path.read_bytes() if path.is_file() else None
    with pytest.raises(SavedFileError) as e:
        wb.load(path)
    for w in words:
        assert w in str(e.value), str(e.value)
    assert str(path) in str(e.value)
    if before is not None:
        assert path.read_bytes() == before  # never overwritten
    return e.value


def test_bad_files_are_refused_clearly(saved_file, tmp_path):
    _refused(tmp_path / "missing.hlox", "no such file")
    (tmp_path / "notes.hlox").write_text("just some text\n")
    _refused(tmp_path / "notes.hlox", "not a saved exploration", "not a zip")
    (tmp_path / "empty.hlox").write_bytes(b"")
    _refused(tmp_path / "empty.hlox", "empty")
    data = saved_file.read_bytes()
    (tmp_path / "cut.hlox").write_bytes(data[: len(data) // 2])
    _refused(tmp_path / "cut.hlox", "truncated")
    with zipfile.ZipFile(saved_file) as z:
        info = z.getinfo("texts.zst")
        start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    flipped = bytearray(data)
    flipped[start + info.compress_size // 2] ^= 0xFF
    (tmp_path / "flipped.hlox").write_bytes(bytes(flipped))
    _refused(tmp_path / "flipped.hlox", "corrupt")
    with zipfile.ZipFile(tmp_path / "other.hlox", "w") as z:
        z.writestr("data.json", "{}")
    _refused(tmp_path / "other.hlox", "no manifest.json")


def test_a_file_from_a_newer_workbench_says_so(saved_file, tmp_path):
    newer = tmp_path / "newer.hlox"
    with zipfile.ZipFile(saved_file) as src, zipfile.ZipFile(newer, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name == "manifest.json":
                m = json.loads(data)
                m["format"], m["saved_by"]["workbench"] = saved.FORMAT + 1, "9.0"
                data = json.dumps(m)
            dst.writestr(name, data)
    err = _refused(newer, "format 2", "upgrade hlo-workbench", "9.0")
    assert "reads format 1" in str(err)


def test_a_crash_mid_save_leaves_the_old_file_whole(attention, saved_file, tmp_path, monkeypatch):
    path = tmp_path / "keep.hlox"
    path.write_bytes(saved_file.read_bytes())
    before = path.read_bytes()

    def boom(*a, **k):
        raise KeyboardInterrupt  # the user stops the kernel while the arrays are written

    monkeypatch.setattr(np, "savez", boom)
    with pytest.raises(KeyboardInterrupt):
        attention.save(path, arrays=True)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["keep.hlox"]  # no temporary file left behind
    assert wb.load(path).names == attention.names


def test_saving_into_a_folder_path_or_a_missing_folder_is_refused(attention, tmp_path):
    with pytest.raises(SavedFileError, match="is a folder"):
        attention.save(tmp_path)
    with pytest.raises(SavedFileError, match="does not exist"):
        attention.save(tmp_path / "no" / "such" / "a.hlox")


def test_the_file_is_small_on_a_3_layer_block(tmp_path):
    import bench_core

    fn, args = bench_core.make(3)
    ex = wb.explore(fn, *args)
    path = ex.save(tmp_path / "block.hlox")
    total = sum(len(s.text.encode()) for s in ex.stages)
    ratio = path.stat().st_size / total
    print(f"3-layer block: {total / 1e6:.2f} MB of stage texts -> {path.stat().st_size / 1e3:.0f} kB ({ratio:.3f})")
    assert ratio <= 0.3


def test_the_file_holds_the_cost_table_for_viewers_without_a_kernel(attention, saved_file):
    with zipfile.ZipFile(saved_file) as z:
        cost = json.loads(z.read("manifest.json"))["cost"]
    live = attention.cost()
    assert cost["columns"] == [str(c) for c in live.columns]
    rows = {r[0]: dict(zip(cost["columns"], r)) for r in cost["rows"]}
    assert list(rows) == attention.names
    assert rows["stablehlo"]["ops"] == int(live.set_index("stage").loc["stablehlo", "ops"])
    assert rows["xla:optimized"]["xla_flops"] == pytest.approx(attention.xla_result.cost["flops"])
    assert rows["jaxpr"]["ops"] is None  # not a module: null, as JSON has no NaN


def test_load_exploration_gives_the_saved_runs_as_run_results(tmp_path):
    """artifacts builds the RunResults from the checked manifest; the facade takes them as they are."""
    ex = wb.explore(lambda x, y: (jnp.tanh(x) @ y, x.sum()), jnp.linspace(0.0, 1.0, 6).reshape(2, 3),
                    jnp.ones((3, 2)), pipeline="canonicalize")
    first, second = ex.run(repeat=2), ex.run(ex.reference_stage().name, repeat=3)
    path = ex.save(tmp_path / "runs.hlox", arrays=True, cost=False)
    back = saved.load_exploration(path)
    assert isinstance(back, saved.SavedExploration) and back.arrays
    assert back.saved_by == back.built.spec.loaded.saved_by and back.saved_by["jax"] == jax.__version__
    for before, after in zip((first, second), back.runs, strict=True):
        assert type(after) is RunResult and type(after.check) is Check and type(after.timing) is Timing
        assert (after.stage, after.device) == (before.stage, before.device)
        assert after.timing == before.timing and after.check == before.check
        assert [type(leaf) for leaf in after.check.leaves] == [LeafCheck] * 2
        assert all(np.array_equal(np.asarray(a), b) for a, b in zip(jax.tree_util.tree_leaves(before.outputs),
                                                                    after.outputs, strict=True))
    assert [(r.stage, r.check, r.timing) for r in wb.load(path).runs] == \
           [(r.stage, r.check, r.timing) for r in back.runs]  # the facade's runs are these
    # without arrays: the same checks and timings, no outputs
    bare = saved.load_exploration(ex.save(tmp_path / "bare.hlox", cost=False))
    assert [(r.check, r.timing, r.outputs) for r in bare.runs] == [(first.check, first.timing, None),
                                                                   (second.check, second.timing, None)]


def test_saving_reads_only_what_saveable_declares(tmp_path):
    """An object with Saveable's members and nothing else saves the same file an Exploration does."""
    import types

    from typing_extensions import get_protocol_members  # typing's own from Python 3.13

    ex = wb.explore(lambda x: jnp.cos(x) + 1, jnp.arange(4.0), pipeline="canonicalize")
    ex.run(repeat=1)
    declared = get_protocol_members(saved.Saveable)  # stages.Staged's members and its own
    assert {"spec", "stages", "xla_result", "runs"} <= declared
    only = types.SimpleNamespace(**{n: getattr(ex, n) for n in declared})
    back = wb.load(saved.save_exploration(only, tmp_path / "only.hlox", arrays=True))
    assert [(s.name, s.text) for s in back.stages] == [(s.name, s.text) for s in ex.stages]
    assert back.runs[0].check == ex.runs[0].check and back.xla_passes == ex.xla_passes
    np.testing.assert_array_equal(back.spec.loaded.args[0], np.arange(4.0, dtype=np.float32))


def test_numbers_saved_as_integers_load_as_the_floats_a_check_holds(tmp_path):
    """JSON writes 0.0 as 0.0, but a file written by another tool may say 0: the RunResult still holds floats."""
    ex = wb.explore(lambda x: x * 2, jnp.ones(3), pipeline="canonicalize")
    run = ex.run(repeat=1)
    path = ex.save(tmp_path / "ints.hlox", cost=False)
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    manifest = json.loads(members["manifest.json"])
    leaf = manifest["runs"][0]["check"]["leaves"][0]
    assert leaf["max_abs"] == 0.0 and leaf["max_rel"] == 0.0  # doubling is exact
    leaf["max_abs"], leaf["max_rel"], manifest["runs"][0]["times"] = 0, 0, [1]
    members["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(path, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)
    (after,) = saved.load_exploration(path).runs
    got = after.check.leaves[0]
    assert (type(got.max_abs), type(got.max_rel), type(after.timing.times[0])) == (float, float, float)
    assert after.check == run.check and after.timing.times == (1.0,)


# -- what a run leaves in the manifest: plain JSON, by one encoder -----------------------------------
def test_a_run_with_an_all_zero_output_saves_and_loads_with_the_same_check(tmp_path):
    import jax
    import jax.numpy as jnp

    def f(x, key):
        return x * jax.random.normal(key, x.shape), jnp.zeros(3)

    ex = wb.explore(f, jnp.ones(3), jax.random.key(0))
    run = ex.run()
    back = wb.load(ex.save(tmp_path / "zeros.hlox"))
    (after,) = back.runs
    assert after.check == run.check and after.check.passed
    assert after.timing.times == run.timing.times


def test_a_per_dtype_tolerance_of_an_all_zero_output_is_saved_as_a_number(tmp_path):
    import jax
    import jax.numpy as jnp

    # random numbers and a LAPACK routine: neither a float64 evaluation nor a floating input to
    # nudge, so the per-dtype rule sets the tolerances; the all-zero output's came out a numpy float32
    def f(key):
        a = jax.random.normal(key, (3, 3)) + 4.0 * jnp.eye(3)
        return jnp.linalg.inv(a), jnp.zeros(3)

    ex = wb.explore(f, jax.random.key(0), pipeline="canonicalize")
    run = ex.run(repeat=2)
    assert [leaf.rule for leaf in run.check.leaves] == ["dtype", "dtype"]
    path = ex.save(tmp_path / "dtype.hlox")
    with zipfile.ZipFile(path) as z:
        leaf = json.loads(z.read("manifest.json"))["runs"][0]["check"]["leaves"][1]
    assert type(leaf["tolerance"]) is float and leaf["tolerance"] == run.check.leaves[1].tolerance
    assert leaf["shape"] == [3] and leaf["rule"] == "dtype"
    assert wb.load(path).runs[0].check == run.check


def test_the_encoder_makes_numpy_tuples_and_dataclasses_plain_and_names_what_it_cannot():
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Leaf:
        tolerance: float
        shape: tuple

    value = {"runs": [{"check": Leaf(np.float32(0.5), (np.int64(3), 2)), "times": np.array([1.0, 2.0]),
                       "passed": np.bool_(True), "max": float("inf")}]}
    plain = {"runs": [{"check": {"tolerance": 0.5, "shape": [3, 2]}, "times": [1.0, 2.0], "passed": True,
                       "max": float("inf")}]}
    assert jsonout.plain_json(value) == plain
    assert [type(x) for x in plain["runs"][0]["check"]["shape"]] == [int, int]
    assert json.loads(jsonout.json_text(value)) == plain  # NaN and infinities round-trip through Python's json
    with pytest.raises(ValueError, match=r"report\.runs\[0\]\.max is inf"):
        jsonout.json_text(value, "report", allow_nan=False)  # strict JSON, for a browser's JSON.parse
    with pytest.raises(TypeError, match=r"manifest\.runs\[0\]\.check\.shape\[1\] holds a builtins\.complex"):
        jsonout.plain_json({"runs": [{"check": Leaf(0.5, (3, 1j))}]}, "manifest")
    with pytest.raises(TypeError, match=r"manifest\.xla has a key 3"):
        jsonout.plain_json({"xla": {3: "three"}}, "manifest")


def test_a_value_that_cannot_be_saved_is_a_saved_file_error_and_nothing_is_written(attention, saved_file,
                                                                                    tmp_path):
    path = tmp_path / "keep.hlox"
    path.write_bytes(saved_file.read_bytes())
    before = path.read_bytes()
    table = attention.cost().copy()
    table["phase"] = [1j] * len(table)  # a complex column: JSON has no complex numbers
    with pytest.raises(SavedFileError) as e:
        saved.save_exploration(attention, path, cost=table)
    message = str(e.value)
    assert str(path) in message and "cost table's row[0].phase" in message and "no JSON form" in message
    assert "nothing was written" in message
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["keep.hlox"]  # no temporary file left behind


def test_a_loaded_program_with_a_prng_key_runs_from_its_saved_arrays(tmp_path):
    # JAX writes an empty mesh into a program that takes a key: it is not sharded, and runs loaded
    def f(x, key):
        return x * jax.random.normal(key, x.shape)

    ex = wb.explore(f, jnp.ones(3), jax.random.key(0))
    want = np.asarray(ex.run(repeat=1).outputs)
    loaded = wb.load(ex.save(tmp_path / "key.hlox", arrays=True))
    r = loaded.run(repeat=1)
    np.testing.assert_array_equal(np.asarray(r.outputs), want)


def test_bfloat16_arguments_and_outputs_come_back_as_bfloat16(tmp_path):
    """numpy's .npy keeps bfloat16 as raw bytes (|V2): a bf16 program saved with its arrays used to load
    arguments JAX refused ("Dtype |V2 is not a valid JAX array type") and outputs of no type."""
    x = jnp.arange(6, dtype=jnp.bfloat16).reshape(2, 3) / 4
    ex = wb.explore(lambda a: (a * 2, (a + 1).astype(jnp.float32)), x, pipeline="canonicalize")
    first = ex.run(repeat=1)
    back = wb.load(ex.save(tmp_path / "bf16.hlox", arrays=True))
    assert str(back.runs[0].outputs[0].dtype) == "bfloat16" and str(back.runs[0].outputs[1].dtype) == "float32"
    assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(back.runs[0].outputs, first.outputs))
    again = back.run(repeat=1)
    assert again.check.passed and np.array_equal(np.asarray(again.outputs[0]), np.asarray(first.outputs[0]))
    # a manifest that names another type for the bytes is refused, not guessed at
    with zipfile.ZipFile(tmp_path / "bf16.hlox") as z:
        members = {n: z.read(n) for n in z.namelist()}
    manifest = json.loads(members["manifest.json"])
    manifest["runs"][0]["dtypes"][0] = "float32"
    members["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(tmp_path / "lies.hlox", "w") as z:
        for n, data in members.items():
            z.writestr(n, data)
    with pytest.raises(SavedFileError, match=r"run0_0.npy does not hold the type the manifest says"):
        wb.load(tmp_path / "lies.hlox")


# -- the structural diffs a .hlox carries for viewers without a kernel (issue 27 item 10) -----------------
def _manifest_and_texts(path):
    """The manifest of a .hlox and its texts by hash, as the JupyterLab extension reads them."""
    import hashlib

    import zstandard

    with zipfile.ZipFile(path) as z:
        m = json.loads(z.read("manifest.json"))
        blob = zstandard.ZstdDecompressor().decompress(z.read("texts.zst"), max_output_size=m["texts_bytes"])
    texts = {t["sha256"]: blob[t["offset"]: t["offset"] + t["length"]].decode() for t in m["texts"]}
    assert all(hashlib.sha256(v.encode()).hexdigest() == k for k, v in texts.items())
    return m, texts


def test_a_saved_file_carries_no_per_stage_diff_and_its_loaded_stages_diff_as_the_live_ones(attention, saved_file):
    """A .hlox holds the stages' texts and no diff: the views without a kernel ask the Jupyter server extension,
    which loads the file and diffs the pair asked for (views/labserver.py). The carried diffs doubled a file
    (the attention example 108 -> 211 kB) and a large save's time; what the texts' index lists is the stages'
    own texts and the input, nothing normalized."""
    from workbench.artifacts.stage_diffs import carried

    m, texts = _manifest_and_texts(saved_file)
    assert not [s["name"] for s in m["stages"] if "diff" in s or "normalized" in s]
    own = {s["text"] for s in m["stages"]} | {s.get("located") for s in m["stages"]} | {m["input"]}
    assert set(texts) == own - {None}
    back = wb.load(saved_file)
    for left, right in (("canonicalize#1", "cse#1"), (attention.names[1], attention.names[-1])):
        assert carried(back.diff(left, right)) == carried(attention.diff(left, right))


def test_a_file_of_an_earlier_workbench_with_carried_diffs_and_shapes_still_loads(small_file, tmp_path):
    """Files saved before this workbench carry each stage's diff against its parent (its normalized texts among
    the texts) and its normalized shape: they load as before, their form still checked (test_hostile_files),
    and nothing of them is read, so a diff that no longer fits its stages changes nothing; saved again, the
    file carries none."""
    from workbench.analysis.diff.explorations import module_shape
    from workbench.artifacts.stage_diffs import carried

    path, ex = small_file

    def older(manifest, texts):
        by_name = {s.name: s for s in ex.stages}
        for row in manifest["stages"]:
            stage = by_name[row["name"]]
            if stage.group != "backend" and not stage.error:
                row["normalized"] = module_shape(stage)
            if stage.parent and not stage.error and not by_name[stage.parent].error:
                d = carried(ex.diff(stage.parent, stage.name))
                row["diff"] = {"before": _add(texts, d["before"]) if d["before"] else None,
                               "after": _add(texts, d["after"]) if d["after"] else None, "runs": d["runs"]}

    older_file = _rewritten(path, tmp_path / "older.hlox", older)
    m, _ = _manifest_and_texts(older_file)
    assert sum("diff" in s for s in m["stages"]) == sum(1 for s in ex.stages if s.parent and not s.error) > 3
    back = wb.load(older_file)
    assert back.names == ex.names and [s.text for s in back.stages] == [s.text for s in ex.stages]

    def moved(manifest, texts):  # a diff that starts elsewhere than its parent: not read, not refused
        older(manifest, texts)
        row = next(r for r in manifest["stages"] if r.get("diff") and r["diff"]["before"] != r["diff"]["after"])
        row["diff"]["before"] = row["diff"]["after"]

    back = wb.load(_rewritten(path, tmp_path / "moved.hlox", moved))
    assert [s.text for s in back.stages] == [s.text for s in ex.stages]
    m, _ = _manifest_and_texts(back.save(tmp_path / "again.hlox"))
    assert not [s["name"] for s in m["stages"] if "diff" in s or "normalized" in s]


# -- a file changed after it was saved: what it stores twice must agree -------------------------------------
SMALL = """module @m {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
    %1 = stablehlo.multiply %0, %arg0 : tensor<4xf32>
    %2 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
    %3 = stablehlo.add %1, %2 : tensor<4xf32>
    return %3 : tensor<4xf32>
  }
}
"""


@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    ex = wb.explore_text(SMALL, pipeline="cse,canonicalize,cse")
    return ex.save(tmp_path_factory.mktemp("agree") / "small.hlox"), ex


def _rewritten(path, out, change):
    """``path`` with ``change(manifest, texts)`` applied (``texts``: each text by its hash; the change adds
    texts as ``texts[sha] = text`` and points stage entries at them), every checksum and size recomputed as
    ``save`` computes them, the other members as they were: a file that passes every integrity check."""
    import hashlib

    import zstandard

    with zipfile.ZipFile(path) as z:
        members = {i.filename: (z.read(i.filename), i.compress_type) for i in z.infolist()}
    manifest = json.loads(members["manifest.json"][0])
    blob = zstandard.ZstdDecompressor().decompress(members["texts.zst"][0], max_output_size=manifest["texts_bytes"])
    texts = {t["sha256"]: blob[t["offset"]:t["offset"] + t["length"]].decode() for t in manifest["texts"]}
    change(manifest, texts)
    index, at, parts = [], 0, []
    for h, text in texts.items():
        data = text.encode()
        assert hashlib.sha256(data).hexdigest() == h
        index.append({"sha256": h, "offset": at, "length": len(data)})
        parts.append(data)
        at += len(data)
    blob = b"".join(parts)
    manifest.update(texts=index, texts_bytes=len(blob), texts_sha256=hashlib.sha256(blob).hexdigest())
    members["manifest.json"] = (json.dumps(manifest).encode(), members["manifest.json"][1])
    members["texts.zst"] = (zstandard.ZstdCompressor().compress(blob), members["texts.zst"][1])
    with zipfile.ZipFile(out, "w") as z:
        for name, (data, how) in members.items():
            z.writestr(name, data, compress_type=how)
    return out


def _add(texts: dict, text: str) -> str:
    import hashlib

    h = hashlib.sha256(text.encode()).hexdigest()
    texts[h] = text
    return h


def _changed_stage(manifest) -> dict:
    return next(r for r in manifest["stages"] if r["group"] == "mlir" and r["changed"] and r.get("located"))


def test_a_saved_file_whose_stage_text_was_changed_by_hand_is_refused_naming_the_stage(small_file, tmp_path):
    """The issue's file: one stage's text rewritten (an add made a subtract), its checksums recomputed. It
    loaded, and ``ex[stage].text`` said subtract where the report, reading the text with locations, said add."""
    path, ex = small_file
    assert [s.name for s in wb.load(path).stages] == ex.names  # as saved, it loads
    named = {}

    def edit(manifest, texts):
        row = _changed_stage(manifest)
        named["stage"] = row["name"]
        row["text"] = _add(texts, texts[row["text"]].replace("stablehlo.multiply", "stablehlo.subtract"))

    bad = _rewritten(path, tmp_path / "edited.hlox", edit)
    with pytest.raises(SavedFileError) as caught:
        wb.load(bad)
    message = str(caught.value)
    assert f"stage {named['stage']!r}: its text is not its text with locations without the locations" in message
    assert "stablehlo.subtract" in message and "stablehlo.multiply" in message  # the line that differs
    assert "ex.with_text(stage, text)" in message


def test_a_hand_edit_of_both_texts_that_leaves_changed_wrong_is_refused(small_file, tmp_path):
    """Both copies of a stage's text edited alike: the stage after it, unchanged, still names the old text,
    so its ``changed`` (no) no longer says what its texts say."""
    path, ex = small_file

    def edit(manifest, texts):
        rows = manifest["stages"]
        k, row = next((k, r) for k, r in enumerate(rows) if r["group"] == "mlir" and r.get("located")
                      and k + 1 < len(rows) and rows[k + 1]["text"] == r["text"])
        row["text"] = _add(texts, texts[row["text"]] + "\n")
        row["located"] = _add(texts, texts[row["located"]] + "\n")

    with pytest.raises(SavedFileError, match=r"is marked changed=False, but its text is not its parent '.*'s"):
        wb.load(_rewritten(path, tmp_path / "both.hlox", edit))


def test_a_flipped_changed_flag_is_refused(small_file, tmp_path):
    path, ex = small_file

    def flip(manifest, texts):
        _changed_stage(manifest)["changed"] = False

    with pytest.raises(SavedFileError, match=r"is marked changed=False, but its text is not its parent"):
        wb.load(_rewritten(path, tmp_path / "flipped.hlox", flip))


def test_a_rewritten_file_that_changes_nothing_loads(small_file, tmp_path):
    """The rewriting itself is not what is refused: the same file, rewritten unchanged, loads."""
    path, ex = small_file
    same = wb.load(_rewritten(path, tmp_path / "same.hlox", lambda m, t: None))
    assert [s.text for s in same.stages] == [s.text for s in ex.stages]
