// SPDX-License-Identifier: GPL-2.0
/*
 * kptr stress test, BPF side. Programs that move references to the
 * refcounted test object of net/bpf/test_run.c in and out of map values
 * while user space (kptr_stress.c) races them from the other CPU: updates
 * and deletes elements, replaces inner maps, closes the last map fds.
 *
 * Every program and map name starts with its scenario's prefix (s1_, s2a_,
 * ..., s5_, ctl_): user space loads one scenario at a time in an object of
 * its own, so that tearing the object down frees exactly that scenario's
 * maps.
 *
 * Counters are plain globals bumped with atomic adds, as both CPUs run the
 * same programs at once.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>

/* libbpf's spelling of the tag; a tree without kptrs lacks the macros. */
#ifndef __kptr_ref
#define __kptr_ref __attribute__((btf_type_tag("kptr_ref")))
#endif

struct elem {
	struct prog_test_ref_kfunc __kptr_ref *ref;
	__u64 gen;	/* plain data: user space writes it on update */
};

extern struct prog_test_ref_kfunc *
bpf_kfunc_call_test_acquire(unsigned long *scalar_ptr) __ksym;
extern void bpf_kfunc_call_test_release(struct prog_test_ref_kfunc *p) __ksym;
/* weak: a kernel without kptrs lacks it, and should refuse each scenario's
 * programs on their own rather than the whole object, refcount reader
 * included
 */
extern struct prog_test_ref_kfunc *
bpf_kfunc_call_test_kptr_get(struct prog_test_ref_kfunc **pp, int a, int b) __ksym __weak;

/* What the programs did, read back by user space after a scenario. */
__u64 n_xchg_in;	/* references moved into a slot */
__u64 n_xchg_out;	/* slots emptied with bpf_kptr_xchg(NULL) */
__u64 n_old;		/* references that came back out of a slot, released */
__u64 n_borrow;		/* kptr_get found an object and took a reference */
__u64 n_borrow_null;	/* kptr_get found the slot empty */
__u64 n_acquire_null;	/* the acquire kfunc returned NULL */
__u64 n_update;		/* elements inserted by programs */
__u64 n_update_err;	/* ... insertions that failed (LRU full, hash full) */
__u64 n_miss;		/* lookups that found no element (deleted meanwhile) */
__u64 n_census;		/* non-empty slots counted by a census program */
__u64 s3_next_key;	/* LRU keys, never reused */
int refs = -1;		/* ctl_count: the object's refcount outside programs */

#define add(ctr) __sync_fetch_and_add(&(ctr), 1)

/* Acquire a reference and move it into the slot, releasing the previous one. */
static __always_inline void put_ref(struct elem *v)
{
	struct prog_test_ref_kfunc *p, *old;
	unsigned long sp = 0;

	p = bpf_kfunc_call_test_acquire(&sp);
	if (!p) {
		add(n_acquire_null);
		return;
	}
	old = bpf_kptr_xchg(&v->ref, p);
	add(n_xchg_in);
	if (old) {
		add(n_old);
		bpf_kfunc_call_test_release(old);
	}
}

/* Empty the slot, releasing what was in it. */
static __always_inline void take_ref(struct elem *v)
{
	struct prog_test_ref_kfunc *p;

	p = bpf_kptr_xchg(&v->ref, NULL);
	add(n_xchg_out);
	if (p) {
		add(n_old);
		bpf_kfunc_call_test_release(p);
	}
}

/* Take a reference of our own while the slot keeps its one, drop it again. */
static __always_inline void borrow_ref(struct elem *v)
{
	struct prog_test_ref_kfunc *p;

	p = bpf_kfunc_call_test_kptr_get(&v->ref, 0, 0);
	if (!p) {
		add(n_borrow_null);
		return;
	}
	add(n_borrow);
	bpf_kfunc_call_test_release(p);
}

/* Two random bits pick what to do with a slot: mostly store, sometimes not. */
static __always_inline void churn(struct elem *v, __u32 bits)
{
	switch (bits & 3) {
	case 0:
	case 1:
		put_ref(v);
		break;
	case 2:
		take_ref(v);
		break;
	default:
		borrow_ref(v);
		break;
	}
}

static long census_cb(struct bpf_map *map, const void *key, void *val, void *ctx)
{
	struct elem *v = val;

	/* a plain load of a referenced kptr: untrusted, only tested for NULL */
	if (v->ref)
		add(n_census);
	return 0;
}

/* The refcount as it is outside any program: acquire, read, release. */
SEC("tc")
int ctl_count(struct __sk_buff *ctx)
{
	struct prog_test_ref_kfunc *p;
	unsigned long sp = 0;

	p = bpf_kfunc_call_test_acquire(&sp);
	if (!p)
		return 2;
	refs = p->cnt.refs.counter - 1;
	bpf_kfunc_call_test_release(p);
	return 0;
}

