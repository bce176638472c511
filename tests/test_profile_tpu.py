"""Where the time goes on a TPU, read from the profiler's traces recorded on a TPU v5e (tests/fixtures/tpu,
written by scripts/record_tpu.py): no TPU needed. The run's instructions are the device's ``XLA Ops`` events
(named by their HLO text) inside each ``XLA Modules`` event (one per call); the compile's passes run on the
compiler's ``xla_tpu_thread/N`` threads and an unnamed one, matched to the dump folder's stages."""
import json
import lzma
import statistics
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from jax.profiler import ProfileData

from workbench.analysis.cost.peaks import peak_of
from workbench.analysis.profile.capture import read_events
from workbench.analysis.profile.compile import xla_pass_rows
from workbench.analysis.profile.runtime import (calls_of, instruction_of, instruction_origins, instruction_rows,
                                                module_of, trace_lines)
from workbench.backends import backend_for
from workbench.pipeline.xla import read_dumps

FIXTURES = Path(__file__).parent / "fixtures" / "tpu"
TPU = backend_for("tpu")
LAYOUT = TPU.trace
SMALL = {"copy-start", "copy-done", "fusion.2", "fusion.1", "divide_reduce_fusion"}  # its optimized HLO's entry


def _trace(name: str) -> bytes:
    data = (FIXTURES / name).read_bytes()
    return lzma.decompress(data) if name.endswith(".xz") else data


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    where = tmp_path_factory.mktemp("tpu-dumps")
    with tarfile.open(FIXTURES / "dumps.tar.xz", "r:xz") as tar:
        tar.extractall(where, filter="data")
    return read_dumps(str(where / "dumps"), TPU.dumps)


@pytest.fixture(scope="module")
def small_calls():
    return calls_of(read_events(_trace("run.xplane.pb"), trace_lines(LAYOUT)), "jit_small", 3, LAYOUT)


def _module_events(data: bytes) -> list:
    """The device's module events as the profiler itself holds them: (start ps, duration ps, run_id)."""
    out = []
    for plane in ProfileData.from_serialized_xspace(data).planes:
        for line in plane.lines:
            if line.name == "XLA Modules":
                for e in line.events:
                    stats = dict(e.stats)
                    out.append((int(stats["device_offset_ps"]), int(stats["device_duration_ps"]), stats["run_id"]))
    return out


def test_an_op_event_named_by_its_hlo_text_is_its_instruction_and_a_module_event_its_module():
    assert instruction_of("%fusion.2 = (f32[128]{0:T(128)S(1)}, f32[128,512]{1,0:T(8,128)S(1)}) fusion(...)") == "fusion.2"
    assert instruction_of("%copy-done = f32[256,512]{1,0:T(8,128)S(1)} copy-done(...)") == "copy-done"
    assert instruction_of("multiply_add_fusion") == "multiply_add_fusion"  # a CPU thunk's name is the instruction
    assert module_of("jit_small(18107345416798615936)") == "jit_small" and module_of("jit_small") == "jit_small"


def test_each_call_of_the_small_program_is_its_module_event_with_every_instruction(small_calls):
    modules = _module_events(_trace("run.xplane.pb"))
    assert [c.run_id for c in small_calls] == [m[2] for m in modules] == [5, 6, 7]
    for call, (start_ps, duration_ps, _) in zip(small_calls, modules):
        assert abs(call.start_ns * 1000 - start_ps) <= 500 and abs(call.wall_ns * 1000 - duration_ps) <= 1000
        assert set(call.self_ns) == SMALL and all(n == 1 for n in call.count.values())
        # one instruction at a time on the core: the times add up to what they cover, nearly all of the call
        assert sum(call.self_ns.values()) == call.covered_ns and call.covered_ns / call.wall_ns > 0.95
        assert max(call.self_ns, key=call.self_ns.get) == "fusion.2" and call.self_ns["fusion.2"] > 900
    # the async copy counts as the core's own copy-start event (13.75 ns), not its flight to copy-done (27.5 ns)
    assert small_calls[0].self_ns["copy-start"] == 14 and small_calls[0].self_ns["copy-done"] == 3


