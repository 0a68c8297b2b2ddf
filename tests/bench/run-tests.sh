#!/usr/bin/env bash
# Tests of the benchmark's statistics (scripts/bench_stats.py): host only,
# no kernel, a second or two. make test-harness runs them.
set -euo pipefail
exec python3 -m unittest discover -s "$(dirname "$0")" -p 'test_*.py' "$@"
