"""The ``%%hlo`` and ``%hlo`` magics: explore a function from a notebook cell, like Reactant.jl's ``@code_hlo``;
and ``%%mlir``: explore the module a cell holds as text.

    %load_ext workbench

    %%hlo -p only_enzyme --disable transpose_transpose
    def f(x, y):
        return jnp.tanh(x @ y).sum(0)
    f(jnp.ones((64, 64)), jnp.ones((64, 32)))

    %hlo -p all f(x, y)

The cell runs in the user's namespace, except its last statement: that must be a call, whose function
and arguments are evaluated (the function is not called) and handed to ``wb.explore``. The
Exploration is stored as ``_hlo`` (and under ``-o NAME``). This module is a view: it reads an
Exploration and never runs passes itself.
"""
from __future__ import annotations

import ast
import inspect
import keyword
import re
import shlex
from dataclasses import dataclass
from typing import Any, Callable

from IPython.core import magic_arguments
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_cell_magic, magics_class, no_var_expand

from ..analysis.diff import diff_texts
from ..errors import ArgumentError, MlirSyntaxError, TraceError, WorkbenchError
from ..exploration import XLA_WAIT, Exploration, explore, explore_text
from ..stages import Stage

__all__ = ["HloMagics", "View", "text_view", "load_ipython_extension"]

_CALL_EXAMPLE = "f(x, y)"


@dataclass(frozen=True)
class View:
    """What the user asked to see of an Exploration: the panel, or text (one stage, or a diff of two)."""

    panel: bool = True
    stage: str | None = None
    vs: str | None = None
    xla_wait: float = XLA_WAIT  # seconds the panel's output waits for XLA's stages (its saved form lists them)


@dataclass(frozen=True)
class Call:
    """The traced call, evaluated: the function and its arguments, nothing run yet."""

    fn: Callable
    args: tuple
    kwargs: dict[str, Any]

    def positional(self) -> tuple[Callable, tuple]:
        """``explore`` takes positional arguments only: keyword arguments become trailing positional
        arguments of a thin wrapper, so they are traced or static by the same rule as positional ones."""
        if not self.kwargs:
            return self.fn, self.args
        fn, n, names = self.fn, len(self.args), tuple(self.kwargs)

        def call(*args):
            return fn(*args[:n], **dict(zip(names, args[n:])))

        call.__name__ = call.__qualname__ = getattr(fn, "__name__", type(fn).__name__)
        # JAX names the user's function, file and line in its messages (it unwraps), and the
        # arguments by this signature: the positional parameters' names, then the keywords.
        call.__wrapped__ = fn
        call.__signature__ = inspect.Signature(
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_ONLY) for p in _positional_names(fn, n) + names])
        return call, self.args + tuple(self.kwargs.values())


class MagicFailure(UsageError):
    """The user's code failed under the magic. Still a UsageError for code that catches those, but
    shown as ``hlo-workbench: ...``, not as IPython's "UsageError"."""

    def _render_traceback_(self) -> list[str]:  # IPython shows these lines instead of a traceback
        return str(self).splitlines()


class TraceFailed(MagicFailure):
    """The user's function did not trace: ``hlo-workbench: tracing failed: ...`` with the user's frames."""


class CellFailed(MagicFailure):
    """The cell's own code (before the traced call) raised; its traceback is shown above."""


def _trace_failure(shell, e: TraceError | ArgumentError) -> str:
    """The message of a trace failure: what failed and why, then the user's frames, each cell named
    as IPython names it in tracebacks ("Cell In[5], line 3"), lines numbered as the cell shows them."""
    if isinstance(e, TraceError):
        raised = f" raised {e.cause}" if e.cause else ""
        text = f"tracing failed: {e.call}{raised}\n{e.detail.rstrip()}"
    else:
        text = f"tracing failed: {str(e).rstrip()}"

    def cell(name: str, line: str) -> str | None:
        label = shell.compile.format_code_name(name) if hasattr(shell.compile, "format_code_name") else None
        return f"{label[0]} {label[1]}, line {line}" if label else None

    text = re.sub(r'File "([^"]+)", line (\d+)', lambda k: cell(*k.groups()) or k.group(0), text)
    text = re.sub(r"(?<=\bat )(\S+?):(\d+)\b", lambda k: cell(*k.groups()) or k.group(0), text)
    return f"hlo-workbench: {text}"


