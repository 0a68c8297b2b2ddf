// SPDX-License-Identifier: GPL-2.0
/*
 * kptr benchmark, BPF side. Every measured program is a SCHED_CLS program
 * that user space runs with BPF_PROG_TEST_RUN; each run performs BENCH_OPS
 * operations in a bounded loop, so that the per-op cost dominates the cost
 * of one test_run iteration (measured with the "empty" program and
 * subtracted by user space).
 *
 * The object is the refcounted test struct of net/bpf/test_run.c, the only
 * type with acquire, release and kptr_get kfuncs in 6.1.
 *
 * Loop bodies end with barrier() where the compiler could otherwise hoist a
 * map value load out of the loop: the cost of that load is what is measured.
 * Results go to the global sink and failed operations count in misses, so
 * nothing is optimised away and user space can tell a broken run from a
 * fast one.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>
#include "kptr_bench.h"

/* libbpf's spelling of the tags; a tree without kptrs lacks the macros. */
#ifndef __kptr
#define __kptr __attribute__((btf_type_tag("kptr")))
#endif
#ifndef __kptr_ref
#define __kptr_ref __attribute__((btf_type_tag("kptr_ref")))
#endif

#define barrier() asm volatile("" ::: "memory")

extern struct prog_test_ref_kfunc *
bpf_kfunc_call_test_acquire(unsigned long *scalar_ptr) __ksym;
extern void bpf_kfunc_call_test_release(struct prog_test_ref_kfunc *p) __ksym;
extern struct prog_test_ref_kfunc *
bpf_kfunc_call_test_kptr_get(struct prog_test_ref_kfunc **pp, int a, int b) __ksym;

__u64 sink;
__u32 misses;

/* Case 1 and 2: a map slot holding a reference, stored by setup_store. */
struct cached {
	struct prog_test_ref_kfunc __kptr_ref *owned;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, int);
	__type(value, struct cached);
} cache SEC(".maps");

/*
 * The bare atomic of case 2 lives in a map of its own, without special
 * fields, so it also runs on a kernel that refuses kptrs.
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

static __always_inline struct cached *cache_slot(void)
{
	int key = 0;

	return bpf_map_lookup_elem(&cache, &key);
}

/* Not measured: move a fresh reference into the slot before the cases run. */
SEC("tc")
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

/* 1a: a new reference from the slot with kptr_get, read a field, release. */
SEC("tc")
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

/* 1b: a plain (untrusted, PROBE_MEM) load of the same slot and a field. */
SEC("tc")
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

/* 1c: what a cached kptr replaces: acquire a fresh reference per use. */
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

/* 2: take the reference out of the slot and put it back. */
SEC("tc")
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

/* 2, reference: the same two exchanges as bare BPF_XCHG instructions. */
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

/*
 * 3: map values of the same 72 bytes with 0, 1 or 8 unreferenced kptrs and
 * one referenced kptr, so only the special fields differ; plus a value with
 * a spin lock, a timer and 8 kptrs, the most special fields a value may have.
 * d is the plain field the lookups read.
 */
struct val_k0 {
	__u64 x[8];
	__u64 d;
};

struct val_k1 {
	struct prog_test_ref_kfunc __kptr *k0;
	__u64 x[7];
	__u64 d;
};

struct val_k8 {
	struct prog_test_ref_kfunc __kptr *k0;
	struct prog_test_ref_kfunc __kptr *k1;
	struct prog_test_ref_kfunc __kptr *k2;
	struct prog_test_ref_kfunc __kptr *k3;
	struct prog_test_ref_kfunc __kptr *k4;
	struct prog_test_ref_kfunc __kptr *k5;
	struct prog_test_ref_kfunc __kptr *k6;
	struct prog_test_ref_kfunc __kptr *k7;
	__u64 d;
};

struct val_ref1 {
	struct prog_test_ref_kfunc __kptr_ref *r0;
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
	struct prog_test_ref_kfunc __kptr *k0;
	struct prog_test_ref_kfunc __kptr *k1;
	struct prog_test_ref_kfunc __kptr *k2;
	struct prog_test_ref_kfunc __kptr *k3;
	struct prog_test_ref_kfunc __kptr *k4;
	struct prog_test_ref_kfunc __kptr *k5;
	struct prog_test_ref_kfunc __kptr *k6;
	struct prog_test_ref_kfunc __kptr *k7;
	__u64 d;
	struct bpf_spin_lock lock;
};

/*
 * One map and an update and a lookup program per map type and value. Key 0
 * exists in every map before the cases run (user space creates it in the
 * hash maps), so a hash update replaces an element: with prealloc that takes
 * a spare element, copies the value into it and frees the old one, the
 * path where copy_map_value() and the freeing of special fields run.
 */
#define MAP_CASE(kind, KIND, V)						\
struct {								\
	__uint(type, BPF_MAP_TYPE_##KIND);				\
	__uint(max_entries, 1);						\
	__type(key, int);						\
	__type(value, struct val_##V);					\
} kind##_##V SEC(".maps");						\
									\
SEC("tc")								\
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
}									\
									\
SEC("tc")								\
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

MAP_CASE(array, ARRAY, k0)
MAP_CASE(array, ARRAY, k1)
MAP_CASE(array, ARRAY, k8)
MAP_CASE(array, ARRAY, ref1)
MAP_CASE(array, ARRAY, mix)
MAP_CASE(hash, HASH, k0)
MAP_CASE(hash, HASH, k1)
MAP_CASE(hash, HASH, k8)
MAP_CASE(hash, HASH, ref1)
MAP_CASE(hash, HASH, mix)

char _license[] SEC("license") = "GPL";
