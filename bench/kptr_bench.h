/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared between kptr_bench.bpf.c and kptr_bench.c: how many operations one
 * program run performs. Large enough that the per-op cost dominates the
 * fixed cost of a BPF_PROG_TEST_RUN iteration (which is measured on its own
 * and subtracted), small enough that the verifier walks the bounded loops
 * quickly.
 */
#ifndef KPTR_BENCH_H
#define KPTR_BENCH_H

#define BENCH_OPS	64

#endif