def test_a_run_is_read_from_the_device_lines_only_and_gives_the_same_calls(small_calls):
    data = _trace("run.xplane.pb")
    everything = read_events(data)
    only = read_events(data, trace_lines(LAYOUT))
    assert {e.line for e in only} == {"XLA Modules", "XLA Ops"} and len(only) == 3 + 3 * len(SMALL)
    assert len(everything) > 50 * len(only)  # the host's events of three calls: never made into Events
    again = calls_of(everything, "jit_small", 3, LAYOUT)
    assert [(c.run_id, c.self_ns, c.covered_ns) for c in again] == [(c.run_id, c.self_ns, c.covered_ns) for c in small_calls]
    assert calls_of(everything, "jit_other", 3, LAYOUT) == []  # another module's calls are not these
    assert trace_lines(backend_for("cpu").trace) is None  # the CPU's thunks sit on the pool's threads


def test_the_nnx_training_steps_instructions_cover_most_of_each_of_its_ten_calls():
    data = _trace("nnx_run.xplane.pb.xz")
    calls = calls_of(read_events(data, trace_lines(LAYOUT)), "jit_train_step", 10, LAYOUT)
    assert len(calls) == 10 and [c.run_id for c in calls] == list(range(209, 219))
    assert all(len(c.self_ns) == 184 for c in calls)  # every instruction of the step, in every call
    assert statistics.median(c.covered_ns / c.wall_ns for c in calls) >= 0.85
    modules = _module_events(data)
    assert all(abs(c.wall_ns * 1000 - duration_ps) <= 1000 for c, (_, duration_ps, _) in zip(calls, modules))


def test_the_rows_carry_xlas_flops_and_bytes_of_the_tpus_optimized_module_and_its_roofline(small_calls, dumps):
    hlo = next(s.text for s in dumps.stages if s.name == "xla:optimized")
    assert "{1,0:T(8,128)S(1)}" in hlo  # tiled layouts in memory space 1
    peak = peak_of(SimpleNamespace(platform="tpu", device_kind="TPU v5 lite"))
    rows = {r["instruction"]: r for r in instruction_rows(small_calls, hlo, instruction_origins(hlo), peak)}
    assert set(rows) == SMALL
    xla = json.loads((FIXTURES / "costs.json").read_text())["cost_analysis"]
    assert sum(r["flops"] for r in rows.values()) == xla["flops"]  # the TPU's own count for the whole module
    dot = rows["fusion.2"]  # tanh(x @ w + b) and the softmax's row maxima
    assert dot["op"] == "fusion" and 2 * 128 * 256 * 512 <= dot["flops"] <= 1.01 * 2 * 128 * 256 * 512
    assert dot["bytes"] == 4 * (128 * 256 + 256 * 512 + 512) + 4 * (128 + 128 * 512)  # reads x, w, b; writes two
    assert dot["roofline_us"] == pytest.approx(1e6 * dot["bytes"] / peak.bytes_per_s)  # memory-bound at 819 GB/s
    assert 0.5 < dot["x_roofline"] < 3 and rows["fusion.1"]["flops"] > 0 and rows["divide_reduce_fusion"]["bytes"] > 0
    assert "record_tpu.py:58" in dot["your_lines"]  # the dot's line of the recorded program


@pytest.fixture(scope="module")
def compile_rows(dumps):
    events = read_events(_trace("compile.xplane.pb"))
    rows, wall = xla_pass_rows(events, dumps.runs, LAYOUT)
    return events, rows, wall, dumps