/*
 * Scenario 1: both CPUs exchange references in and out of the same few
 * array slots, and borrow them with kptr_get, as fast as they can.
 */
#define S1_SLOTS 4

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, S1_SLOTS);
	__type(key, int);
	__type(value, struct elem);
} s1_slots SEC(".maps");

SEC("tc")
int s1_churn(struct __sk_buff *ctx)
{
	__u32 r = bpf_get_prandom_u32();
	struct elem *v;
	int i, key;

	/* two passes over the slots, so a run also meets its own stores */
	for (i = 0; i < 2 * S1_SLOTS; i++) {
		key = i % S1_SLOTS;
		v = bpf_map_lookup_elem(&s1_slots, &key);
		if (!v)
			return 1;
		churn(v, r >> (2 * i));
	}
	return 0;
}

SEC("tc")
int s1_census(struct __sk_buff *ctx)
{
	n_census = 0;
	bpf_for_each_map_elem(&s1_slots, census_cb, NULL, 0);
	return 0;
}

/*
 * Scenario 2: user space updates and deletes the elements of a map while a
 * program looks them up, holds a borrowed reference across the exchange,
 * and stores into elements that may have been deleted meanwhile. One map
 * type per part, so that a leak shows which one it is: 2a a preallocated
 * hash, 2b a BPF_F_NO_PREALLOC hash, 2c an array (updates only).
 */
#define S2_KEYS 16

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, S2_KEYS);
	__type(key, int);
	__type(value, struct elem);
} s2a_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, S2_KEYS);
	__type(key, int);
	__type(value, struct elem);
} s2b_nopre SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, S2_KEYS);
	__type(key, int);
	__type(value, struct elem);
} s2c_arr SEC(".maps");

static __always_inline void s2_change(struct elem *v, __u32 r)
{
	put_ref(v);
	if (r & 1)
		take_ref(v);
}

static __always_inline void s2_hold(void *map, bool insert)
{
	__u32 r = bpf_get_prandom_u32();
	struct prog_test_ref_kfunc *held;
	struct elem zero = {}, *v;
	int key = r % S2_KEYS;

	v = bpf_map_lookup_elem(map, &key);
	if (!v && insert) {
		/* the value's kptr is never copied in: it stays empty */
		if (bpf_map_update_elem(map, &key, &zero, BPF_NOEXIST))
			add(n_update_err);
		else
			add(n_update);
		v = bpf_map_lookup_elem(map, &key);
	}
	if (!v) {
		add(n_miss);
		return;
	}
	/* keep a reference of our own while the slot changes under us; the
	 * NULL test is done once, as the verifier does not carry a non-NULL
	 * kfunc pointer through a second one
	 */
	held = bpf_kfunc_call_test_kptr_get(&v->ref, 0, 0);
	if (!held) {
		add(n_borrow_null);
		s2_change(v, r >> 8);
		return;
	}
	add(n_borrow);
	s2_change(v, r >> 8);
	bpf_kfunc_call_test_release(held);
}

SEC("tc")
int s2a_hold(struct __sk_buff *ctx)
{
	s2_hold(&s2a_hash, true);
	return 0;
}

SEC("tc")
int s2a_census(struct __sk_buff *ctx)
{
	n_census = 0;
	bpf_for_each_map_elem(&s2a_hash, census_cb, NULL, 0);
	return 0;
}

SEC("tc")
int s2b_hold(struct __sk_buff *ctx)
{
	s2_hold(&s2b_nopre, true);
	return 0;
}

SEC("tc")
int s2b_census(struct __sk_buff *ctx)
{
	n_census = 0;
	bpf_for_each_map_elem(&s2b_nopre, census_cb, NULL, 0);
	return 0;
}

SEC("tc")
int s2c_hold(struct __sk_buff *ctx)
{
	s2_hold(&s2c_arr, false);
	return 0;
}

SEC("tc")
int s2c_census(struct __sk_buff *ctx)
{
	n_census = 0;
	bpf_for_each_map_elem(&s2c_arr, census_cb, NULL, 0);
	return 0;
}

/*
 * Scenario 3: a small LRU hash, both CPUs inserting keys never seen before,
 * so every insertion evicts an element that holds a reference, while the
 * programs also work on older keys that are about to be evicted.
 */
#define S3_ENTRIES 32

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, S3_ENTRIES);
	__type(key, __u64);
	__type(value, struct elem);
} s3_lru SEC(".maps");

