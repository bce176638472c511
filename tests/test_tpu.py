"""The user's road on a TPU: explore, cost, run, drift against the CPU, pattern and XLA toggles, the measured
profile, the compile profile, save, load and the report, with every default a user gets, on the examples and on
the corpus's Flax NNX and Optax steps. They run where JAX sees a TPU (the TPU machine of
``../shared/device/README.md``: ``bash .device/p2/tpu-run.sh python3 -m pytest -q -p no:cacheprovider
tests/test_tpu.py``) and are skipped elsewhere, saying why: each asks for tests/conftest.py's ``tpu`` fixture.
What the TPU writes (dumps, traces, costs) is tested on any machine from tests/fixtures/tpu."""
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import workbench as wb
from tests.corpus import program
from workbench import examples


@functools.lru_cache(maxsize=None)
def explored(name: str):
    fn, args = examples.load(name)
    return wb.explore(fn, *args)


@functools.lru_cache(maxsize=None)
def explored_corpus(name: str):
    inst = program(name).build()
    return wb.explore(inst.fn, *inst.args)


@pytest.mark.parametrize("name", examples.NAMES)
def test_the_default_device_is_the_tpu_and_its_own_passes_are_stages(tpu, name):
    ex = explored(name)
    assert ex.spec.device == "tpu:0"
    assert "# on tpu" in ex["jaxpr"].produced_by
    names = ex.names
    assert "xla:optimized" in names and "backend:buffer-assignment" in names and "backend:memory-usage" in names
    tpu_passes = [n for n in names if n.startswith("xla:") and any(p in n for p in ("tpu", "tiling", "memory-space"))]
    assert tpu_passes, names
    assert ":T(" in ex["xla:optimized"].text  # the TPU's tiled layouts are kept, not stripped
    assert "backend:llvm-ir" not in names


@pytest.mark.parametrize("name", examples.NAMES)
def test_cost_has_xlas_numbers_for_every_module_and_the_tpus_own_estimate(tpu, name):
    ex = explored(name)
    table = ex.cost(device="tpu:0").set_index("stage")
    assert table.loc["stablehlo", "xla_flops"] is not None and float(table.loc["stablehlo", "xla_flops"]) > 0
    assert float(table.loc["xla:optimized", "xla_estimate_s"]) > 0  # the TPU compiler's optimal_seconds
    assert math.isfinite(float(table.loc["stablehlo", "roofline_bytes_s"]))
    assert ex.cost("xla:optimized").flops.sum() >= 0


def test_the_roofline_takes_the_tpus_spec_sheet_from_its_kind(tpu):
    from workbench.analysis.cost.peaks import peak_of

    peak = peak_of(tpu)
    assert peak is not None and peak.device.startswith("TPU v") and peak.bytes_per_s > 1e11


@pytest.mark.parametrize("name", examples.NAMES)
def test_a_run_on_the_tpu_is_checked_and_the_same_stage_runs_on_the_cpu(tpu, name):
    ex = explored(name)
    r = ex.run(repeat=3)
    assert r.device == "tpu:0" and r.check.passed, r.check
    leaf = jax.tree_util.tree_leaves(r.outputs)[0]
    assert next(iter(leaf.devices())).platform == "tpu"
    on_cpu = ex.run(device="cpu", repeat=1)
    assert on_cpu.check.passed, on_cpu.check
    assert next(iter(jax.tree_util.tree_leaves(on_cpu.outputs)[0].devices())).platform == "cpu"


def test_drift_against_the_cpu_finds_where_the_tpus_matmul_leaves_the_cpus_numbers(tpu):
    """A float32 matmul over K=1024: the TPU's default precision rounds its inputs to bfloat16 (one MXU pass);
    against the program run on the CPU the first value that leaves the CPU's numbers is the dot's."""
    rng = np.random.default_rng(0)
    a, b = (jnp.asarray(rng.standard_normal((64, 1024)), jnp.float32),
            jnp.asarray(rng.standard_normal((1024, 32)), jnp.float32))
    ex = wb.explore(lambda a, b: jnp.tanh(a @ b) * 2.0, a, b)
    d = ex.drift(reference_device="cpu")
    assert "cpu" in d.note and d.compared >= 1, d.summary()
    assert d.found and "dot" in d.op.op, d.summary()


