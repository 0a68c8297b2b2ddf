# Entry points. Everything is built under build/ (ignored by git).
#
#   make demo     build our kernel, boot it in QEMU, show kptrs at work
#   make check    the tests: every kernel of tests/matrix, ends "N passed, N failed"
#                 (runs make test-harness first)
#   make test-harness  the judge's and matrix's own tests, host only, seconds
#   make check-debug  our kernel with KASAN, kmemleak, lockdep: kptr tests, stress, fuzz
#   make check-regressions  each regression test fails with its bug put back
#   make check-hardened  an IBT kernel build: every kptr destructor keeps its ENDBR
#   make check-series LAYER=patches|baseline [SERIES_FROM=N]   every prefix
#                 builds, checkpatch clean
#   make bench    kptr benchmarks on patched, noinline and upstream
#                 (BENCH_KERNELS), results in build/bench/
#
# VARIANT picks the kernel for the single-variant targets:
#   upstream  pristine Debian linux-source-6.1 (has upstream's kptrs)
#   baseline  6.1 with upstream's kptr feature removed (kernel/baseline)
#   patched   baseline plus our series (kernel/patches), the default
#   debug     patched with the kernel's memory, lock and RCU checkers
#   noinline  patched without the bpf_kptr_xchg() inlining (bench's "before")
#   hardened  patched with IBT and distribution hardening (check-hardened)

VARIANT ?= patched
# The demo runs on our kernel; DEMO_VARIANT=upstream shows 6.1 doing the same.
DEMO_VARIANT ?= patched
# Kernels to test; empty means every kernel named in tests/matrix.
KERNELS ?=

LAYER ?= patches

.PHONY: help deps demo bench test-harness check check-debug check-regressions check-hardened check-series prepare kernel tests clean distclean
help:
	@sed -n 's/^#   //p' Makefile

deps:
	scripts/install-deps.sh

demo:
	scripts/demo.sh $(DEMO_VARIANT)

test-harness:
	tests/harness/run-tests.sh

check:
	scripts/check.sh $(KERNELS)

# KASAN and lockdep slow everything down: longer default suite limits.
check-debug:
	MATRIX=tests/matrix.debug SUITE_TIMEOUT=1200 scripts/check.sh debug

check-regressions:
	scripts/check-regressions.sh

check-hardened:
	scripts/check-hardened.sh

check-series:
	scripts/check-series.sh $(LAYER)

bench:
	scripts/bench.sh

prepare:
	scripts/prepare-tree.sh $(VARIANT)

kernel:
	scripts/build-kernel.sh $(VARIANT)

tests: kernel
	scripts/build-tests.sh $(VARIANT)

clean:
	rm -rf build/*/obj build/*/tests build/runs

distclean:
	rm -rf build
