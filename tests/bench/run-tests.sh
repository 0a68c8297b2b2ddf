#!/usr/bin/env bash
# Tests of the benchmark's statistics (scripts/bench_stats.py): host only,
# no kernel, a second or two. make test-harness runs them. Reads only the
# test_*.py files beside this script (their data is inline); writes nothing.
set -euo pipefail
exec python3 -m unittest discover -s "$(dirname "$0")" -p 'test_*.py' "$@"
