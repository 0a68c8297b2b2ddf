/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared between the benchmark's BPF objects and kptr_bench.c.
 *
 * BENCH_OPS: how many operations one program run performs. Large enough
 * that the per-op cost dominates the fixed cost of a BPF_PROG_TEST_RUN
 * iteration (which is measured on its own and subtracted), small enough
 * that the verifier walks the bounded loops quickly.
 */
#ifndef KPTR_BENCH_H
#define KPTR_BENCH_H

#define BENCH_OPS	64

/*
 * The cases the tp_btf program of kptr_bench.bpf.c times itself (task and
 * cgroup kptrs need a trusted task and cgroup, which a tc program has
 * not): their order in the results array, and their names.
 */
enum obj_case {
	OC_EMPTY,		/* two clock reads: subtracted from the others */
	OC_TASK_CACHED_LOAD,
	OC_TASK_ACQUIRE_RELEASE,
	OC_TASK_CACHED_GET,
	OC_CGROUP_CACHED_LOAD,
	OC_CGROUP_ACQUIRE_RELEASE,
	OC_CGROUP_CACHED_GET,
	OC_NR,
};

#define OBJ_CASE_NAMES {						\
	"obj_empty", "task_cached_load", "task_acquire_release",	\
	"task_cached_get", "cgroup_cached_load",			\
	"cgroup_acquire_release", "cgroup_cached_get",			\
}

/* Map sizes of the hash scale cases (kptr_scale.bpf.c) */
#define SCALE_HASH_SIZES { 1, 1000, 65536, 1000000 }

#endif
