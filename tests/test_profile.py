"""Where the time goes, measured by JAX's profiler: run time per HLO instruction joined to XLA's cost and the
user's lines (``ex.profile``, ``ex.source_map(measured=...)``), and compile time per step of both pipelines
(``ex.compile_profile``), on a Flax NNX transformer block's AdamW training step with a ``jax.debug.print``,
and on the built-in examples."""
import json
import re

import jax
import optax
import pytest
from flax import nnx

import workbench as wb
from workbench import examples
from workbench.analysis.profile.capture import Event
from workbench.analysis.profile.runtime import calls_of
from workbench.errors import WorkbenchError
from tests.corpus.flax_programs import Block

D, SEQ, BATCH = 128, 64, 8  # big enough that XLA's thunks, not their dispatch, take a call's time


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        loss = ((model(x) - y) ** 2).mean()
        jax.debug.print("loss {l}", l=loss)
        return loss

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


@pytest.fixture(scope="module")
def block_step():
    model = Block(D, 4, 4 * D, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)
    x = jax.random.normal(jax.random.key(1), (BATCH, SEQ, D))
    y = jax.random.normal(jax.random.key(2), (BATCH, SEQ, D))
    # on the CPU, whose thunks and pass names these tests count: on a TPU the step's jax.debug.print round trips
    # to the host take most of each call (two rows over 1%), and its passes have the TPU's names; the TPU's
    # profile is tests/test_tpu.py's and tests/test_profile_tpu.py's
    ex = wb.explore(train_step, model, optimizer, x, y, device="cpu")
    assert ex.error is None and all(not s.error for s in ex.stages)
    return ex


@pytest.fixture(scope="module")
def block_profile(block_step):
    return block_step.profile(repeat=5)


def test_the_instructions_measured_account_for_a_training_steps_call_and_each_big_one_names_its_lines(block_profile):
    prof, table = block_profile, block_profile.table
    assert prof.calls == 5 and prof.stage == "enzyme-hlo-patterns#3"
    assert prof.coverage >= 0.85, prof  # the union of the instructions' intervals over the call's span
    names = set(table["instruction"])
    assert all(f" {n} = " in prof.hlo or f"%{n} = " in prof.hlo or f"{n} = " in prof.hlo for n in names)
    big = table[table["share"] > 0.01]
    assert len(big) >= 5
    assert (big["lines"] != "(no location)").all(), big[["instruction", "lines"]]
    assert (big["your_lines"].str.contains("flax_programs.py")).any()  # the Block's own lines, past flax's
    assert (table["median_us"] >= 0).all() and (table["p25_us"] <= table["p75_us"]).all()
    # XLA's own cost and the roofline at this machine's measured peaks sit beside the measured time
    dots = table[table["flops"].fillna(0) > 1_000_000]
    assert len(dots) and (dots["roofline_us"] > 0).all()
    top = table.iloc[0]
    assert top["mlir_ops"], top  # its counterparts in the profiled MLIR stage
    assert "instruction" in prof._repr_html_() and "covering" in repr(prof)


def test_the_measured_source_map_splits_each_instruction_over_its_lines_and_loses_no_time(block_step, block_profile):
    sm = block_step.source_map(measured=block_profile)
    total = block_profile.table["median_us"].sum()
    assert sm["measured_us"].sum() == pytest.approx(total, rel=1e-6)
    assert sm.attrs["profile"] is block_profile
    # a library's line (flax's Linear, optax's update) reached from several lines of the step is a row per line
    # of the user's: its time is split over them, and the rows say so
    shared = sm.duplicated(["file", "line"], keep=False) & (sm["measured_us"] > 0)
    assert shared.any() and sm.loc[shared, "measured_how"].str.contains("lines of yours that reach it").all()
    hows = {h.split("; ")[0] for cell in sm["measured_how"] for h in cell.split(", ") if h}
    assert "one line" in hows and hows <= {"one line", "split by flops", "split by bytes", "split evenly"}
    assert {"stablehlo_ops", "mlir_ops", "xla_ops"} <= set(sm.columns)  # the static columns are still there
    top = sm.sort_values("measured_us", ascending=False).iloc[0]
    assert top["file"].endswith(".py") and top["measured_share"] > 0.05


