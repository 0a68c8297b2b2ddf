// SPDX-License-Identifier: GPL-2.0
/*
 * kptr benchmark, BPF side: the cases the targets of docs/bench.md are
 * decided on. Every measured tc program is run by user space with
 * BPF_PROG_TEST_RUN; each run performs BENCH_OPS operations in a bounded
 * loop, so that the per-op cost dominates the cost of one test_run
 * iteration (measured with the "empty" program and subtracted by user
 * space). The task and cgroup cases need a trusted task and cgroup, which
 * only a tracing program has: a tp_btf program times those itself.
 *
 * One source for every kernel; bench.sh compiles it per kernel with:
 *   BENCH_KPTRS        the kernel has kptrs (not the baseline)
 *   BENCH_KPTR_GET     kptr_get kfuncs (6.1 and our series; 6.4 removed them)
 *   BENCH_TASK_KFUNCS  task and cgroup acquire/release kfuncs (our series, 6.12)
 *   BENCH_KPTR_612     6.12's tags: "kptr" is referenced there and the
 *                      unreferenced one is "kptr_untrusted"; in 6.1 they are
 *                      "kptr_ref" and "kptr"
 *
 * Section names sort the tc programs: SEC("classifier") programs use kptr
 * maps and are the set whose verifier cost the load cases measure,
 * SEC("tc") programs use none.
 *
 * Loop bodies end with barrier() where the compiler could otherwise hoist a
 * map value load out of the loop: the cost of that load is what is measured.
 * Results go to the global sink and failed operations count in misses, so
 * nothing is optimised away and user space can tell a broken run from a
 * fast one.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "kptr_bench.h"

#ifdef BENCH_KPTR_612
#define KPTR_UNREF __attribute__((btf_type_tag("kptr_untrusted")))
#define KPTR_REF __attribute__((btf_type_tag("kptr")))
#else
#define KPTR_UNREF __attribute__((btf_type_tag("kptr")))
#define KPTR_REF __attribute__((btf_type_tag("kptr_ref")))
#endif

#ifndef barrier	/* 6.12's bpf_helpers.h has it */
#define barrier() asm volatile("" ::: "memory")
#endif

extern struct prog_test_ref_kfunc *
bpf_kfunc_call_test_acquire(unsigned long *scalar_ptr) __ksym;
extern void bpf_kfunc_call_test_release(struct prog_test_ref_kfunc *p) __ksym;
#ifdef BENCH_KPTR_GET
extern struct prog_test_ref_kfunc *
bpf_kfunc_call_test_kptr_get(struct prog_test_ref_kfunc **pp, int a, int b) __ksym;
#endif

__u64 sink;
__u32 misses;

/* The task and cgroup cases' state, see obj_cases below. */
int target_pid;
__u64 obj_ns[OC_NR];
__u32 obj_runs;

/* The fixed cost of one test_run iteration, subtracted from every case. */
SEC("tc")
int empty(struct __sk_buff *ctx)
{
	return 0;
}

/* The loop alone: what every per-op figure below includes. */
SEC("tc")
int loop(struct __sk_buff *ctx)
{
	int i;

	for (i = 0; i < BENCH_OPS; i++)
		barrier();
	return 0;
}

/*
 * The bare atomic of the xchg case lives in a map of its own, without
 * special fields, so it also runs on a kernel that refuses kptrs.
 */
struct atom {
	__u64 word;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, int);
	__type(value, struct atom);
} atom SEC(".maps");

/* The same two exchanges as xchg_kptr, as bare BPF_XCHG instructions. */
SEC("tc")
int xchg_atomic(struct __sk_buff *ctx)
{
	struct atom *a;
	int key = 0, i;
	__u64 v;

	a = bpf_map_lookup_elem(&atom, &key);
	if (!a)
		return 1;
	for (i = 0; i < BENCH_OPS; i++) {
		v = __sync_lock_test_and_set(&a->word, 0);
		if (!v) {
			misses++;
			continue;
		}
		v = __sync_lock_test_and_set(&a->word, v);
		if (v)
			misses++;
	}
	return 0;
}