SEC("tc")
int s3_storm(struct __sk_buff *ctx)
{
	__u32 r = bpf_get_prandom_u32();
	struct elem zero = {}, *v;
	__u64 key, old_key;

	key = __sync_fetch_and_add(&s3_next_key, 1);
	if (bpf_map_update_elem(&s3_lru, &key, &zero, BPF_NOEXIST)) {
		add(n_update_err);
	} else {
		add(n_update);
		v = bpf_map_lookup_elem(&s3_lru, &key);
		/* the other CPU may have evicted it already */
		if (v)
			put_ref(v);
		else
			add(n_miss);
	}

	old_key = key - 1 - (r % (2 * S3_ENTRIES));
	v = bpf_map_lookup_elem(&s3_lru, &old_key);
	if (v)
		churn(v, r >> 8);
	else
		add(n_miss);
	return 0;
}

SEC("tc")
int s3_census(struct __sk_buff *ctx)
{
	n_census = 0;
	bpf_for_each_map_elem(&s3_lru, census_cb, NULL, 0);
	return 0;
}

/*
 * Scenario 4: map-in-map. User space keeps replacing the inner maps with
 * fresh ones (and deleting the hash outer's entries) while the program
 * stores references into whatever inner map it found.
 */
#define S4_OUTER 4
#define S4_INNER_ARR 4
#define S4_INNER_HASH 8

struct s4_inner_arr {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, S4_INNER_ARR);
	__type(key, int);
	__type(value, struct elem);
};

struct s4_inner_hash {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, S4_INNER_HASH);
	__type(key, int);
	__type(value, struct elem);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, S4_OUTER);
	__type(key, int);
	__array(values, struct s4_inner_arr);
} s4_outer_arr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, S4_OUTER);
	__type(key, int);
	__array(values, struct s4_inner_hash);
} s4_outer_hash SEC(".maps");

SEC("tc")
int s4_store(struct __sk_buff *ctx)
{
	__u32 r = bpf_get_prandom_u32();
	int outer_key = r % S4_OUTER, key, i;
	struct elem zero = {}, *v;
	void *inner;

	inner = bpf_map_lookup_elem(&s4_outer_arr, &outer_key);
	if (inner) {
		for (i = 0; i < S4_INNER_ARR; i++) {
			key = i;
			v = bpf_map_lookup_elem(inner, &key);
			if (!v)
				return 1;
			churn(v, r >> (2 * i + 4));
		}
	} else {
		add(n_miss);
	}

	inner = bpf_map_lookup_elem(&s4_outer_hash, &outer_key);
	if (!inner) {
		add(n_miss);
		return 0;
	}
	key = (r >> 16) % S4_INNER_HASH;
	v = bpf_map_lookup_elem(inner, &key);
	if (!v) {
		if (bpf_map_update_elem(inner, &key, &zero, BPF_NOEXIST))
			add(n_update_err);
		else
			add(n_update);
		v = bpf_map_lookup_elem(inner, &key);
	}
	if (v)
		put_ref(v);
	else
		add(n_miss);
	return 0;
}

/*
 * Scenario 5: user space drops every fd of these maps, then of the
 * programs, while both CPUs keep running s5_store: the maps are freed,
 * references inside, once the last run is over.
 */
#define S5_KEYS 8

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, S5_KEYS);
	__type(key, int);
	__type(value, struct elem);
} s5_arr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, S5_KEYS);
	__type(key, int);
	__type(value, struct elem);
} s5_pcpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, S5_KEYS);
	__type(key, int);
	__type(value, struct elem);
} s5_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, S5_KEYS);
	__type(key, int);
	__type(value, struct elem);
} s5_nopre SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, S5_KEYS);
	__type(key, int);
	__type(value, struct elem);
} s5_lru SEC(".maps");

static __always_inline void s5_one(void *map, int key, __u32 r, bool insert)
{
	struct elem zero = {}, *v;

	v = bpf_map_lookup_elem(map, &key);
	if (!v && insert) {
		if (bpf_map_update_elem(map, &key, &zero, BPF_NOEXIST))
			add(n_update_err);
		else
			add(n_update);
		v = bpf_map_lookup_elem(map, &key);
	}
	if (v)
		churn(v, r);
	else
		add(n_miss);
}

SEC("tc")
int s5_store(struct __sk_buff *ctx)
{
	__u32 r = bpf_get_prandom_u32();
	int key = r % S5_KEYS;

	/* stores twice as often as it empties: the maps fill up */
	s5_one(&s5_arr, key, r >> 4, false);
	s5_one(&s5_pcpu, key, r >> 6, false);
	s5_one(&s5_hash, key, r >> 8, true);
	s5_one(&s5_nopre, key, r >> 10, true);
	/* an LRU key range twice its size: it also evicts */
	s5_one(&s5_lru, r % (2 * S5_KEYS), r >> 12, true);
	return 0;
}

char _license[] SEC("license") = "GPL";
