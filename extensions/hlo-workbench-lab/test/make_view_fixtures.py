"""Writes the kernel-free views' fixtures (test/fixtures/) from a real workbench run of the built-in
attention example: the exploration saved as a .hlox file, the bundle a %%hlo output carries, and what
Python reads back from both (stage names, line counts, the texts' hashes, the lines ex.diff deletes, the
pair's structural diff: its runs, its normalized texts' hashes, its rows counted by kind), for
test/views.test.ts to compare the extension's decoding with. Run from the repository root with the
project's Python: `.venv/bin/python extensions/hlo-workbench-lab/test/make_view_fixtures.py`."""
import hashlib
import json
import pathlib

import workbench as wb
from workbench import examples
from workbench.analysis.diff.kinds import ROW_KINDS
from workbench.views.widgets.bundle import exploration_json

OUT = pathlib.Path(__file__).resolve().parent / "fixtures"
PAIR = ("canonicalize#1", "cse#1")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


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
                    "sha256": sha256(s.text) if s.text else None} for s in back.stages],
        "pair": list(PAIR),
        "deleted": [line for line in diff.unified().splitlines()
                    if line.startswith("-") and not line.startswith("---")],
        # the panel's diff of the pair (ex.diff: normalized texts, rows), which both saved forms carry
        "structural": {"runs": diff.runs(), "before": sha256("\n".join(diff.before)),
                       "after": sha256("\n".join(diff.after)), "rows": len(diff.rows()),
                       "counts": [sum(1 for _, _, k in diff.rows() if k == kind) for kind in ROW_KINDS]},
    }
    (OUT / "attention.bundle.json").write_text(json.dumps(bundle, indent=0))
    (OUT / "attention.expect.json").write_text(json.dumps(expect, indent=1))
    for name in ("attention.hlox", "attention.bundle.json", "attention.expect.json"):
        print(f"{OUT / name}: {(OUT / name).stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
