"""The Jupyter server extension: the Python that the JupyterLab extension's kernel-free views ask, without a
kernel (JupyterLab's convention for a frontend that needs its package's Python). The ``.hlox`` viewer and
the Compare tab draw what it answers; they compute no fact themselves.

Under ``{base_url}hlo-workbench/``, for a logged-in user allowed to read the server's files:

- ``GET view?path=F.hlox[&left=A&right=B]``: the view model of the saved exploration (``artifacts.viewmodel``,
  ``source="hlox"``, its runs with those of the explorations it was made from), A and B shown (default: the
  pair the panel shows first);
- ``GET diff?path=F.hlox&left=A&right=B``: the structural diff of two of its stages, as a view model's
  ``diff`` carries one; ``GET diff?a=F.hlox&left=A&b=G.hlox&right=B``: stage A of one file against stage B
  of another;
- ``GET compare?a=F.hlox&b=G.hlox``: the comparison model of the two (``artifacts.comparison_model``, of
  ``wb.compare_explorations``), each file's view model in it.

Paths are the contents API's: relative to the server's ``root_dir``, which no path may leave (nor name a
hidden file where the server hides them). A file the loader refuses (missing, not a .hlox, corrupt, hostile,
from a newer workbench) or a stage it does not have is a 400 whose JSON ``message`` is the loader's sentence,
with the path as the request gave it. The work runs in a thread, so the server answers other requests
meanwhile; jax and the workbench are imported there, on the first request, not when the server starts.
Enabled by ``jupyter-config/jupyter_server_config.d/hlo-workbench.json`` (installed into the environment's
``etc/jupyter``).
"""
from __future__ import annotations

import asyncio
import functools
import json
import os
from pathlib import Path
from typing import Any, Callable

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

__all__ = ["BASE", "ExplorationFiles", "RequestRefused"]

BASE = "hlo-workbench"
CACHED = 4  # the files kept loaded (a viewer asks the same file again for each diff)


class RequestRefused(Exception):
    """What a request cannot have, in one sentence, with the HTTP status to answer it."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class ExplorationFiles:
    """The saved explorations under ``root``: each loaded once while it is unchanged (by path, size and time
    of change), the newest ``CACHED`` kept."""

    def __init__(self, root: str, allow_hidden: bool = False):
        self.root = Path(root).expanduser().resolve()
        self.allow_hidden = allow_hidden
        self._read = functools.lru_cache(maxsize=CACHED)(_read)  # by path, size and time of change

    def path(self, name: str) -> Path:
        """The file that ``name`` (a contents API path) names under the root; RequestRefused if none may be read."""
        if not name:
            raise RequestRefused(400, "no file named: give the .hlox file's path (path=, a= or b=)")
        if "\0" in name:
            raise RequestRefused(400, f"{name!r} is not a file's path")
        path = (self.root / name.lstrip("/")).resolve()
        if not path.is_relative_to(self.root):
            raise RequestRefused(403, f"{name}: outside the server's root folder; only its files can be read")
        if not self.allow_hidden and any(p.startswith(".") for p in path.relative_to(self.root).parts):
            raise RequestRefused(403, f"{name}: a hidden file, which this server does not serve")
        if not path.is_file():
            raise RequestRefused(404, f"{name}: no such file" if not path.exists() else f"{name}: not a file")
        return path

    def load(self, name: str):
        """The Exploration saved in ``name``; RequestRefused with the loader's sentence if it cannot be read."""
        from ..errors import WorkbenchError

        path = self.path(name)
        stat = path.stat()
        try:
            return self._read(path, stat.st_size, stat.st_mtime_ns)
        except (WorkbenchError, ValueError, OSError) as e:
            said = str(e)
            said = said[len(str(path)):].lstrip(": ") if said.startswith(str(path)) else said
            raise RequestRefused(400, f"{name}: {said}") from None


def _read(path: Path, _size: int, _changed: int):
    from ..exploration import load

    return load(path)