/* The test object from a fresh acquire per use: what a cached kptr saves. */
SEC("tc")
int acquire_release(struct __sk_buff *ctx)
{
	struct prog_test_ref_kfunc *p;
	unsigned long sp = 0;
	__u64 acc = 0;
	int i;

	for (i = 0; i < BENCH_OPS; i++) {
		p = bpf_kfunc_call_test_acquire(&sp);
		if (!p) {
			misses++;
			continue;
		}
		acc += p->a;
		bpf_kfunc_call_test_release(p);
	}
	sink += acc;
	return 0;
}

#ifdef BENCH_KPTRS
/* A map slot holding a reference to the test object, stored by setup_store. */
struct cached {
	struct prog_test_ref_kfunc KPTR_REF *owned;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, int);
	__type(value, struct cached);
} cache SEC(".maps");

static __always_inline struct cached *cache_slot(void)
{
	int key = 0;

	return bpf_map_lookup_elem(&cache, &key);
}

/* Not measured: move a fresh reference into the slot before the cases run. */
SEC("classifier")
int setup_store(struct __sk_buff *ctx)
{
	struct prog_test_ref_kfunc *p, *old;
	struct cached *e = cache_slot();
	unsigned long sp = 0;

	if (!e)
		return 1;
	p = bpf_kfunc_call_test_acquire(&sp);
	if (!p)
		return 2;
	old = bpf_kptr_xchg(&e->owned, p);
	if (old)
		bpf_kfunc_call_test_release(old);
	return 0;
}

#ifdef BENCH_KPTR_GET
/* A new reference from the slot with kptr_get, read a field, release. */
SEC("classifier")
int cached_get(struct __sk_buff *ctx)
{
	struct cached *e = cache_slot();
	struct prog_test_ref_kfunc *p;
	__u64 acc = 0;
	int i;

	if (!e)
		return 1;
	for (i = 0; i < BENCH_OPS; i++) {
		p = bpf_kfunc_call_test_kptr_get(&e->owned, 0, 0);
		if (!p) {
			misses++;
			continue;
		}
		acc += p->a;
		bpf_kfunc_call_test_release(p);
	}
	sink += acc;
	return 0;
}
#endif

/*
 * The cached read: a plain load of the slot (untrusted, PROBE_MEM in 6.1;
 * RCU-protected in 6.12), NULL check, a field read.
 */
SEC("classifier")
int cached_load(struct __sk_buff *ctx)
{
	struct cached *e = cache_slot();
	struct prog_test_ref_kfunc *p;
	__u64 acc = 0;
	int i;

	if (!e)
		return 1;
	for (i = 0; i < BENCH_OPS; i++) {
		p = e->owned;
		if (p)
			acc += p->a;
		else
			misses++;
		barrier();
	}
	sink += acc;
	return 0;
}

/* Take the reference out of the slot and put it back. */
SEC("classifier")
int xchg_kptr(struct __sk_buff *ctx)
{
	struct cached *e = cache_slot();
	struct prog_test_ref_kfunc *p;
	int i;

	if (!e)
		return 1;
	for (i = 0; i < BENCH_OPS; i++) {
		p = bpf_kptr_xchg(&e->owned, NULL);
		if (!p) {
			misses++;
			continue;
		}
		p = bpf_kptr_xchg(&e->owned, p);
		/* Only another CPU could have filled the slot meanwhile. */
		if (p) {
			misses++;
			bpf_kfunc_call_test_release(p);
		}
	}
	return 0;
}
#endif /* BENCH_KPTRS */

/*
 * Map values of the same 72 bytes with 0, 1, 2, ..., 8 unreferenced kptrs
 * and one referenced kptr, so only the special fields differ; plus a value
 * with a timer, 8 kptrs and a spin lock, the most special fields a value
 * may have. d is the plain field the lookups read.
 */
#define K(i) struct prog_test_ref_kfunc KPTR_UNREF *k##i;

struct val_k0 { __u64 x[8]; __u64 d; };
struct val_k1 { K(0) __u64 x[7]; __u64 d; };
struct val_k2 { K(0) K(1) __u64 x[6]; __u64 d; };
struct val_k3 { K(0) K(1) K(2) __u64 x[5]; __u64 d; };
struct val_k4 { K(0) K(1) K(2) K(3) __u64 x[4]; __u64 d; };
struct val_k5 { K(0) K(1) K(2) K(3) K(4) __u64 x[3]; __u64 d; };
struct val_k6 { K(0) K(1) K(2) K(3) K(4) K(5) __u64 x[2]; __u64 d; };
struct val_k7 { K(0) K(1) K(2) K(3) K(4) K(5) K(6) __u64 x[1]; __u64 d; };
struct val_k8 { K(0) K(1) K(2) K(3) K(4) K(5) K(6) K(7) __u64 d; };