def _static_option(values: list[str], magic: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for item in values for v in item.split(",") if v.strip())
    except ValueError:
        raise UsageError(f"{magic}: --static takes argument positions such as '1' or '1,2'; got {values!r}") from None


def _positional_names(fn: Callable, n: int) -> tuple[str, ...]:
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):  # a builtin or callable without a signature
        params = []
    return tuple(params[i] if i < len(params) else f"arg{i}" for i in range(n))


def _shared_options(fn):
    """The options %%hlo and %%mlir both take (the pipeline, toggles, device, output name and view)."""
    for add in reversed([
        magic_arguments.argument("-p", "--pipeline", default="all",
                                 help="a preset (see wb.pipelines()) or a pass pipeline string; default: all"),
        magic_arguments.argument("-d", "--device", default=None,
                                 help="the device to lower, compile and run for (tpu:0, cpu, ...); default: "
                                      "where jax.jit computes (JAX's default device)"),
        magic_arguments.argument("--disable", action="append", default=[], metavar="P1,P2",
                                 help="Enzyme-JaX patterns to switch off (comma-separated, repeatable)"),
        magic_arguments.argument("--enable", action="append", default=[], metavar="P",
                                 help="Enzyme-JaX patterns to switch on (comma-separated, repeatable)"),
        magic_arguments.argument("--xla-disable", action="append", default=[], metavar="PASS",
                                 help="XLA HLO passes to skip (comma-separated, repeatable)"),
        magic_arguments.argument("--shardy", default=None, metavar="MODE",
                                 help="a sharded program's Shardy stages (Reactant's shardy_passes): none, "
                                      "post_sdy_propagation (the default when sharded), to_mhlo_shardings, "
                                      "or a propagation pipeline of sdy-* passes"),
        magic_arguments.argument("--no-optimize-communications", action="store_true",
                                 help="Reactant's optimize_communications=false for the Shardy stages"),
    ]):
        fn = add(fn)
    return fn


def _view_options(fn):
    for add in reversed([
        magic_arguments.argument("-o", "--output", metavar="NAME",
                                 help="also store the Exploration as NAME (it is always stored as _hlo)"),
        magic_arguments.argument("--stage", metavar="A", help="show stage A instead of the last MLIR stage"),
        magic_arguments.argument("--vs", metavar="B", help="with --stage A: show the diff from stage A to stage B"),
        magic_arguments.argument("--no-panel", action="store_true", help="print the stage table and text, no panel"),
        magic_arguments.argument("--xla-wait", type=float, default=XLA_WAIT, metavar="SECONDS",
                                 help="how long the output waits for XLA's compile before it shows, so that a "
                                      "notebook saved without a front end following the panel (run headless) lists "
                                      "XLA's stages too (the panel, and in JupyterLab its saved output, show them when "
                                      f"they arrive either way); default: {XLA_WAIT}"),
    ]):
        fn = add(fn)
    return fn


