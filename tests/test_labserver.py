"""The Jupyter server extension (workbench/views/labserver.py) in a real Jupyter server, as the JupyterLab
extension's .hlox viewer and Compare tab ask it: the view model of a saved exploration (with a pattern off,
a hand edit and a run, as the file holds them), the structural diff of any two stages (Python's, as
``ex.diff`` makes it), the comparison of two files (as ``wb.compare_explorations`` makes it); a corrupt file,
a hostile one, a path out of the server's root, an unknown stage and a request without the token refused in
one sentence, never a trace. The extension is enabled by the environment's config, as scripts/setup.sh and
the wheel install it."""
import json
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import zipfile

import pytest

from tests.browser_pages import serve_lab

pytestmark = pytest.mark.subprocess


def _program(x, y):
    import jax.numpy as jnp

    return jnp.tanh(x @ y + 1.0).sum(axis=0) * 2.0


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Two saved explorations of one program in a folder: ``edited.hlox`` with a hand edit, a pattern off and
    a run, ``plain.hlox`` as explored; a file named .hlox that is not one; the explorations as saved."""
    import jax.numpy as jnp

    import workbench as wb

    home = tmp_path_factory.mktemp("labserver")
    root = home / "files"
    (root / "sub").mkdir(parents=True)
    x = jnp.ones((8, 8))
    plain = wb.explore(_program, x, x)
    edited_at = next(s for s in plain.stages if s.group == "mlir" and s.changed)
    edited = plain.with_text(edited_at.name, edited_at.text.replace("2.000000e+00", "3.000000e+00"))
    edited = edited.with_patterns(disable=["add_simplify"])
    edited.run()
    edited.save(root / "sub" / "edited.hlox")
    plain.save(root / "plain.hlox")
    (root / "broken.hlox").write_text("not a zip archive at all\n")
    with zipfile.ZipFile(root / "hostile.hlox", "w") as z:  # a member that would climb out of a folder
        z.writestr("manifest.json", '{"format": 1}')
        z.writestr("../../evil.txt", "x")
    (home / "outside.hlox").write_bytes((root / "plain.hlox").read_bytes())
    return {"home": home, "root": root, "edited": wb.load(root / "sub" / "edited.hlox"), "edited_at": edited_at.name,
            "plain": wb.load(root / "plain.hlox")}


@pytest.fixture(scope="module")
def server(files):
    with serve_lab(files["home"], files["root"]) as lab:
        yield lab


def _get(server, endpoint: str, token: bool = True, **query) -> tuple[int, dict]:
    url = f"{server['base']}/hlo-workbench/{endpoint}?{urllib.parse.urlencode(query)}"
    req = urllib.request.Request(url, headers={"Authorization": f"token {server['token']}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        body = e.read()
        try:
            return e.code, json.loads(body)
        except ValueError:
            return e.code, {"body": body.decode(errors="replace")}


def test_importing_the_extension_imports_neither_jax_nor_the_workbench_facade():
    code = ("import sys, workbench.views.labserver as m; assert m._jupyter_server_extension_points(); "
            "print(sorted(n for n in ('jax', 'pandas', 'workbench.exploration') if n in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_view_is_the_saved_explorations_view_model_with_its_edit_toggles_and_runs(server, files):
    from workbench.artifacts.viewmodel import validate_view

    ex = files["edited"]
    status, model = _get(server, "view", path="sub/edited.hlox")
    assert status == 200, model
    validate_view(model)
    assert model["source"] == "hlox"
    assert [r["stage"] for r in model["stages"]] == ex.names
    assert model["toggles"]["patterns_disabled"] == ["add_simplify"]
    # the hand edit the file holds: in the edits and on its stage
    assert [(e["kind"], e["stage"]) for e in model["edits"]] == [("text", files["edited_at"])]
    assert [r["stage"] for r in model["stages"] if r["edit"]] == [files["edited_at"]]
    assert len(model["runs"]) == len(ex.history) == 1
    leaves = model["runs"][0]["check"]["leaves"]
    assert [(l["path"], l["passed"]) for l in leaves] == [(l.path, l.passed) for l in ex.history[0].check.leaves]
    # the pair asked for, and its diff as Python's structural diff counts it
    left, right = "canonicalize#1", files["edited_at"]
    status, model = _get(server, "view", path="sub/edited.hlox", left=left, right=right)
    assert model["shown"] == {"left": left, "right": right}
    assert model["diff"]["runs"] == ex.diff(left, right).runs()


def test_diff_is_pythons_structural_diff_of_any_two_stages_of_one_file_or_two(server, files):
    from workbench.artifacts.stage_diffs import carried

    ex, plain = files["edited"], files["plain"]
    left, right = "stablehlo", files["edited_at"]
    status, entry = _get(server, "diff", path="sub/edited.hlox", left=left, right=right)
    assert status == 200, entry
    assert entry == {"left": left, "right": right, **carried(ex.diff(left, right))}
    # stage A of one file against stage B of another: the hand edit is the difference
    status, entry = _get(server, "diff", a="plain.hlox", left=right, b="sub/edited.hlox", right=right)
    assert status == 200, entry
    from workbench.analysis.diff import diff_texts

    d = diff_texts(plain.stage(right).text, ex.stage(right).text, right, right)
    assert entry["runs"] == d.runs() and not d.is_empty


def test_compare_is_pythons_comparison_of_two_files_with_each_files_view(server, files):
    import workbench as wb
    from workbench.artifacts.comparison_model import validate_comparison

    status, model = _get(server, "compare", a="sub/edited.hlox", b="plain.hlox")
    assert status == 200, model
    validate_comparison(model)
    c = wb.compare_explorations(files["edited"], files["plain"], labels=("edited.hlox", "plain.hlox"))
    assert model["labels"] == ["edited.hlox", "plain.hlox"] and model["paths"] == ["sub/edited.hlox", "plain.hlox"]
    assert model["first_difference"]["stage"] == c.first_difference.name == files["edited_at"]
    assert [(r["stage"], r["side"], r["same"]) for r in model["rows"]] == [(p.name, p.side, p.same) for p in c.pairs]
    assert model["lines"] == c.lines() and "add_simplify on" in model["settings"]
    assert [m["what"] for m in model["modules"]] == ["final MLIR", "xla:optimized"]
    assert model["modules"][0]["diff"]["runs"] == c.mlir.diff.runs()
    # each file's own view, opened on what its pass at the first difference did
    assert [v["shown"]["right"] for v in model["views"]] == [files["edited_at"]] * 2
    assert [len(v["edits"]) for v in model["views"]] == [1, 0]


@pytest.mark.parametrize("endpoint, query, status, said", [
    ("view", {"path": "broken.hlox"}, 400, "broken.hlox: not a saved exploration (.hlox): it is not a zip archive"),
    ("compare", {"a": "plain.hlox", "b": "broken.hlox"}, 400,
     "broken.hlox: not a saved exploration (.hlox): it is not a zip archive"),
    ("view", {"path": "hostile.hlox"}, 400, "hostile.hlox: corrupt or refused: the file holds a member named "
     "'../../evil.txt', not a plain file name"),
    ("view", {"path": "missing.hlox"}, 404, "missing.hlox: no such file"),
    ("view", {"path": "../outside.hlox"}, 403,
     "../outside.hlox: outside the server's root folder; only its files can be read"),
    ("diff", {"path": "plain.hlox", "left": "stablehlo", "right": "no-such-stage#1"}, 400, "right: "),
    ("diff", {"path": "plain.hlox", "left": "stablehlo"}, 400,
     "name the two stages to compare: left= and right="),
    ("view", {}, 400, "no file named: give the .hlox file's path (path=, a= or b=)"),
])
def test_what_cannot_be_answered_is_refused_in_one_sentence_without_a_trace(server, endpoint, query, status, said):
    got, body = _get(server, endpoint, **query)
    assert got == status, body
    assert set(body) == {"message"} and body["message"].startswith(said), body
    assert "Traceback" not in body["message"] and "\n" not in body["message"]


def test_an_absolute_path_is_read_in_the_root_as_the_contents_api_reads_it_and_the_token_is_needed(server, files):
    got, body = _get(server, "view", path=str(files["home"] / "outside.hlox"))
    assert got == 404 and body["message"].endswith("outside.hlox: no such file"), body
    got, body = _get(server, "view", path="/plain.hlox")
    assert got == 200 and body["title"] == files["plain"].spec.title
    got, _ = _get(server, "view", token=False, path="plain.hlox")
    assert got == 403
