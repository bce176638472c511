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

# The JupyterLab extension (extensions/hlo-workbench-lab), built before the package is installed: the
# package ships the built extension (pyproject.toml's data-files). Node.js and npm from Debian when
# missing; `npm ci` from the committed package-lock.json when node_modules is missing or older than the
# lock; a build when a source is newer than the last build. Any failure stops the setup.
ext=extensions/hlo-workbench-lab
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "[setup] installing Node.js and npm from Debian (the JupyterLab extension is built with them)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)'; then
  echo "[setup] Node.js $(node --version) is too old to build the JupyterLab extension: 18 or newer is needed" >&2
  exit 1
fi
if ! .venv/bin/python -c "import jupyterlab" 2>/dev/null; then  # the build needs JupyterLab's core package
  echo "[setup] installing JupyterLab into .venv (the extension is built against it)"
  .venv/bin/python -m pip install -q jupyterlab 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import jupyterlab"
fi
if [[ ! -f $ext/node_modules/.package-lock.json || $ext/package-lock.json -nt $ext/node_modules/.package-lock.json ]]; then
  echo "[setup] npm ci in $ext"
  (cd "$ext" && npm ci --no-audit --no-fund --loglevel=error)
fi
built=$ext/labextension/package.json
ext_changed=0
if [[ ! -f $built ]] || [[ -n $(find "$ext/src" "$ext/style" "$ext/schema" "$ext/package.json" "$ext/package-lock.json" "$ext/tsconfig.json" \
    "$ext/build-labextension.mjs" "$ext/install.json" workbench/assets/diffview.js workbench/assets/diffview.css \
    workbench/assets/widgetkit.css -newer "$built" -print -quit) ]]; then
  echo "[setup] building the JupyterLab extension"
  # against .venv's JupyterLab (build-labextension.mjs); its progress lines are shown only if it fails
  if ! (cd "$ext" && npm run --silent build:prod) >.venv/.hlo-workbench-lab-build.log 2>&1; then
    cat .venv/.hlo-workbench-lab-build.log >&2
    exit 1
  fi
  [[ -f $built ]] || { echo "[setup] the extension's build wrote no $built" >&2; exit 1; }
  touch "$built"
  ext_changed=1
fi
# The view components (src/components) for the panel and the offline report: workbench/assets/views.js and
# views.css, an ES module and its style bundled by esbuild (build-views.mjs), when missing or older than a
# source (the extension's build:prod above builds them too). Build outputs: .gitignore'd, shipped in the wheel.
views=workbench/assets/views.js
if [[ ! -f $views || ! -f workbench/assets/views.css || ! -f workbench/assets/editor.js ]] || [[ -n $(find "$ext/src/components" "$ext/build-views.mjs" \
    "$ext/package-lock.json" "$ext/tsconfig.json" workbench/assets/diffview.js workbench/assets/diffview.css \
    workbench/assets/widgetkit.css -newer "$views" -print -quit) ]]; then
  echo "[setup] building the view components ($views)"
  if ! (cd "$ext" && npm run --silent build:views) >.venv/.hlo-workbench-views-build.log 2>&1; then
    cat .venv/.hlo-workbench-views-build.log >&2
    exit 1
  fi
  touch "$views" workbench/assets/views.css workbench/assets/editor.js
fi

stamp=.venv/.hlo-workbench-installed
if [[ ! -f $stamp || pyproject.toml -nt $stamp ]]; then
  echo "[setup] installing the package and its dependencies into .venv"
  .venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
  # setuptools' framed warning about editable installs (a checkout's folder may shadow the package) says
  # nothing this layout needs: it is left out, and so is pip's note on the install location
  .venv/bin/python -m pip install -q -e ".[test,lab]" 2>&1 | grep -v "^WARNING: Location" \
    | awk '/BuildBackendWarning: Editable installation/ {skip = 1} !skip {print} skip && /with strategy, WheelFile/ {skip = 0}' || true
  .venv/bin/python -c "import workbench, jax, pandas, graphviz, anywidget" 
  touch "$stamp"
fi
# The dev install serves the extension from the checkout, as `jupyter labextension develop` does: the
# environment's share/jupyter/labextensions/hlo-workbench-lab is a link to the built folder.
target=.venv/share/jupyter/labextensions/hlo-workbench-lab
if [[ "$(readlink "$target" 2>/dev/null)" != "$PWD/$ext/labextension" ]]; then
  mkdir -p "$(dirname "$target")"
  rm -rf "$target"
  ln -s "$PWD/$ext/labextension" "$target"
  ext_changed=1
fi
# The server extension the .hlox viewer and the Compare tab ask (workbench/views/labserver.py), enabled as
# the wheel enables it (its data-files): the environment's etc/jupyter/jupyter_server_config.d holds a link
# to the checkout's config file.
server_conf=.venv/etc/jupyter/jupyter_server_config.d/hlo-workbench.json
if [[ "$(readlink "$server_conf" 2>/dev/null)" != "$PWD/jupyter-config/jupyter_server_config.d/hlo-workbench.json" ]]; then
  mkdir -p "$(dirname "$server_conf")"
  rm -rf "$server_conf"
  ln -s "$PWD/jupyter-config/jupyter_server_config.d/hlo-workbench.json" "$server_conf"
  ext_changed=1
fi
verified=.venv/.hlo-workbench-lab-verified
if [[ $ext_changed == 1 || ! -f $verified || $built -nt $verified ]]; then
  if ! .venv/bin/jupyter labextension list 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep -E "hlo-workbench-lab v[^ ]+ enabled OK" >/dev/null; then
    echo "[setup] JupyterLab does not list hlo-workbench-lab as enabled and OK:" >&2
    .venv/bin/jupyter labextension list >&2 || true
    exit 1
  fi
  if ! .venv/bin/jupyter server extension list 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep -E "workbench.views.labserver enabled" >/dev/null; then
    echo "[setup] the Jupyter server does not list workbench.views.labserver as enabled:" >&2
    .venv/bin/jupyter server extension list >&2 || true
    exit 1
  fi
  echo "[setup] JupyterLab extension hlo-workbench-lab and its server extension: enabled, OK"
  touch "$verified"
fi
echo "[setup] ready: $(.venv/bin/python -c 'import jax, sys; print("Python", sys.version.split()[0], "jax", jax.__version__)')"
