// SPDX-License-Identifier: GPL-2.0
/*
 * Programs that are only valid on a kernel with kptr support. The baseline
 * kernel must reject each of them, with the message no_kptr.c expects:
 * there, a kptr-tagged field is plain data and bpf_kptr_xchg() is unknown.
 * On a kernel with kptrs (upstream, ours) all of them load.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>

/* The tags themselves, not libbpf's macros: the baseline's libbpf lacks them. */
#define tag_kptr __attribute__((btf_type_tag("kptr")))
#define tag_kptr_ref __attribute__((btf_type_tag("kptr_ref")))

/* BPF_FUNC_kptr_xchg keeps its UAPI number in the baseline. */
static void *(*kptr_xchg)(void *slot, void *ptr) = (void *)BPF_FUNC_kptr_xchg;

struct slots {
	struct prog_test_ref_kfunc tag_kptr *unref;
	struct prog_test_ref_kfunc tag_kptr_ref *ref;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, int);
	__type(value, struct slots);
} slots_map SEC(".maps");

extern struct prog_test_ref_kfunc *
bpf_kfunc_call_test_acquire(unsigned long *scalar_ptr) __ksym;
extern void bpf_kfunc_call_test_release(struct prog_test_ref_kfunc *p) __ksym;

int seen;

static struct slots *slots(void)
{
	int key = 0;

	return bpf_map_lookup_elem(&slots_map, &key);
}

/* Store into a kptr field, load it back and dereference it. */
SEC("tc")
int unref_store_load(struct __sk_buff *ctx)
{
	struct prog_test_ref_kfunc *p, *q;
	struct slots *s = slots();
	unsigned long sp = 0;

	if (!s)
		return 0;
	p = bpf_kfunc_call_test_acquire(&sp);
	if (!p)
		return 0;
	s->unref = p;
	bpf_kfunc_call_test_release(p);
	q = s->unref;
	if (q)
		seen = q->a;
	return 0;
}

/* Hand a reference to a kptr_ref field with bpf_kptr_xchg(). */
SEC("tc")
int ref_xchg(struct __sk_buff *ctx)
{
	struct prog_test_ref_kfunc *p;
	struct slots *s = slots();
	unsigned long sp = 0;

	if (!s)
		return 0;
	p = bpf_kfunc_call_test_acquire(&sp);
	if (!p)
		return 0;
	p = kptr_xchg(&s->ref, p);
	if (p)
		bpf_kfunc_call_test_release(p);
	return 0;
}

/* Store an acquired pointer into a kptr_ref field with a plain store. */
SEC("tc")
int ref_plain_store(struct __sk_buff *ctx)
{
	struct prog_test_ref_kfunc *p;
	struct slots *s = slots();
	unsigned long sp = 0;

	if (!s)
		return 0;
	p = bpf_kfunc_call_test_acquire(&sp);
	if (!p)
		return 0;
	s->ref = p;
	return 0;
}

char _license[] SEC("license") = "GPL";
