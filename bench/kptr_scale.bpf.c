// SPDX-License-Identifier: GPL-2.0
/*
 * kptr benchmark, BPF side of the scale table: how the cost of an
 * operation grows with the value size and the hash map's size, and how the
 * cost of freeing a map grows with the references its kptrs hold. A
 * separate object from kptr_bench.bpf.c, as its big maps (up to a million
 * elements) would otherwise be created again at each of that object's timed
 * loads. Compiled per kernel with the same flags (see kptr_bench.bpf.c).
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "kptr_bench.h"

#ifdef BENCH_KPTR_612
#define KPTR_REF __attribute__((btf_type_tag("kptr")))
#else
#define KPTR_REF __attribute__((btf_type_tag("kptr_ref")))
#endif

__u64 sink;
__u32 misses;

/* The map free cases' state, see fill_refs and free_enter below. */
__u32 fill_count;
long filled;
__u64 free_map_name;	/* the map's name's first 8 bytes */
__u64 free_start, free_ns;

/*
 * Value size: an update copies the value from a source map value (a
 * program's stack is 512 bytes, too small for the 4 KiB value), into an
 * array and a preallocated hash map of 64 entries, key 0 existing.
 */
struct src_val {
	__u8 b[4096];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, int);
	__type(value, struct src_val);
} src SEC(".maps");

/* BENCH_OPS updates of key 0 of MAP with the source value. */
static __always_inline int update_from_src(void *map)
{
	int key = 0, i;
	void *v = bpf_map_lookup_elem(&src, &key);

	if (!v)
		return 1;
	for (i = 0; i < BENCH_OPS; i++)
		if (bpf_map_update_elem(map, &key, v, BPF_ANY))
			misses++;
	return 0;
}