@magics_class
class HloMagics(Magics):
    @magic_arguments.magic_arguments()
    @_shared_options
    @magic_arguments.argument("--static", action="append", default=[], metavar="I,J",
                              help="positional arguments to treat as static, as jax.jit's static_argnums "
                                   "(comma-separated, repeatable); a jitted function's own are honoured too")
    @_view_options
    @magic_arguments.argument("call", nargs="*", help=f"(line magic only) the call to trace, e.g. {_CALL_EXAMPLE}")
    @no_var_expand
    @line_cell_magic
    def hlo(self, line: str, cell: str | None = None):
        """Show a function's program after every compiler stage: jaxpr, StableHLO, each MLIR pass, XLA.

        As a cell magic, the cell's code runs in the notebook's namespace, except its last line: that
        must be a call such as ``f(x, y)``. The function and its arguments are evaluated, not called,
        and traced with ``wb.explore``. As a line magic, ``%hlo [options] f(x, y)`` does the same for
        one call. The Exploration is stored as ``_hlo`` (and as NAME with ``-o NAME``); a stage that
        failed is reported, and the stages before it stay in ``_hlo``.
        """
        magic = "%hlo" if cell is None else "%%hlo"
        if cell is None:
            opts, source = _split_line(self.hlo.parser, line)
            view = _view(opts, magic)
            filename = self.shell.compile.cache(source, _cell_number(self.shell))
            call = self._evaluate(_parse_call(source, filename, magic), filename, magic)
        else:
            opts = _parse_options(self.hlo.parser, line, magic)
            if opts.call:
                raise UsageError(f"%%hlo takes options on its first line and the call on the cell's last line; "
                                 f"got {' '.join(opts.call)!r} on the first line")
            view = _view(opts, magic)
            call = self._run_cell_body(cell, line)

        fn, args = call.positional()
        try:
            ex = explore(fn, *args, pipeline=opts.pipeline, disable=opts.disable, enable=opts.enable,
                         device=opts.device, xla_disable=opts.xla_disable, shardy_passes=opts.shardy,
                         optimize_communications=not opts.no_optimize_communications,
                         static_argnums=_static_option(opts.static, magic))
        except (TraceError, ArgumentError) as e:
            raise TraceFailed(_trace_failure(self.shell, e)) from None
        except WorkbenchError as e:
            raise UsageError(f"{magic}: {str(e).rstrip()}") from None
        self._store_and_show(ex, opts, view, magic)

    @magic_arguments.magic_arguments()
    @_shared_options
    @_view_options
    @no_var_expand
    @cell_magic
    def mlir(self, line: str, cell: str):
        """Show an MLIR / StableHLO module, the cell's text, after every stage: each MLIR pass, then XLA.

        The cell body is the module's text exactly as written (for instance
        ``jax.jit(f).lower(x).as_text()``); it reaches the first pass as given, through
        ``wb.explore_text`` with the same options as ``%%hlo``. XLA's stages need a ``@main``; the
        panel's runs use seeded random inputs of its argument shapes. The Exploration is stored as
        ``_hlo`` (and as NAME with ``-o NAME``). Text that is not MLIR, or MLIR that does not parse,
        is answered with what is wrong and where (line:col), and nothing is stored.
        """
        opts = _parse_options(self.mlir.parser, line, "%%mlir")
        view = _view(opts, "%%mlir")
        try:
            ex = explore_text(cell, pipeline=opts.pipeline, disable=opts.disable, enable=opts.enable,
                              device=opts.device, xla_disable=opts.xla_disable, shardy_passes=opts.shardy,
                              optimize_communications=not opts.no_optimize_communications,
                              title=f"%%mlir cell {_cell_number(self.shell)}")
        except WorkbenchError as e:
            where = ""
            if isinstance(e, MlirSyntaxError) and e.line:  # the cell shows the %%mlir line as its line 1
                where = f"\n(line {e.line} of the module is line {e.line + 1} of the cell)"
            raise MagicFailure(f"hlo-workbench: %%mlir: {str(e).rstrip()}{where}") from None
        self._store_and_show(ex, opts, view, "%%mlir")

    def _store_and_show(self, ex: Exploration, opts, view: View, magic: str) -> None:
        """Store the Exploration as ``_hlo`` (and ``-o NAME``), then show it: what both magics end with."""
        self.shell.user_ns["_hlo"] = ex
        if opts.output:
            self.shell.user_ns[opts.output] = ex
        try:
            _show_panel(ex, view, opts.output or "_hlo")
        except WorkbenchError as e:
            raise UsageError(f"{magic}: {e} (the Exploration is stored as _hlo)") from None

    # -- running the user's code -------------------------------------------------------------------
    def _run_cell_body(self, cell: str, line: str = "") -> Call:
        """Run all but the last statement in the user's namespace; evaluate the last one's parts.

        The body is numbered as the cell shows it: line 1 is the ``%%hlo`` line, so the body starts on
        line 2 in tracebacks, in JAX's messages and in the source lines they quote."""
        shell = self.shell
        code = shell.transform_cell(cell)
        first = f"%%hlo {line}".rstrip()
        filename = shell.compile.cache(f"{first}\n{code}", _cell_number(shell), raw_code=f"{first}\n{cell}")
        try:
            tree = shell.compile.ast_parse("\n" + code, filename=filename)  # the blank line stands for the first
        except SyntaxError:
            shell.showsyntaxerror(filename)
            raise UsageError("%%hlo: the cell does not parse (see above); nothing was traced") from None
        if not tree.body:
            raise UsageError(f"%%hlo: the cell is empty; its last line must be the call to trace, e.g. {_CALL_EXAMPLE}")
        call = _as_call(tree.body[-1], "\n" + code, "%%hlo")
        body = shell.transform_ast(ast.Module(body=tree.body[:-1], type_ignores=[]))
        self._run_user(lambda: exec(shell.compile(body, filename, "exec"), shell.user_global_ns, shell.user_ns),
                       "%%hlo")
        return self._evaluate(call, filename, "%%hlo")

    def _evaluate(self, call: ast.Call, filename: str, magic: str) -> Call:
        keys = [None if k.arg is None else ast.Constant(k.arg) for k in call.keywords]
        parts = ast.Tuple([call.func, ast.Tuple(list(call.args), ast.Load()),
                           ast.Dict(keys, [k.value for k in call.keywords])], ast.Load())
        expr = ast.fix_missing_locations(ast.Expression(ast.copy_location(parts, call)))
        code = self.shell.compile(expr, filename, "eval")
        fn, args, kwargs = self._run_user(lambda: eval(code, self.shell.user_global_ns, self.shell.user_ns), magic)
        if not callable(fn):
            raise UsageError(f"{magic}: {ast.unparse(call.func)} is a {type(fn).__name__}, not a function to trace")
        return Call(fn, args, kwargs)

    def _run_user(self, thunk: Callable[[], Any], magic: str) -> Any:
        """Run the user's code; on an exception, show its traceback from the user's own frames on."""
        try:
            return thunk()
        except Exception as e:
            # Skip this frame and the thunk's, so the traceback starts in the user's cell.
            tb = e.__traceback__.tb_next
            self.shell.showtraceback((type(e), e, tb.tb_next if tb is not None else None))
            raise CellFailed(f"hlo-workbench: the cell's code raised {type(e).__name__} (see above); "
                             "nothing was traced") from None


