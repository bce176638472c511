"""The browser code of the workbench's views, each script and stylesheet read as one self-contained text.

What two views share sits in a file of its own, and a file that uses it imports it by a relative path,
on a line of its own at the top: a script ``import { b } from "./b.js";``, a stylesheet
``@import url("./widgetkit.css");``. The JupyterLab extension's bundler follows those imports itself.
The panel's anywidgets and the offline report load each file from a string, where a relative path
resolves to nothing: ``inlined`` gives them the file with each such line replaced by the text of the
file it imports (once, however many files import it), which defines the names it imports.
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["ASSETS", "inlined"]

ASSETS = Path(__file__).resolve().parent.parent / "assets"  # diffview.js/.css, widgetkit.css, the report's

_SCRIPT = ("import ", ' from "', '";')  # how an import line of a script starts, names its file, ends
_STYLE = ('@import url("', '@import url("', '");')


def inlined(path: Path) -> str:
    """The text of ``path`` with the files it imports by a relative path in place of their import lines."""
    return _inlined(Path(path).resolve(), set())


def _inlined(path: Path, done: set[Path]) -> str:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        target = _imported(line.rstrip("\r\n"))
        if target is None:
            out.append(line)
            continue
        file = (path.parent / target).resolve()
        if file not in done:
            done.add(file)
            text = _inlined(file, done)
            out.append(text if text.endswith("\n") else text + "\n")
    return "".join(out)


def _imported(line: str) -> str | None:
    """The relative path that an unindented import line names, or None for any other line."""
    for start, before, end in (_SCRIPT, _STYLE):
        if line.startswith(start) and line.endswith(end) and before in line:
            target = line[line.rindex(before) + len(before):-len(end)]
            return target if target.startswith(("./", "../")) else None
    return None