struct val_ref1 {
	struct prog_test_ref_kfunc KPTR_REF *r0;
	__u64 x[7];
	__u64 d;
};

/*
 * Every member 8-byte aligned: upstream 6.1 silently ignores all kptrs of
 * a value that has a member at any other offset (its kptr search checks
 * each member's alignment), so a 4-byte lock first would make 6.1 measure
 * a value without kptrs. The lock goes last, the padding is implicit.
 */
struct val_mix {
	struct bpf_timer timer;
	K(0) K(1) K(2) K(3) K(4) K(5) K(6) K(7)
	__u64 d;
	struct bpf_spin_lock lock;
};

/*
 * One map and its programs per map kind and value. Key 0 exists in every
 * map before the cases run (user space creates it in the hash maps), so:
 *   update  replaces the element (hash with prealloc: takes a spare element,
 *           copies the value into it and frees the old one, the path where
 *           copy_map_value() and the release of special fields run)
 *   lookup  finds it and reads a plain field
 *   delete  deletes it and inserts it again (a delete alone cannot repeat)
 * 64 entries, so that an LRU map never has to evict to insert.
 */
#define MAP_DEF(kind, TYPE, flags, V)					\
struct {								\
	__uint(type, BPF_MAP_TYPE_##TYPE);				\
	__uint(map_flags, flags);					\
	__uint(max_entries, 64);					\
	__type(key, int);						\
	__type(value, struct val_##V);					\
} kind##_##V SEC(".maps");

#define PROG_UPDATE(sec, kind, V)					\
SEC(sec)								\
int kind##_update_##V(struct __sk_buff *ctx)				\
{									\
	struct val_##V val = {};					\
	int key = 0, i;							\
									\
	for (i = 0; i < BENCH_OPS; i++) {				\
		val.d = i;						\
		if (bpf_map_update_elem(&kind##_##V, &key, &val, BPF_ANY)) \
			misses++;					\
	}								\
	return 0;							\
}

#define PROG_LOOKUP(sec, kind, V)					\
SEC(sec)								\
int kind##_lookup_##V(struct __sk_buff *ctx)				\
{									\
	struct val_##V *v;						\
	int key = 0, i;							\
	__u64 acc = 0;							\
									\
	for (i = 0; i < BENCH_OPS; i++) {				\
		v = bpf_map_lookup_elem(&kind##_##V, &key);		\
		if (!v) {						\
			misses++;					\
			continue;					\
		}							\
		acc += v->d;						\
	}								\
	sink += acc;							\
	return 0;							\
}

#define PROG_DELETE(sec, kind, V)					\
SEC(sec)								\
int kind##_delete_##V(struct __sk_buff *ctx)				\
{									\
	struct val_##V val = {};					\
	int key = 0, i;							\
									\
	for (i = 0; i < BENCH_OPS; i++) {				\
		if (bpf_map_delete_elem(&kind##_##V, &key))		\
			misses++;					\
		if (bpf_map_update_elem(&kind##_##V, &key, &val, BPF_NOEXIST)) \
			misses++;					\
	}								\
	return 0;							\
}

/* Arrays: update and lookup; hash maps: update, lookup and delete. */
#define ARRAY_CASES(sec, kind, TYPE, V)					\
	MAP_DEF(kind, TYPE, 0, V)					\
	PROG_UPDATE(sec, kind, V)					\
	PROG_LOOKUP(sec, kind, V)

#define HASH_CASES(sec, kind, TYPE, flags, V)				\
	MAP_DEF(kind, TYPE, flags, V)					\
	PROG_UPDATE(sec, kind, V)					\
	PROG_LOOKUP(sec, kind, V)					\
	PROG_DELETE(sec, kind, V)

/* Maps without special fields: every map kind. */
ARRAY_CASES("tc", array, ARRAY, k0)
ARRAY_CASES("tc", pcpu_array, PERCPU_ARRAY, k0)
HASH_CASES("tc", hash, HASH, 0, k0)
HASH_CASES("tc", hash_np, HASH, BPF_F_NO_PREALLOC, k0)
HASH_CASES("tc", lru, LRU_HASH, 0, k0)
HASH_CASES("tc", pcpu_hash, PERCPU_HASH, 0, k0)
HASH_CASES("tc", lru_pcpu, LRU_PERCPU_HASH, 0, k0)

/*
 * Local storage: a socket's, the only one a tc program reaches (test_run
 * gives its skb a socket of its own). Lookup is a get of the existing
 * storage; delete deletes it and creates it again with a get.
 */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct val_k0);
} sk_storage_k0 SEC(".maps");

static __always_inline struct bpf_sock *skb_sock(struct __sk_buff *ctx)
{
	struct bpf_sock *sk = ctx->sk;

	if (!sk)
		return NULL;
	/* the storage exists before the loop: created once per test_run */
	if (!bpf_sk_storage_get(&sk_storage_k0, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE))
		return NULL;
	return sk;
}

SEC("tc")
int sk_storage_lookup_k0(struct __sk_buff *ctx)
{
	struct bpf_sock *sk = skb_sock(ctx);
	struct val_k0 *v;
	__u64 acc = 0;
	int i;

	if (!sk)
		return 1;
	for (i = 0; i < BENCH_OPS; i++) {
		v = bpf_sk_storage_get(&sk_storage_k0, sk, NULL, 0);
		if (!v) {
			misses++;
			continue;
		}
		acc += v->d;
	}
	sink += acc;
	return 0;
}

SEC("tc")
int sk_storage_delete_k0(struct __sk_buff *ctx)
{
	struct bpf_sock *sk = skb_sock(ctx);
	int i;

	if (!sk)
		return 1;
	for (i = 0; i < BENCH_OPS; i++) {
		if (bpf_sk_storage_delete(&sk_storage_k0, sk))
			misses++;
		if (!bpf_sk_storage_get(&sk_storage_k0, sk, NULL,
					BPF_SK_STORAGE_GET_F_CREATE))
			misses++;
	}
	return 0;
}

#ifdef BENCH_KPTRS
/*
 * Maps with kptr fields, in every map kind upstream 6.1 allows them in
 * (array, percpu array, hash, LRU hash); 6.1 allows no spin lock in LRU
 * maps, so no mix value there.
 */
#define KPTR_VALUES(CASES, ...)						\
	CASES(__VA_ARGS__, k1) CASES(__VA_ARGS__, k2)			\
	CASES(__VA_ARGS__, k4) CASES(__VA_ARGS__, k8)			\
	CASES(__VA_ARGS__, ref1)

KPTR_VALUES(ARRAY_CASES, "classifier", array, ARRAY)
KPTR_VALUES(ARRAY_CASES, "classifier", pcpu_array, PERCPU_ARRAY)
KPTR_VALUES(HASH_CASES, "classifier", hash, HASH, 0)
KPTR_VALUES(HASH_CASES, "classifier", hash_np, HASH, BPF_F_NO_PREALLOC)
KPTR_VALUES(HASH_CASES, "classifier", lru, LRU_HASH, 0)
ARRAY_CASES("classifier", array, ARRAY, mix)
HASH_CASES("classifier", hash, HASH, 0, mix)
HASH_CASES("classifier", hash_np, HASH, BPF_F_NO_PREALLOC, mix)

/* The scale in kptr fields, 0 to 8: the counts the targets skip. */
ARRAY_CASES("classifier", array, ARRAY, k3)
ARRAY_CASES("classifier", array, ARRAY, k5)
ARRAY_CASES("classifier", array, ARRAY, k6)
ARRAY_CASES("classifier", array, ARRAY, k7)
HASH_CASES("classifier", hash, HASH, 0, k3)
HASH_CASES("classifier", hash, HASH, 0, k5)
HASH_CASES("classifier", hash, HASH, 0, k6)
HASH_CASES("classifier", hash, HASH, 0, k7)
#endif /* BENCH_KPTRS */

#ifdef BENCH_TASK_KFUNCS
/*
 * Task and cgroup kptrs. A tracing program has trusted ones: the arguments
 * of tp_btf/cgroup_attach_task, which user space fires by moving itself
 * between two cgroups. Each firing stores the task and cgroup in the slots
 * once, then times each case over BENCH_OPS operations with the kernel's
 * clock (instructions in instruction mode), the results going to obj_ns.
 */
extern struct task_struct *bpf_task_acquire(struct task_struct *p) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;
extern struct cgroup *bpf_cgroup_acquire(struct cgroup *cgrp) __ksym;
extern void bpf_cgroup_release(struct cgroup *cgrp) __ksym;
#ifdef BENCH_KPTR_GET
extern struct task_struct *bpf_task_kptr_get(struct task_struct **pp) __ksym;
extern struct cgroup *bpf_cgroup_kptr_get(struct cgroup **cgrpp) __ksym;
#endif

struct obj_slots {
	struct task_struct KPTR_REF *task;
	struct cgroup KPTR_REF *cgrp;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, int);
	__type(value, struct obj_slots);
} objs SEC(".maps");

SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(obj_cases, struct cgroup *dst_cgrp, const char *path,
	     struct task_struct *task, bool threadgroup)
{
	struct task_struct *t;
	struct cgroup *c;
	struct obj_slots *s;
	__u64 t0, acc = 0;
	int key = 0, i;

	if (task->pid != target_pid)
		return 0;
	s = bpf_map_lookup_elem(&objs, &key);
	if (!s)
		return 0;
	t = bpf_task_acquire(task);
	if (!t)
		return 0;
	t = bpf_kptr_xchg(&s->task, t);
	if (t)
		bpf_task_release(t);
	c = bpf_cgroup_acquire(dst_cgrp);
	if (!c)
		return 0;
	c = bpf_kptr_xchg(&s->cgrp, c);
	if (c)
		bpf_cgroup_release(c);

	t0 = bpf_ktime_get_ns();
	obj_ns[OC_EMPTY] = bpf_ktime_get_ns() - t0;

	t0 = bpf_ktime_get_ns();
	for (i = 0; i < BENCH_OPS; i++) {
		t = s->task;
		if (t)
			acc += t->pid;
		else
			misses++;
		barrier();
	}
	obj_ns[OC_TASK_CACHED_LOAD] = bpf_ktime_get_ns() - t0;

	t0 = bpf_ktime_get_ns();
	for (i = 0; i < BENCH_OPS; i++) {
		t = bpf_task_acquire(task);
		if (!t) {
			misses++;
			continue;
		}
		acc += t->pid;
		bpf_task_release(t);
	}
	obj_ns[OC_TASK_ACQUIRE_RELEASE] = bpf_ktime_get_ns() - t0;

#ifdef BENCH_KPTR_GET
	t0 = bpf_ktime_get_ns();
	for (i = 0; i < BENCH_OPS; i++) {
		t = bpf_task_kptr_get(&s->task);
		if (!t) {
			misses++;
			continue;
		}
		acc += t->pid;
		bpf_task_release(t);
	}
	obj_ns[OC_TASK_CACHED_GET] = bpf_ktime_get_ns() - t0;
#endif

	t0 = bpf_ktime_get_ns();
	for (i = 0; i < BENCH_OPS; i++) {
		c = s->cgrp;
		if (c)
			acc += c->level;
		else
			misses++;
		barrier();
	}
	obj_ns[OC_CGROUP_CACHED_LOAD] = bpf_ktime_get_ns() - t0;

	t0 = bpf_ktime_get_ns();
	for (i = 0; i < BENCH_OPS; i++) {
		c = bpf_cgroup_acquire(dst_cgrp);
		if (!c) {
			misses++;
			continue;
		}
		acc += c->level;
		bpf_cgroup_release(c);
	}
	obj_ns[OC_CGROUP_ACQUIRE_RELEASE] = bpf_ktime_get_ns() - t0;

#ifdef BENCH_KPTR_GET
	t0 = bpf_ktime_get_ns();
	for (i = 0; i < BENCH_OPS; i++) {
		c = bpf_cgroup_kptr_get(&s->cgrp);
		if (!c) {
			misses++;
			continue;
		}
		acc += c->level;
		bpf_cgroup_release(c);
	}
	obj_ns[OC_CGROUP_CACHED_GET] = bpf_ktime_get_ns() - t0;
#endif
	sink += acc;
	obj_runs++;
	return 0;
}
#endif /* BENCH_TASK_KFUNCS */

char _license[] SEC("license") = "GPL";
