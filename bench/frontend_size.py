"""How big the front end is: the lines of the code that draws what a user sees of an exploration, counted the
way issue 45 counts them (the Python view builders, the widget JavaScript, the templates, the extension's
TypeScript; no CSS, no tests, no build outputs), now and at a commit before (default: 4a1a4a2, where issue 45
was filed), side by side.

    .venv/bin/python bench/frontend_size.py [BASE_COMMIT]
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import PurePosixPath

ROOT = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True).stdout.strip()
BASE = sys.argv[1] if len(sys.argv) > 1 else "4a1a4a2"
BUILT = {"workbench/assets/views.js", "workbench/assets/editor.js"}  # esbuild's outputs: counted as their TypeScript

KINDS = {  # kind: (folders, suffixes, single files)
    "panel (widgets: Python + JS)": (("workbench/views/widgets/",), (".py", ".js"), ()),
    "assets (JS, templates)": (("workbench/assets/",), (".js", ".j2"), ()),
    "extension + components (TS)": (("extensions/hlo-workbench-lab/src/",), (".ts",), ()),
    "Python view builders": ((), (), ("workbench/artifacts/report.py", "workbench/artifacts/comparison_page.py",
                                      "workbench/artifacts/viewmodel.py", "workbench/artifacts/comparison_model.py",
                                      "workbench/views/labserver.py")),
}


def files(commit: str | None) -> list[str]:
    cmd = ["git", "ls-tree", "-r", "--name-only", commit] if commit else ["git", "ls-files", "--cached", "--others",
                                                                            "--exclude-standard"]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()


def lines(commit: str | None, path: str) -> int:
    if commit:
        text = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True).stdout
    else:
        try:
            text = open(f"{ROOT}/{path}", encoding="utf-8").read()
        except FileNotFoundError:
            return 0
    return text.count("\n")


def count(commit: str | None) -> dict[str, int]:
    out = dict.fromkeys(KINDS, 0)
    for path in files(commit):
        if path in BUILT:
            continue
        p = PurePosixPath(path)
        for kind, (folders, suffixes, singles) in KINDS.items():
            if path in singles or (any(path.startswith(f) for f in folders) and p.suffix in suffixes):
                out[kind] += lines(commit, path)
    return out


def main() -> None:
    before, now = count(BASE), count(None)
    print(f"{'front-end code, lines':34} {BASE:>10} {'now':>8} {'now/before':>11}")
    for kind in KINDS:
        ratio = now[kind] / before[kind] if before[kind] else float("nan")
        print(f"{kind:34} {before[kind]:>10,} {now[kind]:>8,} {ratio:>11.2f}")
    b, n = sum(before.values()), sum(now.values())
    print(f"{'all':34} {b:>10,} {n:>8,} {n / b:>11.2f}   (issue 45 asks for <= 0.70)")


if __name__ == "__main__":
    main()