def test_the_compiles_passes_on_every_compiler_thread_are_rows_matched_to_the_dumps_stages(compile_rows):
    events, rows, wall, dumps = compile_rows
    passes = [r for r in rows if r["kind"] == "xla pass"]
    made = {s.name for s in dumps.stages if s.group == "xla" and "#" in s.name}
    listed = {x for r in rows for x in r["stages"].split(", ") if x}
    assert made == listed and len(made) == 10
    on_thread: dict = {}  # each name's first event on one of the compiler's threads
    for e in events:
        if e.line.startswith("xla_tpu_thread/"):
            on_thread.setdefault(e.name, e)
    fusion = next(r for r in passes if r["stage"] == "xla:tpu_fusion#1")
    assert fusion["name"] == "tpu_fusion" and fusion["pipeline"] == "Main fusion" and fusion["changed"]
    assert fusion["seconds"] == on_thread["tpu_fusion"].duration_ns / 1e9  # nothing inside it but checks
    layout = next(r for r in passes if r["name"] == "layout-assignment")
    assert layout["stages"] == "xla:layout-assignment#1"  # dumped by the tiling rewriter it runs
    assert layout["seconds"] == on_thread["layout-assignment"].duration_ns / 1e9  # its own steps are its time
    lines = {e.line for e in events if e.name.endswith("(jit_small)") and e.stat("module") == "jit_small"}
    assert "" in lines and sum(x.startswith("xla_tpu_thread/") for x in lines) >= 2
    pipelines = {r["pipeline"] for r in passes}
    assert {"Phase 1 pre-layout assignment passes", "Main fusion", "Global Copy Insertion"} <= pipelines
    assert len(passes) > 400 and all(r["seconds"] >= 0 for r in rows)


def test_the_compiles_rows_add_up_to_its_wall_time_with_the_backends_steps_of_every_thread(compile_rows):
    events, rows, wall, _ = compile_rows
    top = next(e for e in events if e.name == "PJRT_Client_Compile")
    assert wall == top.duration_ns / 1e9 and sum(r["seconds"] for r in rows) == pytest.approx(wall)
    backend = [r for r in rows if r["kind"] == "xla backend"]
    assert [r["name"] for r in backend] == ["XLA::TPU memory space and buffer assignment",
                                           "XLA::TPU lowering and optimization", "XLA::TPU code generator"]
    run_backend = next(e for e in events if e.name == "XLA::TPU run backend")
    assert 0.9 * run_backend.duration_ns / 1e9 <= sum(r["seconds"] for r in backend) <= run_backend.duration_ns / 1e9
    other = rows[-1]
    assert other["kind"] == "xla other" and 0 < other["seconds"] < 0.5 * wall
    assert xla_pass_rows(events, compile_rows[3].runs) == ([], 0.0)  # the CPU's layout finds no compile here


def test_a_tpu_profile_says_its_call_is_the_devices_time_beside_the_untraced_wall_time():
    """On a TPU the call is the module's event on the device (its own clock: the profiler does not slow it) and
    the untraced time is run()'s wall time, dispatch included: the words say which is which, where the CPU's say
    the call was timed under the profiler (numbers as a 50-step sampler gave on the TPU v5e)."""
    import pandas as pd

    from workbench.analysis.profile import Profile

    tpu = Profile("stablehlo", "tpu:0", pd.DataFrame(), 25.7, 0.987, 7, "", untraced_call_us=882.5, overhead=1.0)
    said = repr(tpu)
    assert tpu.device_clock and "25.7 µs on the device" in said and "882.5 µs wall time untraced" in said
    assert "under the profiler" not in said and "the device's" in tpu._repr_html_()
    cpu = Profile("stablehlo", "cpu:0", pd.DataFrame(), 12900.0, 0.9, 7, "", untraced_call_us=790.7, overhead=16.8)
    assert not cpu.device_clock and "12.90 ms under the profiler, 790.7 µs untraced" in repr(cpu)
    assert "16.8x the untraced wall time" in repr(cpu)