#define VSIZE_CASES(n)							\
struct val_v##n { __u8 b[n]; };						\
struct {								\
	__uint(type, BPF_MAP_TYPE_ARRAY);				\
	__uint(max_entries, 64);					\
	__type(key, int);						\
	__type(value, struct val_v##n);					\
} array_v##n SEC(".maps");						\
struct {								\
	__uint(type, BPF_MAP_TYPE_HASH);				\
	__uint(max_entries, 64);					\
	__type(key, int);						\
	__type(value, struct val_v##n);					\
} hash_v##n SEC(".maps");						\
									\
SEC("tc")								\
int array_update_v##n(struct __sk_buff *ctx)				\
{									\
	return update_from_src(&array_v##n);				\
}									\
									\
SEC("tc")								\
int hash_update_v##n(struct __sk_buff *ctx)				\
{									\
	return update_from_src(&hash_v##n);				\
}

VSIZE_CASES(8)
VSIZE_CASES(64)
VSIZE_CASES(512)
VSIZE_CASES(4096)

/*
 * Hash map size: preallocated hash maps of 1 to 1M elements, filled by a
 * program (bpf_loop) before the cases run; the cases look up and update
 * BENCH_OPS keys spread over the map (the key's computation, a multiply
 * and a modulo, is part of each op, in every size alike).
 */
struct hsize_ctx {
	__u32 n;
};

#define HSIZE_CASES(name, N)						\
struct {								\
	__uint(type, BPF_MAP_TYPE_HASH);				\
	__uint(max_entries, N);						\
	__type(key, __u32);						\
	__type(value, __u64);						\
} hsize_##name SEC(".maps");						\
									\
static long fill_one_##name(__u32 i, void *data)			\
{									\
	__u64 v = i;							\
									\
	if (bpf_map_update_elem(&hsize_##name, &i, &v, BPF_ANY))	\
		misses++;						\
	return 0;							\
}									\
									\
SEC("tc")								\
int fill_hsize_##name(struct __sk_buff *ctx)					\
{									\
	bpf_loop(N, fill_one_##name, NULL, 0);				\
	return 0;							\
}									\
									\
SEC("tc")								\
int hsize_lookup_##name(struct __sk_buff *ctx)				\
{									\
	__u64 acc = 0, *v;						\
	__u32 i, key;							\
									\
	for (i = 0; i < BENCH_OPS; i++) {				\
		key = (i * 2654435761u) % N;				\
		v = bpf_map_lookup_elem(&hsize_##name, &key);		\
		if (!v) {						\
			misses++;					\
			continue;					\
		}							\
		acc += *v;						\
	}								\
	sink += acc;							\
	return 0;							\
}									\
									\
SEC("tc")								\
int hsize_update_##name(struct __sk_buff *ctx)				\
{									\
	__u32 i, key;							\
	__u64 v;							\
									\
	for (i = 0; i < BENCH_OPS; i++) {				\
		key = (i * 2654435761u) % N;				\
		v = i;							\
		if (bpf_map_update_elem(&hsize_##name, &key, &v, BPF_EXIST)) \
			misses++;					\
	}								\
	return 0;							\
}

HSIZE_CASES(1, 1)
HSIZE_CASES(1k, 1000)
HSIZE_CASES(64k, 65536)
HSIZE_CASES(1m, 1000000)

#ifdef BENCH_KPTRS
/*
 * Map free with N references held: an array of N referenced kptrs to the
 * test object, created by user space as the inner map of outer (so that
 * no program holds it and the map goes when user space lets go), filled
 * by fill_refs, then freed. fentry/fexit on bpf_map_free_deferred, the
 * work that frees a map and runs the kptrs' destructor for each element,
 * time the free of the map named in free_map_name.
 */
extern struct prog_test_ref_kfunc *
bpf_kfunc_call_test_acquire(unsigned long *scalar_ptr) __ksym;
extern void bpf_kfunc_call_test_release(struct prog_test_ref_kfunc *p) __ksym;

struct ref_slot {
	struct prog_test_ref_kfunc KPTR_REF *p;
};

/* BPF_F_INNER_MAP: inner arrays of any size fit the template */
struct ref_array {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP);
	__uint(max_entries, 1);
	__type(key, int);
	__type(value, struct ref_slot);
};

/* the template as a map of its own too: it makes clang emit ref_slot's
 * full BTF, which the inner map definition alone leaves a forward
 */
struct ref_array ref_template SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, int);
	__array(values, struct ref_array);
} outer SEC(".maps");

static long fill_ref(__u32 i, void *data)
{
	struct prog_test_ref_kfunc *p;
	struct ref_slot *s;
	unsigned long sp = 0;
	void *inner;
	int key = 0;

	inner = bpf_map_lookup_elem(&outer, &key);
	if (!inner)
		return 1;
	s = bpf_map_lookup_elem(inner, &i);
	if (!s)
		return 1;
	p = bpf_kfunc_call_test_acquire(&sp);
	if (!p)
		return 1;
	p = bpf_kptr_xchg(&s->p, p);
	if (p)
		bpf_kfunc_call_test_release(p);
	return 0;
}

SEC("tc")
int fill_refs(struct __sk_buff *ctx)
{
	filled = bpf_loop(fill_count, fill_ref, NULL, 0);
	return 0;
}

/* By name: the map's id is gone (0) by the time its free work runs. */
SEC("fentry/bpf_map_free_deferred")
int BPF_PROG(free_enter, struct work_struct *work)
{
	struct bpf_map *map = (void *)work - __builtin_offsetof(struct bpf_map, work);
	__u64 name = 0;

	bpf_probe_read_kernel(&name, sizeof(name), map->name);
	if (free_map_name && name == free_map_name)
		free_start = bpf_ktime_get_ns();
	return 0;
}

SEC("fexit/bpf_map_free_deferred")
int BPF_PROG(free_exit, struct work_struct *work)
{
	if (free_start) {
		free_ns = bpf_ktime_get_ns() - free_start;
		free_start = 0;
	}
	return 0;
}
#endif /* BENCH_KPTRS */

char _license[] SEC("license") = "GPL";