def test_toggles_recompute_on_the_tpu_and_an_xla_toggle_is_compiled_in_a_child(tpu):
    ex = explored("attention")
    ex2 = ex.with_xla(disable=["algsimp"])
    assert not any("algsimp" in n for n in ex2.names if n.startswith("xla:"))
    assert "xla:optimized" in ex2.names and not any("died" in w for w in ex2.warnings), ex2.warnings
    assert ex2.run(repeat=1).check.passed
    patterns = ex.applicable("stablehlo")
    ex3 = ex.with_patterns(disable=patterns[:1])
    assert ex3.run(repeat=1).check.passed


def test_the_profile_measures_every_call_and_covers_the_nnx_steps_time(tpu):
    ex = explored_corpus("nnx_transformer")
    p = ex.profile()
    assert p.calls == 10 and p.coverage >= 0.85, p
    fusions = p.table[p.table.op == "fusion"]
    assert len(fusions) > 3 and fusions.flops.notna().any() and fusions.roofline_us.notna().any()


def test_the_compile_profile_lists_the_tpus_passes(tpu):
    ex = explored("attention")
    cp = ex.compile_profile()
    xla = cp.table[cp.table.kind == "xla pass"]
    assert len(xla) > 20 and xla.seconds.sum() > 0
    assert any("fusion" in n for n in xla.name), list(xla.name)[:40]


@pytest.mark.parametrize("name", ["nnx_transformer", "optax_chain"])
def test_a_real_library_step_explores_runs_saves_loads_and_reports_on_the_tpu(tpu, tmp_path, name):
    ex = explored_corpus(name)
    assert ex.spec.device == "tpu:0" and "xla:optimized" in ex.names
    r = ex.run(repeat=2)
    assert r.check.passed, r.check
    path = ex.save(tmp_path / f"{name}.hlox")
    back = wb.load(path)
    assert back.names == ex.names and back.spec.device == "tpu:0"
    assert back["xla:optimized"].text == ex["xla:optimized"].text
    html = ex.report(tmp_path / f"{name}.html")
    assert "tpu:0" in open(html).read()


