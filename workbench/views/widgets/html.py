"""The panel's HTML that no view component draws: its status line, the line of Python and the pipeline string;
each function turns one value into the markup an ``ipywidgets.HTML`` shows. No widgets and no work here: the
panel computes, these only render. Markup is written with markupsafe's ``Markup.format``, which escapes every
value it is given (names, pass strings, errors, Python lines) unless it is ``Markup`` the workbench made; each
function returns it as a plain ``str`` for the widget (a ``Markup`` would escape whatever a caller adds to it).
The class names are those of ``panel.css``.
"""
from __future__ import annotations

from typing import Sequence

from markupsafe import Markup

from ...analysis.numbers import num
from ...exploration import Exploration

__all__ = ["num", "running", "failed", "done", "awaiting", "compiling", "compiled", "pipeline_string", "python_line"]


# -- the status line -------------------------------------------------------------------------------
def running(label: str, elapsed: float, note: str = "", done: int | None = None, total: int | None = None) -> str:
    """A running job: a determinate bar and "done/total" when the job reports both (a pattern scan),
    else the browser's indeterminate bar (a pass pipeline, a bisection, whose length is unknown)."""
    if done is not None and total:
        done = min(max(int(done), 0), int(total))
        bar = Markup('<progress class="wb-progress" value="{}" max="{}"></progress>').format(done, int(total))
        count = Markup(" &middot; {}/{}").format(done, int(total))
    else:
        bar, count = Markup('<progress class="wb-progress"></progress>'), ""
    return str(Markup('<span class="wb-status wb-running">{}{}{} &middot; {:.1f} s{}</span>').format(
        bar, label, count, elapsed, note))


def failed(message: str) -> str:
    """An error: its first line, the rest folded under "details"."""
    head, _, rest = message.partition("\n")
    more = Markup("<details><summary>details</summary><pre>{}</pre></details>").format(rest) if rest.strip() else ""
    return str(Markup('<div class="wb-status wb-error"><b>&#10006; {}</b>{}</div>').format(head, more))


def done(text: str) -> str:
    return str(Markup('<span class="wb-status wb-done">&#10003; {}</span>').format(text))


def awaiting(label: str, elapsed: float, before: str = "") -> str:
    """What the panel waits for outside its queue (XLA compiling in the background), after ``before``,
    the markup of how the last job ended (made by ``done`` or ``failed``)."""
    return str(Markup('{} <span class="wb-status wb-running wb-awaiting"><progress class="wb-progress"></progress>'
                      "{}&hellip; {:.1f} s</span>").format(Markup(before), label, elapsed))


def compiling(ex: Exploration) -> str:
    """The status line while XLA's stages are awaited: what XLA's compile does now (``ex.xla_phase()``)."""
    phase = ex.xla_phase()
    return f"compiling XLA: {phase}" if phase else "compiling XLA"


def compiled(ex: Exploration, waited: float, took: float) -> str:
    """The status line once XLA's stages are shown: the wait, the steps XLA's compile took, the drawing."""
    steps = "; ".join(f"{text.split(' (')[0].split(',')[0]} {s:.1f} s" for text, s in ex.xla_steps())
    return f"XLA's stages shown: ready after {waited:.1f} s{f' ({steps})' if steps else ''}, drawn in {took:.2f} s"


# -- the Exploration shown (its header, stages and runs: the view components, coreview.py) ----------------
def pipeline_string(name: str, pipeline: str) -> str:
    return str(Markup('<details class="wb-pipeline"><summary><b>Pipeline string</b> (<code>{}.pipeline_string</code>, '
                      "{:,} characters) for <code>enzymexlamlir-opt --pass-pipeline='builtin.module(…)'</code>"
                      '</summary><pre class="wb-copy">{}</pre></details>').format(name, len(pipeline), pipeline))


def python_line(line: str, history: Sequence[str], bound: Sequence[str] = (), name: str = "ex") -> str:
    """The line of the last action, ready to copy, the toggles so far folded under it (their line is there
    before the first one, so that the panel does not grow with it), and which variables follow the panel
    (``bound``; none: ``name`` stays what the panel started from)."""
    hist = Markup('<div class="wb-history">no toggle yet: their lines of Python are kept here</div>')
    if history:
        hist = Markup('<details class="wb-history"><summary>the toggles so far, as code</summary>'
                      '<pre class="wb-copy">{}</pre></details>').format("\n".join(history))
    if bound:
        names = Markup(" and ").join(Markup("<code>{}</code>").format(b) for b in bound)
        follow = Markup("{} follow{} this panel: after each toggle, {} the Exploration shown").format(
            names, "s" * (len(bound) == 1), "they are" if len(bound) > 1 else "it is")
    else:
        follow = Markup("<code>{0}</code> stays the Exploration the panel started from (paste the lines to follow "
                        "it, or make the panel with <code>wb.panel({0}, bind=globals())</code>)").format(name)
    return str(Markup('<div class="wb-python"><span class="wb-python-label">Python</span>'
                      '<pre class="wb-copy" title="click to select">{}</pre>'
                      '<span class="wb-note wb-follow">{}</span>{}</div>').format(line, follow, hist))
