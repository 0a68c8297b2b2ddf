# Entry points. Everything is built under build/ (ignored by git).
#
#   make demo     build a kernel, boot it in QEMU, show kptrs at work
#   make check    the tests: every kernel of tests/matrix, ends "N passed, N failed"
#   make check-series LAYER=patches|baseline   every prefix builds, checkpatch clean
#   make bench    kptr benchmarks on patched and upstream (BENCH_KERNELS), build/bench/
#
# VARIANT picks the kernel for the single-variant targets:
#   upstream  pristine Debian linux-source-6.1 (has upstream's kptrs)
#   baseline  6.1 with upstream's kptr feature removed (kernel/baseline)
#   patched   baseline plus our series (kernel/patches), the default

VARIANT ?= patched
# The demo runs on our kernel; DEMO_VARIANT=upstream shows 6.1 doing the same.
DEMO_VARIANT ?= patched
# Kernels to test; empty means every kernel named in tests/matrix.
KERNELS ?=

LAYER ?= patches

.PHONY: help deps demo bench check check-series prepare kernel tests clean distclean
help:
	@sed -n 's/^#   //p' Makefile

deps:
	scripts/install-deps.sh

demo:
	scripts/demo.sh $(DEMO_VARIANT)

check:
	scripts/check.sh $(KERNELS)

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
