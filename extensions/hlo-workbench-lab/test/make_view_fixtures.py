"""Writes the kernel-free views' fixtures (test/fixtures/) from a real workbench run of the built-in
attention example: the exploration saved as a .hlox file, the bundle a %%hlo output carries, and what
Python reads back from both (stage names, line counts, the texts' hashes, the lines ex.diff deletes), for
test/views.test.ts to compare the extension's decoding with. Run from the repository root with the
project's Python: `.venv/bin/python extensions/hlo-workbench-lab/test/make_view_fixtures.py`."""
import hashlib
import json
import pathlib

import workbench as wb
from workbench import examples
from workbench.views.widgets.bundle import exploration_json

OUT = pathlib.Path(__file__).resolve().parent / "fixtures"
PAIR = ("canonicalize#1", "cse#1")


def main() -> None:
    fn, args = examples.load("attention")
    ex = wb.explore(fn, *args)
    OUT.mkdir(exist_ok=True)
    ex.save(OUT / "attention.hlox")
    back = wb.load(OUT / "attention.hlox")
    bundle = exploration_json(back, left=PAIR[0], right=PAIR[1], wait=60)
    diff = back.diff(*PAIR)
    expect = {
        "stages": [{"name": s.name, "group": s.group, "changed": bool(s.changed), "lines": s.lines,
                    "error": s.error or "", "parent": s.parent,
                    "sha256": hashlib.sha256(s.text.encode()).hexdigest() if s.text else None} for s in back.stages],
        "pair": list(PAIR),
        "deleted": [line for line in diff.unified().splitlines()
                    if line.startswith("-") and not line.startswith("---")],
    }
    (OUT / "attention.bundle.json").write_text(json.dumps(bundle, indent=0))
    (OUT / "attention.expect.json").write_text(json.dumps(expect, indent=1))
    for name in ("attention.hlox", "attention.bundle.json", "attention.expect.json"):
        print(f"{OUT / name}: {(OUT / name).stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
