// SPDX-License-Identifier: GPL-2.0
/*
 * kptr demo, BPF side: cache a kernel object in a hash map, once as an
 * unreferenced kptr (a plain pointer store, loads are untrusted) and once as
 * a referenced kptr (the map owns a reference, moved in and out only with
 * bpf_kptr_xchg()).
 *
 * The object is the refcounted test struct of net/bpf/test_run.c; its
 * acquire/release/kptr_get kfuncs are callable from SCHED_CLS programs, which
 * user space runs with BPF_PROG_TEST_RUN.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>

/* libbpf's spelling of the tags; a tree without kptrs lacks the macros. */
#ifndef __kptr
#define __kptr __attribute__((btf_type_tag("kptr")))
#define __kptr_ref __attribute__((btf_type_tag("kptr_ref")))
#endif

struct cache_entry {
	struct prog_test_ref_kfunc __kptr *seen;	/* unreferenced */
	struct prog_test_ref_kfunc __kptr_ref *owned;	/* referenced */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, int);
	__type(value, struct cache_entry);
} cache SEC(".maps");

extern struct prog_test_ref_kfunc *
bpf_kfunc_call_test_acquire(unsigned long *scalar_ptr) __ksym;
extern void bpf_kfunc_call_test_release(struct prog_test_ref_kfunc *p) __ksym;
extern struct prog_test_ref_kfunc *
bpf_kfunc_call_test_kptr_get(struct prog_test_ref_kfunc **pp, int a, int b) __ksym;

/* What the programs saw, read back by user space. */
int refs = -1;		/* the object's refcount as seen by the program */
int field_a = -1;	/* a field read through an untrusted load */
int had_old = -1;	/* whether bpf_kptr_xchg() returned a previous owner */

static struct cache_entry *entry(void)
{
	int key = 0;

	return bpf_map_lookup_elem(&cache, &key);
}

/* Acquire a reference and give it to the map; remember it unreferenced too. */
SEC("tc")
int store(struct __sk_buff *ctx)
{
	struct prog_test_ref_kfunc *p, *old;
	struct cache_entry *e = entry();
	unsigned long sp = 0;

	if (!e)
		return 1;
	p = bpf_kfunc_call_test_acquire(&sp);
	if (!p)
		return 2;
	e->seen = p;			/* plain store: no reference taken */
	old = bpf_kptr_xchg(&e->owned, p);	/* p's reference moves in */
	had_old = 0;
	if (old) {
		had_old = 1;
		bpf_kfunc_call_test_release(old);
	}
	return 0;
}

/* Read through the unreferenced kptr: a PROBE_MEM load, may be NULL. */
SEC("tc")
int peek(struct __sk_buff *ctx)
{
	struct cache_entry *e = entry();
	struct prog_test_ref_kfunc *p;

	if (!e)
		return 1;
	p = e->seen;
	if (!p)
		return 2;
	field_a = p->a;
	refs = p->cnt.refs.counter;
	return 0;
}

/* Borrow a new reference from the map slot without taking it out. */
SEC("tc")
int borrow(struct __sk_buff *ctx)
{
	struct cache_entry *e = entry();
	struct prog_test_ref_kfunc *p;

	if (!e)
		return 1;
	p = bpf_kfunc_call_test_kptr_get(&e->owned, 0, 0);
	if (!p)
		return 2;
	refs = p->cnt.refs.counter;
	bpf_kfunc_call_test_release(p);
	return 0;
}

/* Take the reference out of the map and drop it. */
SEC("tc")
int take(struct __sk_buff *ctx)
{
	struct cache_entry *e = entry();
	struct prog_test_ref_kfunc *p;

	if (!e)
		return 1;
	p = bpf_kptr_xchg(&e->owned, NULL);
	had_old = 0;
	if (p) {
		had_old = 1;
		bpf_kfunc_call_test_release(p);
	}
	return 0;
}

/* The refcount as it is outside any program: acquire, read, release. */
SEC("tc")
int count(struct __sk_buff *ctx)
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

char _license[] SEC("license") = "GPL";
