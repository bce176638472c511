#!/usr/bin/env bash
# Set up, then run the main job: JupyterLab opening the tour notebook; with --headless (or without a
# terminal, when --lab does not ask for JupyterLab) the CLI's report on the built-in attention-gradient
# example instead.
#   scripts/start.sh                  # JupyterLab on the tour (a terminal), else the report
#   scripts/start.sh --lab [ARGS]     # JupyterLab even without a terminal (nohup, an IDE, a container)
#   scripts/start.sh --headless       # the report
#   scripts/start.sh --help           # this text (nothing is set up or started)
# Further arguments go to `jupyter lab` (--port=8899, --ip=0.0.0.0, ...). JupyterLab listens on
# 127.0.0.1 unless an --ip (--ip=ADDR or --ip ADDR) is given. As root (a container), JupyterLab is
# started with --allow-root, which it refuses to run without.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=auto
args=()
ip=(--ip=127.0.0.1)  # the default address, unless the user names one
for a in "$@"; do
  case "$a" in
    -h|--help)
      # the usage: this file's header, the comment lines after the #! line
      sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
      exit 0 ;;
    --lab) mode=lab ;;
    --headless) mode=headless ;;
    --ip|--ip=*|--ServerApp.ip|--ServerApp.ip=*) ip=(); args+=("$a") ;;
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
exec .venv/bin/jupyter lab "${ip[@]}" --no-browser "${args[@]}" notebooks/00_tour.ipynb
