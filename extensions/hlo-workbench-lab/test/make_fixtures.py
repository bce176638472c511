"""Writes the tokenizer tests' fixtures (test/fixtures/) from real workbench runs of the built-in attention
example: StableHLO as lowered with its locations, the last Enzyme-JaX pattern stage, and XLA's optimized
HLO. Run from the repository root with the project's Python; the outputs are committed, so the tests do
not need JAX: `.venv/bin/python extensions/hlo-workbench-lab/test/make_fixtures.py`."""
import pathlib

import jax

import workbench as wb
from workbench import examples

OUT = pathlib.Path(__file__).resolve().parent / "fixtures"
ROOT = OUT.parents[3]  # the repository: its path is left out of the texts' file names


def main() -> None:
    fn, args = examples.load("attention")
    ex = wb.explore(fn, *args)
    enzyme = [s for s in ex.stages if s.group == "mlir" and s.name.startswith("enzyme-hlo-patterns#")]
    texts = {
        # the as-lowered module with debug info: loc(...) on ops and #loc aliases at the end
        "attention.stablehlo.mlir": jax.jit(fn).lower(*args).as_text(debug_info=True),
        "attention.enzyme.mlir": enzyme[-1].text,
        "attention.xla-optimized.hlo": ex["xla:optimized"].text,
    }
    OUT.mkdir(exist_ok=True)
    for name, text in texts.items():
        (OUT / name).write_text(text.replace(f"{ROOT}/", ""))
        print(f"{OUT / name}: {len(text.splitlines())} lines")


if __name__ == "__main__":
    main()
