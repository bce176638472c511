#!/usr/bin/env bash
# Set up, then run the tests, printing the 25 slowest at the end.
#   scripts/test.sh            # everything: set-up with the browser (Debian's chromium), then the whole suite
#   scripts/test.sh --fast     # the fast tier: set-up without the browser, then the tests that need no browser,
#                              # kernel, interpreter, cluster, wheel build or GPU and are not long (under 5 minutes)
# Any further arguments go to pytest (a file, -k NAME, -x, ...).
set -euo pipefail
cd "$(dirname "$0")/.."

# the fast tier: the tests without any marker of pyproject.toml's [tool.pytest.ini_options] (tests/conftest.py
# puts them on from the fixtures each test uses)
FAST="not (browser or notebook or subprocess or cluster or wheel or gpu or tpu or slow)"

if [[ "${1:-}" == "--fast" ]]; then
  shift
  scripts/setup.sh
  exec .venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 -m "$FAST" "$@"
fi
scripts/setup.sh --test
# everything set up: a test that finds chromium, playwright or nbclient missing fails instead of skipping
export HLO_WORKBENCH_TEST_ALL=1
# one pytest process per core, at most 4 (each holds its own Chromium, JupyterLab and pass workers); a test
# file stays in one process, so its module fixtures (explored programs) are made once; the files go out in
# tests/conftest.py's order (costliest first, the browser last), not pytest-xdist's (most tests first)
cores=$(nproc)
workers=$(( cores < 4 ? cores : 4 ))
if (( workers >= 2 )); then
  exec .venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 "$@"