# -- parsing -----------------------------------------------------------------------------------------
def _parse_options(parser, text: str, magic: str):
    """The options, split as a POSIX shell would, so a quoted pipeline string loses its quotes."""
    try:
        return parser.parse_args(shlex.split(text))
    except ValueError as e:  # unbalanced quotes
        raise UsageError(f"{magic}: cannot read the options {text!r}: {e}") from None
    except UsageError as e:
        raise UsageError(f"{magic}: {e} (see {magic}? for the options)") from None


def _split_line(parser, line: str) -> tuple[Any, str]:
    """``-p only_enzyme f(x, y)`` -> (the options, ``"f(x, y)"``): the shortest run of options after
    which the rest of the line is one Python expression."""
    for i in [0] + [m.end() for m in re.finditer(r"\s+", line)]:
        rest = line[i:].strip()
        if not rest:
            break
        if rest.startswith("-"):  # an option: a call never starts with a minus sign
            continue
        try:
            ast.parse(rest, mode="eval")
            opts = parser.parse_args(shlex.split(line[:i]))
        except (SyntaxError, ValueError, UsageError):
            continue
        if not opts.call:
            return opts, rest
    opts = _parse_options(parser, line, "%hlo")  # raises for a bad option
    got = f"; got {' '.join(opts.call)!r}" if opts.call else ""
    raise UsageError(f"%hlo needs a call to trace after its options, e.g. %hlo -p all {_CALL_EXAMPLE}{got}")


def _parse_call(source: str, filename: str, magic: str) -> ast.Call:
    try:
        tree = ast.parse(source, filename=filename, mode="exec")
    except SyntaxError as e:
        raise UsageError(f"{magic}: {source!r} does not parse: {e.msg}") from None
    if len(tree.body) != 1:
        raise UsageError(f"{magic} takes a single call, e.g. {_CALL_EXAMPLE}; got {source!r}")
    return _as_call(tree.body[0], source, magic)


def _as_call(stmt: ast.stmt, source: str, magic: str) -> ast.Call:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return stmt.value
    text = ast.get_source_segment(source, stmt) or ast.unparse(stmt)
    where = "the cell's last statement" if magic == "%%hlo" else "the line"
    raise UsageError(f"{magic}: {where} must be a call FUNC(ARGS...) to trace, e.g. {_CALL_EXAMPLE}; "
                     f"got {text.splitlines()[0]!r}")