def test_the_compile_profile_lists_every_mlir_stage_and_xla_stage_and_adds_up_to_its_clocks(block_step):
    cp = block_step.compile_profile()
    t = cp.table
    mlir = [s.name for s in block_step.stages if s.group == "mlir"]
    assert list(t[t["kind"] == "mlir pass"]["stage"]) == mlir
    made = {s.name for s in block_step.stages if s.group == "xla" and "#" in s.name}
    listed = {x for cell in t["stages"] for x in cell.split(", ") if x}
    assert made and made <= listed, made - listed  # each XLA stage: the pass run that made it
    assert set(t["stage"]) - {""} <= listed
    passes = t[t["kind"] == "xla pass"]
    assert len(passes) > 100 and (passes["seconds"] >= 0).all()
    assert {"algsimp", "fusion", "layout-assignment"} <= set(passes["name"])
    assert (t["kind"] == "xla backend").any() and list(t["kind"])[:2] == ["trace", "lowering"]
    assert t["share"].sum() == pytest.approx(1.0)
    assert cp.total_s == pytest.approx(t["seconds"].sum())
    # the trace, lowering and MLIR rows are the exploration's own clocks; the XLA rows add up to the profiled
    # compile's wall time (how close that comes to the exploration's own compile: bench/bench_profile.py)
    ours = t[t["kind"].isin(["trace", "lowering", "mlir pass"])]["seconds"].sum()
    stages = [s for s in block_step.stages if s.group == "mlir"]
    traced = block_step.spec.traced
    assert ours == pytest.approx(traced.seconds_jaxpr + traced.seconds_lower + sum(s.seconds for s in stages))
    assert t[t["kind"].str.startswith("xla")]["seconds"].sum() == pytest.approx(cp.xla_wall_s) and cp.xla_wall_s > 0


def test_a_loop_body_runs_many_times_a_call_and_its_time_is_not_counted_twice():
    fn, args = examples.load("scan")
    ex = wb.explore(fn, *args, pipeline="none")
    prof = ex.profile("stablehlo", repeat=3)
    t = prof.table
    assert (t["runs_per_call"] > 1).any()  # a thunk of the scan's body, once per step
    assert t["median_us"].sum() <= prof.call_us * 1.05 * 4  # self times: a while holds its body's thunks


def test_self_times_subtract_nested_instruction_events_on_one_thread():
    def ev(name, start, dur, run=7):
        return Event(name, start, dur, "pool/1", "/host:CPU", (("hlo_op", name), ("hlo_module", "m"), ("run_id", run)))

    events = [ev("while", 0, 100), ev("body_a", 10, 30), ev("body_a", 50, 20), ev("after", 120, 10),
              ev("other_run", 500, 5, run=8)]
    calls = calls_of(events, "m")
    assert [c.run_id for c in calls] == [7, 8]
    c = calls[0]
    assert c.self_ns == {"while": 50, "body_a": 50, "after": 10} and c.count["body_a"] == 2
    assert c.wall_ns == 130 and c.covered_ns == 110


def test_a_profile_while_the_users_own_trace_runs_is_refused_in_words_and_works_after(tmp_path):
    fn, args = examples.load("mlp")
    ex = wb.explore(fn, *args, pipeline="none")
    jax.profiler.start_trace(str(tmp_path / "mine"))
    try:
        with pytest.raises(WorkbenchError, match="one at a time"):
            ex.profile(repeat=1)
    finally:
        jax.profiler.stop_trace()
    prof = ex.profile(repeat=2, keep=str(tmp_path / "kept"))
    assert prof.calls == 2 and list((tmp_path / "kept").rglob("*.xplane.pb"))
    with pytest.raises(WorkbenchError, match="jaxpr"):
        ex.profile("jaxpr")


def test_hlo_workbench_profile_prints_both_tables(cli):
    r = cli("profile", "mlp", "--top", "5", "--repeat", "3")
    assert r.returncode == 0, r.stderr
    assert "# Run time per instruction: Profile(" in r.stdout and "# Compile time per step: CompileProfile(" in r.stdout
    assert "xla backend" in r.stdout and "mlir pass" in r.stdout and "mlp.py:" in r.stdout


def test_the_report_carries_the_profiles_taken_and_says_how_to_take_them_when_none_was(tmp_path, cli):
    fn, args = examples.load("mlp")
    ex = wb.explore(fn, *args)
    page = (ex.report(tmp_path / "none.html")).read_text()
    assert "Where the time goes" in page and "No run profile" in page and "report --profile" in page
    prof = ex.profile(repeat=2)
    cp = ex.compile_profile(patterns=True)
    assert ex.profiles == {"run": prof, "compile": cp}
    groups = cp.patterns
    assert set(groups["stage"]) == {s.name for s in ex.stages if s.name.startswith("enzyme-hlo-patterns")}
    assert {"base", "const-prop"} <= set(groups["group"]) and (groups["seconds"].dropna() > 0).all()
    page = (ex.report(tmp_path / "both.html")).read_text()
    assert "Run time per instruction" in page and "No run profile" not in page
    assert f"<td>{prof.table['instruction'].iloc[0]}</td>" in page
    # the compile profile is the view's (its component draws it from the model the page carries)
    model = json.loads(re.search(r'<script type="application/json" id="wb-model">(.*?)</script>', page).group(1))
    assert "xla backend" in json.dumps(model["compile"]["table"])
    r = cli("report", "mlp", "--html", tmp_path / "cli.html", "--profile")
    assert r.returncode == 0, r.stderr
    assert "Run time per instruction" in (tmp_path / "cli.html").read_text()


