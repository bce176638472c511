"""Run course notebooks' code cells in this process, in order: where nbclient and a Jupyter kernel are not installed
(the TPU machine of ../shared/device: ``bash .device/p2/tpu-run.sh python3 scripts/run_lessons_inline.py
notebooks/11_accelerators_and_memory.ipynb notebooks/12_a_real_model.ipynb``). Cell magics and shell lines are
skipped; ``display()`` prints. A failing cell stops the run with its notebook and cell number. Prints each notebook's
seconds and the device JAX computed on."""
import sys
import time

import nbformat

sys.path.insert(0, ".")


def main(paths: list[str]) -> int:
    import jax

    for path in paths:
        nb = nbformat.read(path, as_version=4)
        scope = {"display": print, "__name__": "__main__"}
        t = time.perf_counter()
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or cell.source.lstrip().startswith("%%"):
                continue
            code = "\n".join(ln for ln in cell.source.splitlines() if not ln.lstrip().startswith(("%", "!")))
            try:
                exec(compile(code, f"{path} cell {i}", "exec"), scope)
            except Exception as e:  # noqa: BLE001 -- said with where it happened
                print(f"{path} cell {i}: {type(e).__name__}: {str(e)[:500]}")
                return 1
        print(f"{path}: ran in {time.perf_counter() - t:.1f} s on {jax.devices()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
