"""Complex constants (``1j * k`` in an FFT filter) through every reader of a constant's value. jaxlib's MLIR
bindings cannot hand a complex DenseElementsAttr to Python ("Can't cast unknown element type"), and read through
``NamedAttribute.attr`` that error ends the process: every read goes through ``ir.mlir.attribute``, which gives
such an attribute as its text. The user's road runs in a child process, so a regression is a failed test and
not a dead test runner."""
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np

from workbench.ir.mlir import OpaqueAttribute, attribute, attribute_items, parse_module

K = np.fft.fftfreq(16, 1 / 16)


def spectral_derivative(u):
    return jnp.fft.ifft(1j * K * jnp.fft.fft(u)).real


def test_a_complex_constant_is_read_as_its_text_and_a_real_one_as_itself():
    text = jax.jit(lambda u: (1j * K[:4] * u).real + 2.0).lower(jnp.ones(4)).as_text()
    module = parse_module(text, allow_unregistered=False)
    with module.context:
        ops = list(module.body.operations[0].regions[0].blocks[0].operations)
        constants = [op for op in ops if op.operation.name == "stablehlo.constant"]
        values = [attribute(op, "value") for op in constants]
        opaque = [v for v in values if isinstance(v, OpaqueAttribute)]
        assert len(opaque) == 1 and "complex<f32>" in opaque[0].text and "(0.000000e+00,1.000000e+00)" in opaque[0].text
        assert any(not isinstance(v, OpaqueAttribute) and "2.000000e+00" in str(v) for v in values)
        items = [dict(attribute_items(op)) for op in constants]
        assert all(set(i) == {"value"} for i in items)
        assert attribute(constants[0], "no_such_attribute") is None


def test_an_fft_filter_and_a_loop_of_it_explore_run_draw_drift_map_and_report(tmp_path):
    """Issue 44's five lines (then the graph and the report, which ended the process), and the same filter in a
    lax.fori_loop, with every default."""
    script = tmp_path / "spectral.py"
    script.write_text(
        "import jax, jax.numpy as jnp, numpy as np\nimport workbench as wb\n"
        "k = np.fft.fftfreq(16, 1 / 16)\n"
        "ex = wb.explore(lambda u: jnp.fft.ifft(1j * k * jnp.fft.fft(u)).real, jnp.sin(jnp.arange(16.0)))\n"
        "r = ex.run()\nassert r.check.passed, r.check\n"
        "for name in ('stablehlo', ex.default_run_stage().name):\n"
        "    assert 'digraph' in ex.graph(name).source\n"
        "assert not ex.drift().found\nex.source_map()\n"
        f"ex.report({str(tmp_path / 'one.html')!r})\n"
        "def loop(u):\n"
        "    return jax.lax.fori_loop(0, 5, lambda i, u: jnp.fft.ifft(1j * k * jnp.fft.fft(u)).real * 0.1 + u, u)\n"
        "ex = wb.explore(loop, jnp.sin(jnp.arange(16.0)))\n"
        "assert ex.run(repeat=1).check.passed and len(ex.cost()) == len(ex.stages)\n"
        f"ex.report({str(tmp_path / 'loop.html')!r})\nprint('DONE')\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert r.returncode == 0 and "DONE" in r.stdout, r.stderr[-3000:]
    assert (tmp_path / "one.html").stat().st_size > 0 and (tmp_path / "loop.html").stat().st_size > 0