def stage_of(ex, name: str, which: str):
    """Stage ``name`` of ``ex``; RequestRefused naming it (and the closest names) if ``ex`` has none."""
    from ..errors import UnknownNameError

    try:
        return ex.stage(name)
    except UnknownNameError as e:
        raise RequestRefused(400, f"{which}: {e}") from None


def view(files: ExplorationFiles, q: dict[str, str]) -> dict[str, Any]:
    """The view model of ``q["path"]`` with ``left`` and ``right`` shown."""
    from ..artifacts.viewmodel import view_model

    ex = files.load(q.get("path", ""))
    for which in ("left", "right"):
        if q.get(which):
            stage_of(ex, q[which], which)
    return view_model(ex, q.get("left") or None, q.get("right") or None, source="hlox")


def diff(files: ExplorationFiles, q: dict[str, str]) -> dict[str, Any]:
    """The structural diff of stage ``left`` of ``path`` (or of ``a``) and stage ``right`` of ``path`` (or of ``b``)."""
    from ..artifacts.comparison_model import DIFF_BYTES
    from ..artifacts.viewmodel import pair_diff

    if not q.get("left") or not q.get("right"):
        raise RequestRefused(400, "name the two stages to compare: left= and right=")
    ex_a = files.load(q.get("path") or q.get("a", ""))
    ex_b = ex_a if q.get("path") else files.load(q.get("b", ""))
    before, after = stage_of(ex_a, q["left"], "left"), stage_of(ex_b, q["right"], "right")
    return pair_diff(before, after, q["left"], q["right"], DIFF_BYTES)


def compare(files: ExplorationFiles, q: dict[str, str]) -> dict[str, Any]:
    """The comparison model of ``a`` and ``b``, each file's view model opened on its first difference."""
    from ..artifacts.comparison_model import comparison_model
    from ..artifacts.viewmodel import view_model
    from ..exploration import compare_explorations

    names = q.get("a", ""), q.get("b", "")
    a, b = files.load(names[0]), files.load(names[1])
    c = compare_explorations(a, b, labels=(os.path.basename(names[0]), os.path.basename(names[1])))
    first = c.first_difference
    views = []
    for ex in (a, b):
        right = first.name if first is not None and first.name in ex.names else None
        views.append(view_model(ex, None, right, source="hlox"))
    return comparison_model(c, names, views)


class _Handler(APIHandler):
    """One endpoint: its work (``view``, ``diff``, ``compare``) run in a thread on the request's arguments."""

    auth_resource = "contents"  # it reads the server's files, as the contents API does

    def initialize(self, files: ExplorationFiles, work: Callable[[ExplorationFiles, dict], dict]) -> None:
        self.files = files
        self.work = work

    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        q = {k: self.get_argument(k) for k in self.request.arguments}
        try:
            answer = await asyncio.get_running_loop().run_in_executor(None, self.work, self.files, q)
        except RequestRefused as e:
            self.set_status(e.status)
            answer = {"message": str(e)}
        except Exception as e:  # noqa: BLE001 -- a sentence for the viewer; the trace goes to the server's log
            self.log.exception("hlo-workbench: %s failed", self.request.uri)
            self.set_status(500)
            answer = {"message": f"hlo-workbench could not answer: {type(e).__name__}: {e}"[:2000]}
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(answer, allow_nan=False))


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "workbench.views.labserver"}]


def _load_jupyter_server_extension(serverapp) -> None:
    files = ExplorationFiles(serverapp.root_dir, getattr(serverapp.contents_manager, "allow_hidden", False))
    base = url_path_join(serverapp.web_app.settings["base_url"], BASE)
    serverapp.web_app.add_handlers(".*$", [(url_path_join(base, name), _Handler, {"files": files, "work": work})
                                           for name, work in (("view", view), ("diff", diff), ("compare", compare))])
    serverapp.log.info("hlo-workbench: serving saved explorations at %s/", base)
