"""``hlo-workbench backend TARGET`` as a user types it, on any machine: the TPU v5e recordings (a saved exploration
with the kernel table it kept, and libtpu's LLO dump of the corpus's Flax NNX step and of a bf16 MLP) read through
the command give the rows ``wb.load(hlox).backend(dump=...)`` gives in Python, in its order; a CPU target has no
kernels and says why, with how to get them, in one line (exit 2)."""
import json
import math

import pytest

from workbench.analysis.backend import KERNEL_COLUMNS
from workbench.views.cli import validate_document

from tests.cli_runs import command, corpus_target
from tests.tpu_recordings import LLO, extract_llo

def _same_rows(doc_rows: list[dict], table) -> None:
    """The document's rows are the table's, row for row and column for column (NaN is null)."""
    assert len(doc_rows) == len(table)
    for got, want in zip(doc_rows, table.to_dict("records")):
        assert list(got) == list(KERNEL_COLUMNS)
        for c in KERNEL_COLUMNS:
            w = want[c]
            if w is None or (isinstance(w, float) and math.isnan(w)):
                assert got[c] is None, (want["fusion"], c)
            elif isinstance(w, str):
                assert got[c] == w, (want["fusion"], c)
            else:
                assert got[c] == pytest.approx(float(w)), (want["fusion"], c)


@pytest.mark.subprocess
def test_the_nnx_steps_dump_gives_the_apis_table_and_one_fusions_kernel(tmp_path):
    import workbench as wb

    hlox = LLO / "nnx_transformer.hlox"
    folder = extract_llo("nnx_transformer", tmp_path)
    kernels = wb.load(str(hlox)).backend(dump=str(folder))
    table = kernels.table()

    r = command("backend", hlox, "--dump", folder, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    validate_document(doc)
    assert doc["available"] and doc["device_kind"] == kernels.device_kind == "TPU v5 lite"
    assert doc["fusions"] == len(table) >= 60 and doc["kernels"] == table["kernel"].nunique() < len(table)
    assert doc["more_rows"] == 0 and str(folder) in doc["source"]
    _same_rows(doc["rows"], table)

    fusion = table["fusion"].iloc[0]
    r = command("backend", hlox, "--dump", folder, "--fusion", fusion, "--rows", 7, "--json")
    assert r.returncode == 0, r.stderr
    one = json.loads(r.stdout)
    validate_document(one)
    _same_rows([one["fusion"]], table.head(1))
    k = kernels.kernel(fusion)
    detail = one["kernel"]
    assert detail["name"] == k.name and detail["fusions"] == k.fusions and detail["lines"] == k.lines()
    assert detail["bundles"] == k.bundles and detail["issued"] == k.issued and detail["dmas"] == k.dmas
    assert detail["occupancy"] == pytest.approx(k.occupancy) and one["note"] == ""
    assert [(p["stage"], p["changed"]) for p in detail["passes"]] == k.passes()
    assert len(detail["bundle_rows"]) == 7 and detail["more_bundles"] == k.bundles - 7

    text = command("backend", hlox, "--dump", folder, "--fusion", fusion, "--rows", 3)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"# {fusion} on a TPU v5 lite")
    assert "# Slot occupancy per unit" in text.stdout and k.passes()[-1][0] in text.stdout
    assert f"# The first 3 of {k.bundles:,} bundles" in text.stdout


@pytest.mark.subprocess
def test_a_saved_kernel_table_prints_on_a_cpu_as_the_api_sorts_it_and_save_keeps_it(tmp_path):
    import workbench as wb

    hlox = LLO / "mlp_bf16.hlox"
    kernels = wb.load(str(hlox)).backend()
    table = kernels.table()

    copy = tmp_path / "copy.hlox"
    r = command("backend", hlox, "--rows", 4, "--save", copy)
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith(f"hlo-workbench: saved the exploration with its kernel table to {copy}")
    head, _, *lines = r.stdout.splitlines()
    assert head.startswith(f"# {len(table)} fusions in {table['kernel'].nunique()} kernels on a TPU v5 lite, "
                           "from the table mlp_bf16.hlox kept")
    assert f"{int(table['issued'].sum()):,} bundles issued per call" in head
    # the header, the top four fusions in the API's order, and how many more
    assert [line.split()[0] for line in lines[1:5]] == list(table["fusion"].head(4))
    assert lines[5] == f"... {len(table) - 4} more fusions (--rows N shows more)"

    r = command("backend", copy, "--json", "--rows", 3)  # the copy --save wrote keeps the table too
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    validate_document(doc)
    assert doc["more_rows"] == len(table) - 3 and doc["source"] == "the table copy.hlox kept"
    _same_rows(doc["rows"], table.head(3))

    # the table keeps no LLO: one fusion's row, and the API's words for the kernel it cannot give
    fusion = table["fusion"].iloc[1]
    r = command("backend", hlox, "--fusion", fusion, "--json")
    assert r.returncode == 0, r.stderr
    one = json.loads(r.stdout)
    validate_document(one)
    assert one["kernel"] is None and "keeps the kernel table" in one["note"]
    _same_rows([one["fusion"]], table.iloc[1:2])


@pytest.mark.subprocess
def test_a_cpu_target_has_no_kernels_and_says_why_and_how_to_get_them(tmp_path):
    from tests.corpus import program

    import workbench as wb

    corpus_target(tmp_path, "optax_chain", "step.py")
    inst = program("optax_chain").build()
    why = wb.explore(inst.fn, *inst.args).backend().why
    r = command("backend", "step.py:fn", "--json", cwd=tmp_path)
    assert r.returncode == 2
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("hlo-workbench: no TPU kernels: ")
    assert why.rstrip(".") in r.stderr and "-d tpu:0" in r.stderr
    doc = json.loads(r.stdout)
    validate_document(doc)
    assert doc["exit"] == 2 and doc["error"]["message"] == r.stderr.strip()[len("hlo-workbench: "):]

    r = command("backend", LLO / "mlp_bf16.hlox", "--fusion", "fusion.99", "--json")
    assert r.returncode == 2 and "unknown fusion 'fusion.99'; did you mean" in r.stderr
    validate_document(json.loads(r.stdout))
    r = command("backend", LLO / "mlp_bf16.hlox", "--dump", tmp_path / "no-such-folder")
    assert r.returncode == 2 and "is no folder" in r.stderr and not r.stdout
