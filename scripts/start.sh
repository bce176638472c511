#!/usr/bin/env bash
# Set up, then run the main job: JupyterLab opening the tour notebook; with --headless (or without a
# terminal) the CLI's report on the built-in attention-gradient example instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [[ "${1:-}" == "--headless" || ! -t 0 ]]; then
  exec .venv/bin/hlo-workbench report attention
fi
exec .venv/bin/jupyter lab --ip=127.0.0.1 --no-browser notebooks/00_tour.ipynb
