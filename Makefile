# Entry points. Everything is built under build/ (ignored by git). Each one
# first installs the Debian packages it needs when some are missing
# (scripts/install-deps.sh: apt-get, as root or through sudo).
#
#   make demo     the main job: build our kernel, boot it in QEMU, show kptrs at work
#   make check    the tests: every kernel of tests/matrix, ends "N passed, N failed"
#                 (runs the judge's tests, tests/harness, first); results also in build/results.ktap
#   make check SUITES="kptr_maps kptr_objs" [TEST_FILTER='kptr_maps/hash*']
#                 only those suites, on one kernel (VARIANT), booting nothing else
#   make shell    boot VARIANT's kernel with its tests and bpftool, shell on the console
#   make run CMD='./test_progs -t kptr_maps'   boot, run CMD, print its output and status
#   make test-harness  the judge's, matrix's and bench statistics' own tests,
#                 host only, seconds
#   make check-debug  our kernel with KASAN, kmemleak, lockdep: kptr tests, stress, fuzz
#   make check-regressions  each regression test fails with its bug put back
#   make check-hardened  an IBT kernel build: every kptr destructor keeps its ENDBR
#   make check-full  upstream 6.1's complete test_progs, test_maps and test_verifier
#                 on upstream 6.1 and on our series, both with the selftests'
#                 own config; parity table in build/parity.md (hours under TCG)
#   make check-clients  Debian's bpftool, bpftrace and BCC tools in the guest
#                 on upstream-full and patched-full: kptr slots read as zeros,
#                 the same output on both (also part of make check-full)
#   make check-series LAYER=patches|baseline [SERIES_FROM=N] [SERIES_ONLY="N M"]  every prefix
#                 builds, no checkpatch --strict errors, the docs build without warnings
#   make bench    kptr benchmarks in instruction counts (and TCG time) on
#                 patched, upstream 6.1, upstream 6.12 and noinline
#                 (BENCH_KERNELS), results in build/bench/report.md
#   make deps     only install the missing packages
#
# VARIANT picks the kernel for the single-variant targets:
#   upstream  pristine Debian linux-source-6.1 (has upstream's kptrs)
#   baseline  6.1 with upstream's kptr feature removed (kernel/baseline)
#   patched   baseline plus our series (kernel/patches), the default
#   debug     patched with the kernel's memory, lock and RCU checkers
#   noinline  patched without the bpf_kptr_xchg() inlining (bench's "before")
#   upstream612  Debian's linux-source-6.12 as it is: make bench's peer kernel
#   hardened  patched with IBT and distribution hardening (check-hardened)
#   upstream-full, patched-full  upstream and patched with the config of
#             tools/testing/selftests/bpf (make check-full)

VARIANT ?= patched
# The demo runs on our kernel; DEMO_VARIANT=upstream shows 6.1 doing the same.
DEMO_VARIANT ?= patched
# Kernels to test; empty means every kernel named in tests/matrix (with
# SUITES: VARIANT alone).
KERNELS ?=
# Suites of tests/matrix to run (empty: all), and a test_progs -t selection
# for their test_progs rows.
SUITES ?=
TEST_FILTER ?=
# make run's command, run with sh in the guest's /tests/VARIANT
CMD ?=

LAYER ?= patches

.PHONY: help deps demo bench test-harness check check-debug check-regressions check-hardened check-full check-clients check-series shell run prepare kernel tests clean distclean
help:
	@sed -n 's/^#   //p' Makefile

deps:
	scripts/install-deps.sh

demo: deps
	scripts/demo.sh $(DEMO_VARIANT)

test-harness:
	tests/harness/run-tests.sh
	tests/bench/run-tests.sh

check: deps
	SUITES="$(SUITES)" TEST_FILTER="$(TEST_FILTER)" VARIANT=$(VARIANT) scripts/check.sh $(KERNELS)

shell: deps
	scripts/boot.sh shell $(VARIANT)

run: deps
	$(if $(CMD),,$(error usage: make run CMD='command' [VARIANT=...]))
	scripts/boot.sh run $(VARIANT) '$(subst ','\'',$(CMD))'

# KASAN and lockdep slow everything down: longer default suite limits.
check-debug: deps
	MATRIX=tests/matrix.debug SUITE_TIMEOUT=1200 scripts/check.sh debug

check-regressions: deps
	scripts/check-regressions.sh

check-hardened: deps
	scripts/check-hardened.sh

check-full:
	scripts/install-deps.sh clients
	scripts/check-full.sh

check-clients:
	scripts/install-deps.sh clients
	scripts/check-clients.sh

check-series:
	scripts/install-deps.sh docs
	scripts/check-series.sh $(LAYER)

bench:
	scripts/install-deps.sh bench
	scripts/bench.sh

prepare: deps
	scripts/prepare-tree.sh $(VARIANT)

kernel: deps
	scripts/build-kernel.sh $(VARIANT)

tests: kernel
	scripts/build-tests.sh $(VARIANT)

clean:
	rm -rf build/*/obj build/*/tests build/runs

distclean:
	rm -rf build
