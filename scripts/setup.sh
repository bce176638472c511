#!/usr/bin/env bash
# Set up everything hlo-workbench needs on a fresh Debian machine: system packages, a Python 3.11
# virtual environment in .venv, and the package with its test/lab extras. Safe to run again.
#   scripts/setup.sh            # runtime + lab
#   scripts/setup.sh --test     # also the browser (Debian chromium) for the UI tests
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0
[[ "${1:-}" == "--test" ]] && want_test=1

apt_pkgs=(graphviz)
[[ $want_test == 1 ]] && apt_pkgs+=(chromium)
missing=()
for p in "${apt_pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [[ ${#missing[@]} -gt 0 ]]; then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "[setup] installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-}
if [[ -z "$PY" ]]; then
  for c in python3.11 python3; do
    if command -v "$c" >/dev/null && "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then PY=$c; break; fi
  done
fi
if [[ -z "$PY" ]]; then
  echo "[setup] Python 3.11 is required (enzyme-ad is built for CPython 3.11 only); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
if [[ ! -x .venv/bin/python ]]; then
  echo "[setup] creating .venv with $PY"
  "$PY" -m venv .venv
fi
stamp=.venv/.hlo-workbench-installed
if [[ ! -f $stamp || pyproject.toml -nt $stamp ]]; then
  echo "[setup] installing the package and its dependencies into .venv"
  .venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -m pip install -q -e ".[test,lab]" 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import workbench, jax, pandas, graphviz, anywidget" 
  touch "$stamp"
fi
echo "[setup] ready: $(.venv/bin/python -c 'import jax, sys; print("Python", sys.version.split()[0], "jax", jax.__version__)')"
