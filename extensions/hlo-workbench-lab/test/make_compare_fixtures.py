"""Writes the comparison's fixtures (test/fixtures/): the built-in MLP example explored twice, under the
default settings and under pipeline "no_enzyme" with two Enzyme-JaX patterns switched off (so a pass both
run makes a different module, and one pass runs in the first only), each saved as a .hlox file; and what
Python reads back from the pair (each file's stage names and text hashes, the first stage both hold whose
module differs beyond renaming, as wb.compare_explorations names it), for test/compare.test.ts and tests/test_browser_compare.py. Run from the repository root
with the project's Python: `.venv/bin/python extensions/hlo-workbench-lab/test/make_compare_fixtures.py`."""
import hashlib
import json
import pathlib

import workbench as wb
from workbench import examples

OUT = pathlib.Path(__file__).resolve().parent / "fixtures"
# the patterns that fold the MLP's chained broadcasts in enzyme-hlo-patterns#1: with only one of them off,
# the other does the same fold, and the module is the same
SETTINGS = {"mlp.all.hlox": {},
            "mlp.no_enzyme.hlox": {"pipeline": "no_enzyme",
                                   "disable": ("broadcast_in_dim_op_canon", "broadcast_in_dim_simplify")}}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def main() -> None:
    fn, args = examples.load("mlp")
    OUT.mkdir(exist_ok=True)
    stages = {}
    for name, settings in SETTINGS.items():
        wb.explore(fn, *args, **settings).save(OUT / name)
        back = wb.load(OUT / name)
        stages[name] = [{"name": s.name, "sha256": sha256(s.text) if s.text else None} for s in back.stages]
    # the first difference as Python names it (beyond renaming: the stages' stored "normalized" hashes say the same)
    comparison = wb.compare_explorations(*(wb.load(OUT / n) for n in SETTINGS))
    first = comparison.first_difference.name if comparison.first_difference else None
    same = {p.name: p.same for p in comparison.pairs if p.side == "both"}  # per stage both hold, as Python says
    expect = {"files": list(SETTINGS), "stages": stages, "first_difference": first, "same": same}
    (OUT / "mlp.compare.json").write_text(json.dumps(expect, indent=1))
    for name in (*SETTINGS, "mlp.compare.json"):
        print(f"{OUT / name}: {(OUT / name).stat().st_size:,} bytes")
    print("first difference:", first)


if __name__ == "__main__":
    main()
