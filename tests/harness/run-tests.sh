#!/usr/bin/env bash
# The harness's own tests (judge, matrix, splat list, guest time limits):
# host only, no kernel build, a few seconds. make test-harness runs them, and
# make check runs them before anything else. Reads the fixtures and the
# project's matrices and lists; writes only temporary dirs.
set -euo pipefail
exec python3 "$(dirname "$0")/harness.py" "$@"
