#!/usr/bin/env bash
# Judge one suite of a guest run against its row of the matrix:
#
#   judge.sh MATRIX KERNEL SUITE RUN_DIR
#
# Prints one line per unexpected result, "runner: Summary: ..." for the
# test_verifier and test_progs suites, and a final "P F S" line (passed,
# failed, skipped counts) for the caller to add up. The judge itself is
# scripts/judge.py (its docstring says what it checks); the matrix syntax is
# in scripts/matrix.py. Reads RUN_DIR's SUITE files, the matrix,
# tests/known-failures and tests/expected-failures; writes nothing.
exec python3 "$(dirname "$0")/judge.py" suite "$@"
