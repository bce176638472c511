#!/usr/bin/env bash
# Set up, then run the main job: JupyterLab opening the tour notebook; with --headless (or without a
# terminal, when --lab does not ask for JupyterLab) the CLI's report on the built-in attention-gradient
# example instead.
#   scripts/start.sh                  # JupyterLab on the tour (a terminal), else the report
#   scripts/start.sh --lab [ARGS]     # JupyterLab even without a terminal (nohup, an IDE, a container)
#   scripts/start.sh --headless       # the report
# Further arguments go to `jupyter lab` (--port=8899, --ip=0.0.0.0, ...). As root (a container), JupyterLab
# is started with --allow-root, which it refuses to run without.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=auto
args=()
for a in "$@"; do
  case "$a" in
    --lab) mode=lab ;;
    --headless) mode=headless ;;
    *) args+=("$a") ;;
  esac
done
if [[ $mode == auto && ! -t 0 ]]; then
  echo "[start] no terminal: printing the report; \`scripts/start.sh --lab\` starts JupyterLab"
  mode=headless
fi
scripts/setup.sh
if [[ $mode == headless ]]; then
  exec .venv/bin/hlo-workbench report attention
fi
if [[ $(id -u) == 0 ]]; then
  echo "[start] running as root: JupyterLab gets --allow-root"
  args=(--allow-root "${args[@]}")
fi
exec .venv/bin/jupyter lab --ip=127.0.0.1 --no-browser "${args[@]}" notebooks/00_tour.ipynb
