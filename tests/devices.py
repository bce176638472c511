"""A script run in a fresh Python that sees several CPU devices: JAX fixes its device count when it
starts, and the pytest process's JAX has one, so a test of a sharded program (a 2 x 4 mesh) runs it
in a child started with XLA_FLAGS=--xla_force_host_platform_device_count=N. The script prints one
line ``RESULT<json>``; that JSON is what the test reads."""
import json
import os
import subprocess
import sys


def run_on_cpu_devices(script, devices: int = 8, timeout: float = 900) -> dict:
    """Run the script file ``script`` on ``devices`` CPU devices; its RESULT line's JSON (the test fails
    with the script's stderr when there is none)."""
    # CPU devices alone: on an accelerator host the chip is the test process's (a TPU takes one process)
    env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=timeout)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line, proc.stderr[-4000:]
    return json.loads(line[len("RESULT"):])