def test_a_file_saved_with_its_profiles_loads_them_and_their_traces_and_refuses_a_missing_trace(tmp_path):
    import zipfile

    from jax.profiler import ProfileData

    from workbench.errors import SavedFileError

    fn, args = examples.load("mlp")
    ex = wb.explore(fn, *args)
    path = ex.save(tmp_path / "p.hlox", profile=True)  # no profile taken yet: both are taken first
    run, cp = ex.profiles["run"], ex.profiles["compile"]
    with zipfile.ZipFile(path) as z:
        assert {"profile_run.xplane.pb", "profile_compile.xplane.pb"} <= set(z.namelist())
    back = wb.load(path)
    got_run, got_cp = back.profiles["run"], back.profiles["compile"]
    assert got_run.table["instruction"].tolist() == run.table["instruction"].tolist()
    assert got_run.table["median_us"].tolist() == pytest.approx(run.table["median_us"].tolist())
    assert (got_run.stage, got_run.calls, got_run.trace) == (run.stage, run.calls, run.trace)
    assert got_cp.table["stage"].tolist() == cp.table["stage"].tolist() and got_cp.trace == cp.trace
    assert got_cp.total_s == pytest.approx(cp.total_s)
    written = got_run.write_trace(str(tmp_path / "tb"))  # where TensorBoard's profile plugin looks
    assert written.endswith(".xplane.pb") and any(p.lines for p in ProfileData.from_file(written).planes)
    sm = back.source_map(measured=got_run)  # the measured source map from the loaded profile, no run
    assert sm["measured_us"].sum() == pytest.approx(run.table["median_us"].sum())
    assert "Run time per instruction" in back.report(tmp_path / "r.html").read_text()
    assert wb.load(ex.save(tmp_path / "plain.hlox")).profiles == {}  # without profile=True: none kept

    # a manifest that names a trace the zip lacks is refused, nothing built
    broken = tmp_path / "broken.hlox"
    with zipfile.ZipFile(path) as z, zipfile.ZipFile(broken, "w") as out:
        for name in z.namelist():
            if name != "profile_run.xplane.pb":
                out.writestr(name, z.read(name))
    with pytest.raises(SavedFileError, match="profile_run.xplane.pb is missing"):
        wb.load(broken)


def test_a_devices_kernel_events_are_the_times_and_a_trace_without_run_ids_is_averaged_over_the_calls():
    def ev(name, start, dur, plane):
        return Event(name, start, dur, "stream 7" if plane.startswith("/device") else "host", plane,
                     (("hlo_op", name), ("hlo_module", "m")))

    events = [ev("fusion", 0, 400, "/device:GPU:0"), ev("fusion", 1000, 600, "/device:GPU:0"),
              ev("fusion", 0, 5, "/host:CPU"), ev("dot", 500, 200, "/device:GPU:0")]
    (call,) = calls_of(events, "m", repeat=2)
    assert call.self_ns == {"fusion": 500, "dot": 100} and call.count == {"fusion": 1, "dot": 0.5}
    assert call.wall_ns == 800 and call.covered_ns == 600


def test_reading_a_trace_is_linear_in_its_events(monkeypatch):
    """calls_of reads each event's statistics a bounded number of times, however many calls and instructions:
    counted, for traces of 10 and 100 calls of 200 instructions each."""
    counted = {"n": 0}
    stat = Event.stat

    def counting(self, key, default=None):
        counted["n"] += 1
        return stat(self, key, default)

    monkeypatch.setattr(Event, "stat", counting)

    def trace(calls: int) -> list:
        out = []
        for c in range(calls):
            for k in range(200):
                start = c * 10_000 + k * 40
                out.append(Event(f"fusion.{k}", start, 30, "pool/1", "/host:CPU",
                                 (("hlo_op", f"fusion.{k}"), ("hlo_module", "m"), ("run_id", c))))
            out.append(Event("ThunkExecutor::Execute (wait for completion)", c * 10_000, 8_000, "pool/2", "/host:CPU",
                             (("run_id", c),)))
        return out

    work = []
    for calls in (10, 100):
        events = trace(calls)
        counted["n"] = 0
        found = calls_of(events, "m")
        assert len(found) == calls and all(len(c.self_ns) == 200 for c in found)
        work.append(counted["n"] / len(events))
    assert work[1] <= work[0] * 1.1  # per event, the same work at 10x the size