def test_the_readmes_tpu_block_runs_as_written_on_the_tpu(tpu):
    """README "On a TPU": its block, as written, in this process (the chip is this process's: a child could
    not open it)."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("### On a TPU", 1)[1].split("\n### ", 1)[0]
    block = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)[0]
    scope: dict = {}
    exec(compile(block, "README.md (On a TPU)", "exec"), scope)
    assert scope["ex"].spec.device == "tpu:0" and scope["r"].check.passed and scope["on_cpu"].check.passed
    assert scope["p"].calls > 0 and float(scope["table"].set_index("stage").loc["xla:optimized", "xla_estimate_s"]) > 0


# -- the TPU's kernels (issue 48): libtpu's LLO and bundles through ex.backend() -----------------------------------
def _bf16(tree):
    return jax.tree.map(lambda a: a.astype(jnp.bfloat16) if getattr(a, "dtype", None) == jnp.float32 else a, tree)


@pytest.mark.parametrize("name", ["attention_bf16", "nnx_transformer"])
def test_every_fusion_has_its_kernel_with_bundles_occupancy_and_llo_stages(tpu, name):
    import os

    if name == "attention_bf16":
        fn, args = examples.load("attention")
        ex = wb.explore(fn, *_bf16(args))
    else:
        ex = explored_corpus("nnx_transformer")
    before = os.environ.get("LIBTPU_INIT_ARGS")
    kernels = ex.backend()
    assert os.environ.get("LIBTPU_INIT_ARGS") == before  # the dump flags are the child's, never this process's
    assert kernels.available, kernels.why
    assert kernels.device_kind and kernels.clock_hz
    table = kernels.table()
    entry = ex["xla:optimized"].text
    fusions = {ln.split("=")[0].strip().removeprefix("ROOT ").lstrip("%").strip()
               for ln in entry.split("ENTRY", 1)[1].splitlines() if " fusion(" in ln}
    assert fusions and fusions <= set(table["fusion"])  # every fusion of xla:optimized, by the same name
    assert (table["bundles"] > 0).all() and table["estimated_cycles"].notna().any()
    for fusion in table["fusion"]:
        stages = kernels.kernel(fusion).stages()
        assert stages and stages[-1].name.endswith("final_bundles")
    # reading the table opened the kernels' summaries, not their passes' LLO (most of the dump)
    assert kernels.bytes_read < kernels.index.total_bytes


def test_the_bf16_matmul_is_mxu_bound_and_an_elementwise_chain_dma_bound(tpu):
    def matmul(a, b):
        return a @ b

    def chain(x):
        return ((x * 1.5 + 2.0) * x - 0.5) * x + 0.25

    key = jax.random.PRNGKey(0)
    n = 8192
    a = jax.random.normal(key, (n, n), jnp.bfloat16)
    ex = wb.explore(matmul, a, a)
    ex.profile()
    row = ex.backend().table().iloc[0]
    rate = 2 * n ** 3 / (row["measured_us"] * 1e-6)
    print(f"bf16 {n}^3 matmul: MXU occupancy {row['MXU']:.2f}, {rate / 1e12:.1f} TFLOP/s of the v5e's 197")
    assert row["MXU"] >= 0.8 and row["bound"] == "MXU-bound"
    assert 0.3 * 197e12 < rate < 1.05 * 197e12
    ex = wb.explore(chain, jax.random.normal(key, (n, n), jnp.float32))
    ex.profile()
    row = ex.backend().table().iloc[0]
    print(f"elementwise chain: {row['hbm_bytes'] / (row['measured_us'] * 1e-6) / 1e9:.0f} GB/s; {row['bound']}")
    assert row["bound"] == "DMA-bound" and row["hbm_bytes"] == 2 * n * n * 4


def test_a_step_with_a_debug_print_has_its_kernels(tpu):
    def printed(x, w):
        y = jnp.tanh(x @ w)
        jax.debug.print("mean {m}", m=y.mean())
        return y.sum(axis=0)

    ex = wb.explore(printed, jnp.ones((64, 128)), jnp.ones((128, 128)) / 128)
    kernels = ex.backend()
    assert kernels.available, kernels.why
    assert len(kernels.table()) >= 1 and ex.run().check.passed


def test_the_readmes_kernels_block_runs_as_written_on_the_tpu(tpu):
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("### The TPU's kernels", 1)[1].split("\n### ", 1)[0]
    block = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)[0]
    scope: dict = {}
    exec(compile(block, "README.md (The TPU's kernels)", "exec"), scope)
    assert scope["k"].available and scope["t"]["bound"].iloc[0] == "MXU-bound"
    assert scope["mine"]


def test_the_panels_backend_tab_compiles_for_the_kernels_on_the_tpu(tpu):
    """The Backend tab of a panel on the TPU: opening it runs ex.backend() on the panel's worker (the LLO child), then
    lists every fusion with its bundles; a line of the user's picks its fusions."""
    pytest.importorskip("enzyme_ad.jax")
    from pathlib import Path

    from workbench.views.widgets import Panel
    from workbench.views.widgets.backendtab import TITLE

    if not (Path(wb.__file__).parent / "assets" / "views.js").exists():  # a git-ignored build output
        pytest.skip("the view components are not built in this checkout (scripts/setup.sh builds "
                    "workbench/assets/views.js; the device's carry can take it along)")

    inst = program("nnx_transformer").build()
    ex = wb.explore(inst.fn, *inst.args)
    p = Panel(ex, background=False)
    try:
        assert TITLE in p.tabs.titles
        p.tabs.selected_index = list(p.tabs.titles).index(TITLE)
        p.wait()
        data = p.backend.view.data
        assert p.last_error is None and ex._kernels is not None and ex._kernels.available
        rows = data["backend"]["rows"]
        assert len(rows) == len(ex._kernels.table()) >= 60 and all(r["bundles"] > 0 for r in rows)
        line = rows[0]["line"]
        assert ex._kernels.for_line(line.rsplit("/", 1)[-1])
    finally:
        p.close()