def _cell_number(shell) -> int:
    """The execution count of the running cell, so tracebacks say ``Cell In[n]`` like the shell's own."""
    running = getattr(shell.displayhook, "exec_result", None)
    return running.execution_count if running is not None else shell.execution_count


def _view(opts, magic: str) -> View:
    """Check the options that only the magic reads, before any of the user's code runs."""
    if opts.vs and not opts.stage:
        raise UsageError(f"{magic}: --vs B needs --stage A (the diff goes from stage A to stage B)")
    if opts.output and not (opts.output.isidentifier() and not keyword.iskeyword(opts.output)):
        raise UsageError(f"{magic}: -o {opts.output!r} is not a Python name to store the Exploration under")
    if not opts.xla_wait >= 0:
        raise UsageError(f"{magic}: --xla-wait takes seconds, 0 or more; got {opts.xla_wait:g}")
    return View(panel=not opts.no_panel, stage=opts.stage, vs=opts.vs, xla_wait=opts.xla_wait)


# -- display -----------------------------------------------------------------------------------------
def _show_panel(ex: Exploration, view: View, name: str = "_hlo") -> None:
    """The one place that decides how a magic shows an Exploration.

    In a kernel whose front end can render widgets (Jupyter), the pass-toggle panel, with
    ``--stage A`` on the right (its parent on the left) or ``--stage A --vs B`` as the pair; its Python
    lines act on ``name``, and ``name`` and ``_hlo`` in the user's namespace follow its toggles.
    Elsewhere (a terminal IPython) and with ``--no-panel``, the text view. The panel's output waits
    up to ``view.xla_wait`` seconds for XLA's stages (``--xla-wait``), then follows the panel (``Panel``'s
    ``_ipython_display_``: sent again after each change where the front end keeps the live panel through it).
    """
    if not (view.panel and _widgets_render()):
        print(text_view(ex, view), end="")
        return
    from IPython import get_ipython
    from IPython.display import display

    from .widgets import Panel

    left = right = None
    if view.stage:
        right = ex.stage(view.stage).name  # an unknown name is the user's error, reported by the magic
        left = ex.stage(view.stage).parent
        if view.vs:
            left, right = right, ex.stage(view.vs).name
    display(Panel(ex, name=name, left=left, right=right, bind=get_ipython().user_ns, bind_names=(name, "_hlo"),
                  xla_wait=view.xla_wait))


def _widgets_render() -> bool:
    """Whether the running shell is a kernel, whose front ends render ipywidgets (a terminal cannot)."""
    from IPython import get_ipython

    shell = get_ipython()
    if getattr(shell, "kernel", None) is None:
        return False
    try:
        import anywidget  # noqa: F401
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def text_view(ex: Exploration, view: View = View()) -> str:
    """The stage table, then the last MLIR stage's text (or the ``--stage``, or the ``--stage``/``--vs`` diff)."""
    from .text import stage_table

    table = stage_table(ex)  # first: it computes every stage, so the header counts what the table shows
    out = [f"{ex!r}\n", table, ""]
    if ex.error:
        out += [f"{ex.error}", "(the stages before it are usable: _hlo[...])", ""]
    if view.stage and view.vs:
        a, b = ex.stage(view.stage), ex.stage(view.vs)
        diff = _diff(a, b)
        out += [f"# diff {a.name} -> {b.name}", diff if diff else f"(stages {a.name} and {b.name} have the same text)"]
    else:
        s = ex.stage(view.stage) if view.stage else _last_mlir(ex)
        note = "" if view.stage else " (the last MLIR stage)" if s.group == "mlir" else " (the module as lowered)"
        out += [f"# {s.name}{note}", s.error or s.text]
    return "\n".join(out).rstrip("\n") + "\n"


def _last_mlir(ex: Exploration) -> Stage:
    mlir = [s for s in ex.stages if s.group == "mlir" and not s.error]
    return mlir[-1] if mlir else ex.reference_stage()  # "stablehlo", or "input" for %%mlir


def _diff(a: Stage, b: Stage) -> str:
    return diff_texts(a.text, b.text, a.name, b.name).unified().rstrip("\n")


def load_ipython_extension(shell) -> None:
    shell.register_magics(HloMagics)
