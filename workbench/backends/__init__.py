"""What differs between CPU, GPU and TPU, in one room.

Code elsewhere asks once, at the edge, which backend a device or platform belongs to
(``backend_for("tpu")``, ``backend_of(device)``) and then reads that backend's values: the names of
XLA's dump files and what its backend output is (``dumps``), how the profiler lays out a run's events
(``trace``), its published peaks (``peak``), what a child process may open (``child_platforms``,
``child_env``) and how a child compiles for a chip it must not hold (``topology``). Nothing else tests
``platform == "tpu"``: a new platform is a new ``Backend`` here.

``default_device_id()`` is JAX's default device as the workbench names devices ("tpu:0", "cpu:0"):
where JAX computes on an accelerator, so does the workbench, as ``jax.jit`` would.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .peaks import DevicePeak, spec_peak, tpu_clock
from .topology import Topology, topology_of

__all__ = ["Backend", "BackendOutput", "DevicePeak", "DumpNames", "Topology", "TraceLayout", "backend_for", "backend_of",
           "default_device_id", "default_platform", "device_id", "float64_device", "platform_of", "tpu_clock"]


@dataclass(frozen=True)
class BackendOutput:
    """One kind of file XLA writes beside its optimized module: the file name's ending, the stage it
    becomes and what it is, in words."""

    suffix: str
    stage: str
    what: str


@dataclass(frozen=True)
class DumpNames:
    """How XLA names its dump files on this backend. A per-pass file is
    ``module_NNNN.<name>.NNNN.<pipeline>.after_<pass>[.before_<next>].txt`` everywhere (the TPU adds
    ``.cl_<build>`` to the module's name, and its tiling rewriter writes one named ``before_<next>`` alone);
    the files written once per compile end alike
    (``...after_optimizations.txt``: the CPU writes ``<module>.cpu_after_optimizations.txt``, the TPU
    ``<module>.after_optimizations.txt``) and the backend's own output differs."""

    outputs: tuple[BackendOutput, ...]  # the backend's own files, each a backend stage
    optimized: str = "after_optimizations.txt"  # the ending of the optimized module's file


@dataclass(frozen=True)
class TraceLayout:
    """Where a profiler trace of a run keeps the time of each HLO instruction.

    ``op_stat``: the event statistic naming the instruction (``hlo_op``) where every op event has one;
    ``op_lines``: on a device plane, the lines whose events are the instructions, named by their HLO
    text (``%fusion.2 = f32[...] fusion(...)``) where no statistic names them; ``module_line``: the line
    whose events are whole calls of a module (each with its ``run_id``).

    In a trace of a compile: ``compile_event``, how the event spanning one whole compile ends its name;
    ``backend_event``, a part of the name of the event holding the backend's steps (code generation)."""

    op_stat: str | None = "hlo_op"
    op_lines: tuple[str, ...] = ()
    module_line: str | None = None
    compile_event: str = "Client::Compile"
    backend_event: str = "RunBackend"


_COMMON_OUTPUTS = (
    BackendOutput("after_optimizations-buffer-assignment.txt", "backend:buffer-assignment", "XLA's buffer assignment"),
    BackendOutput("after_optimizations-memory-usage-report.txt", "backend:memory-usage", "XLA's memory usage report"),
    BackendOutput("after_optimizations-live-range.txt", "backend:live-range",
                  "XLA's live ranges: its schedule and the span each buffer is live in"),
)


@dataclass(frozen=True)
class Backend:
    """One platform's answers. ``platform``: JAX's name ("cpu", "gpu", "tpu")."""

    platform: str
    dumps: DumpNames
    trace: TraceLayout
    # JAX_PLATFORMS for a child that compiles for this platform (None: the parent's, so a GPU child sees the
    # GPU); every other child is CPU-only
    probe_platforms: str | None = "cpu"
    extra_child_env: tuple[tuple[str, str], ...] = ()
    # where float64 references are evaluated (None: on the device itself): a TPU has no float64 units (XLA
    # emulates it, slowly to compile, and some ops refuse it), the CPU computes it natively
    float64_platform: str | None = None
    aliases: tuple[str, ...] = field(default=())
    # the start-up flags (``{folder}`` filled in) with which this platform's runtime writes its own code per
    # kernel (a TPU's LLO after each pass, and its bundles) where XLA's dumps do not; () where it has none
    llo_flags: tuple[str, ...] = ()

    def peak(self, device_kind: str) -> DevicePeak | None:
        """The spec-sheet peaks of the device named ``device_kind`` (JAX's ``Device.device_kind``), None
        where none is known. The CPU's are measured, not published: ``analysis.cost.peaks.cpu_peak``."""
        return spec_peak(self.platform, device_kind)

    def topology(self, devices) -> Topology | None:
        """How a child process compiles for ``devices`` (JAX devices of this platform) without opening
        them, or None where it cannot (then it compiles on its own devices, or says why not)."""
        return topology_of(self.platform, devices)


CPU = Backend(
    "cpu",
    DumpNames((BackendOutput(".ir-no-opt.ll", "backend:llvm-ir", "LLVM IR before LLVM's optimizations"),
               BackendOutput(".ir-with-opt.ll", "backend:llvm-ir-opt", "LLVM IR after LLVM's optimizations"),
               *_COMMON_OUTPUTS)),
    TraceLayout())
GPU = Backend(
    "gpu",
    DumpNames((BackendOutput(".ir-no-opt.ll", "backend:llvm-ir", "LLVM IR before LLVM's optimizations"),
               BackendOutput(".ir-with-opt.ll", "backend:llvm-ir-opt", "LLVM IR after LLVM's optimizations"),
               BackendOutput(".ptx", "backend:ptx", "PTX for the GPU kernels"),
               *_COMMON_OUTPUTS)),
    TraceLayout(), probe_platforms=None, aliases=("cuda", "rocm"))
# libtpu allows one process to hold the chip; ALLOW_MULTIPLE_LIBTPU_LOAD lets a child load libtpu anyway to
# compile for a compile-only topology (measured on a v5e: the parent computes on the chip meanwhile)
TPU = Backend(
    "tpu",
    DumpNames((*_COMMON_OUTPUTS,
               BackendOutput(".after_codegen.txt", "backend:after-codegen", "the HLO module as the TPU's code generator left it"))),
    TraceLayout(op_stat=None, op_lines=("XLA Ops",), module_line="XLA Modules", compile_event="PJRT_Client_Compile",
                backend_event="XLA::TPU run backend"),
    extra_child_env=(("ALLOW_MULTIPLE_LIBTPU_LOAD", "1"),), float64_platform="cpu",
    # libtpu's own flags (LIBTPU_INIT_ARGS, read when libtpu loads; XLA's compile options refuse them), measured
    # on a v5e: the LLO of every kernel after each LLO pass, the final bundles with the HLO instruction each
    # top-level bundle belongs to, and the module the kernels were made from
    llo_flags=("--xla_jf_dump_to={folder}", "--xla_jf_dump_llo_text=true", "--xla_jf_dump_hlo_text=true",
               "--xla_jf_emit_annotations=true"))

_BACKENDS = (CPU, GPU, TPU)


def backend_for(platform: str) -> Backend:
    """The Backend of a JAX platform name ("cpu", "gpu", "cuda", "rocm", "tpu"); an unknown platform gets
    the CPU's file names and trace layout under its own name (XLA's common forms)."""
    for b in _BACKENDS:
        if platform == b.platform or platform in b.aliases:
            return b
    return Backend(platform, CPU.dumps, CPU.trace)


def platform_of(device: str) -> str:
    """The platform of a device id ("tpu:0" -> "tpu")."""
    return device.partition(":")[0]


def backend_of(device) -> Backend:
    """The Backend of a device: a JAX Device or a device id ("tpu:0")."""
    return backend_for(device if isinstance(device, str) and ":" not in device
                       else platform_of(device) if isinstance(device, str) else device.platform)


def device_id(device) -> str:
    """A JAX Device as the workbench names it: "platform:id"."""
    return f"{device.platform}:{device.id}"


def default_device_id() -> str:
    """JAX's default device ("tpu:0" on a TPU host, "cpu:0" where JAX has no accelerator): where
    ``jax.jit`` would compute, honouring ``jax.default_device`` and ``JAX_PLATFORMS``."""
    import jax

    chosen = jax.config.jax_default_device
    if chosen is not None and not isinstance(chosen, str):
        return device_id(chosen)
    if isinstance(chosen, str):  # a platform name
        return device_id(jax.devices(chosen)[0])
    return device_id(jax.devices()[0])


def float64_device(device: str) -> str:
    """The device on which a float64 reference for a run on ``device`` is evaluated: the device itself, or
    the CPU where the device computes float64 only by emulation (a TPU)."""
    platform = backend_of(device).float64_platform
    return device if platform is None or platform_of(device) == platform else f"{platform}:0"


def default_platform() -> str:
    return platform_of(default_device_id())


def child_env_extra() -> dict[str, str]:
    """What every child's environment gets from the backends installed here: where libtpu is, leave to
    load it beside the process holding the chip, for a compile-only topology (children never open the
    chip: they are CPU-only)."""
    from jax._src import xla_bridge

    try:
        has_tpu = xla_bridge.get_tpu_library_path() is not None
    except Exception:  # noqa: BLE001 -- a JAX that moved this: no TPU children
        has_tpu = False
    return dict(TPU.extra_child_env) if has_tpu else {}
