#!/usr/bin/env bash
# Set up (including the browser for UI tests), then run the whole test suite, slow tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
