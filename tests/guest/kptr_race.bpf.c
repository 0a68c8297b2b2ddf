// SPDX-License-Identifier: GPL-2.0
/*
 * kptr race test, BPF side. Real kernel objects in map slots, raced on both
 * CPUs: programs take new references out of the slots (kptr_get) while
 * others take the objects out and drop them, and the kernel keeps putting
 * fresh ones in (a forked child, a new cgroup) and retiring the old ones
 * (the child exits and is reaped, the cgroup is removed), so that the last
 * reference to an object is often the one a slot held.
 *
 * The events that must never happen are counted: a reference got from a
 * slot to a task whose rcu_users then reads as no reference at all, or as a
 * number no real count reaches, or to a cgroup whose level is not the test
 * cgroups' one.
 *
 * The plain_ programs and maps churn maps that have no kptrs at all, whose
 * elements are freed after RCU grace periods: their callbacks must not need
 * the map, which may be gone by then. The watch_ programs, loaded once for
 * the whole scenario, count what must never happen there and how often the
 * race was on.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#ifndef __kptr_ref
#define __kptr_ref __attribute__((btf_type_tag("kptr_ref")))
#endif

char _license[] SEC("license") = "GPL";

/* weak: a kernel without them refuses the programs, not the object */
extern struct task_struct *bpf_task_acquire(struct task_struct *p) __ksym __weak;
extern struct task_struct *bpf_task_kptr_get(struct task_struct **pp) __ksym __weak;
extern void bpf_task_release(struct task_struct *p) __ksym __weak;
extern struct cgroup *bpf_cgroup_acquire(struct cgroup *c) __ksym __weak;
extern struct cgroup *bpf_cgroup_kptr_get(struct cgroup **pp) __ksym __weak;
extern void bpf_cgroup_release(struct cgroup *c) __ksym __weak;

/* few slots, rarely emptied: the programs on the two CPUs often meet on a
 * slot whose object is being dropped
 */
#define NSLOTS 4

struct slot {
	struct task_struct __kptr_ref *task;
	struct cgroup __kptr_ref *cgrp;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NSLOTS);
	__type(key, int);
	__type(value, struct slot);
} slots SEC(".maps");

int test_tgid;		/* whose children and cgroups go into the slots */
int cgroup_level;	/* of the test's cgroups */
__u64 t_stored, t_got, t_empty, t_dropped, t_bad;
__u64 c_stored, c_got, c_empty, c_dropped, c_bad;

#define add(ctr) __sync_fetch_and_add(&(ctr), 1)

static struct slot *slot_of(__u32 n)
{
	int key = n % NSLOTS;

	return bpf_map_lookup_elem(&slots, &key);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(race_keep_child, struct task_struct *parent, struct task_struct *child)
{
	struct task_struct *t;
	struct slot *s;

	if (parent->tgid != test_tgid)
		return 0;
	s = slot_of(child->pid);
	if (!s)
		return 0;
	t = bpf_task_acquire(child);
	if (!t)
		return 0;
	t = bpf_kptr_xchg(&s->task, t);
	if (t)
		bpf_task_release(t);
	add(t_stored);
	return 0;
}

SEC("tp_btf/cgroup_mkdir")
int BPF_PROG(race_keep_cgroup, struct cgroup *cgrp, const char *path)
{
	struct cgroup *c;
	struct slot *s;

	if ((bpf_get_current_pid_tgid() >> 32) != test_tgid)
		return 0;
	s = slot_of(cgrp->kn->id);
	if (!s)
		return 0;
	c = bpf_cgroup_acquire(cgrp);
	if (!c)
		return 0;
	c = bpf_kptr_xchg(&s->cgrp, c);
	if (c)
		bpf_cgroup_release(c);
	add(c_stored);
	return 0;
}

/* one run in DROP_ONE empties a slot, the others take a reference */
#define DROP_ONE 1024

static void race_task(struct slot *s, __u32 r)
{
	struct task_struct *t;
	int users;

	if (r % DROP_ONE) {
		t = bpf_task_kptr_get(&s->task);
		if (!t) {
			add(t_empty);
			return;
		}
		/* ours, and the slot's or the task's own, if not dropped */
		users = t->rcu_users.refs.counter;
		if (users < 1 || users > 1024)
			add(t_bad);
		add(t_got);
		bpf_task_release(t);
		return;
	}
	t = bpf_kptr_xchg(&s->task, NULL);
	if (t) {
		bpf_task_release(t);
		add(t_dropped);
	}
}

static void race_cgroup(struct slot *s, __u32 r)
{
	struct cgroup *c;

	if (r % DROP_ONE) {
		c = bpf_cgroup_kptr_get(&s->cgrp);
		if (!c) {
			add(c_empty);
			return;
		}
		if (c->level != cgroup_level)
			add(c_bad);
		add(c_got);
		bpf_cgroup_release(c);
		return;
	}
	c = bpf_kptr_xchg(&s->cgrp, NULL);
	if (c) {
		bpf_cgroup_release(c);
		add(c_dropped);
	}
}

SEC("tc")
int race_tasks(struct __sk_buff *ctx)
{
	__u32 r = bpf_get_prandom_u32();
	struct slot *s = slot_of(r >> 16);

	if (s)
		race_task(s, r);
	return 0;
}

SEC("tc")
int race_cgroups(struct __sk_buff *ctx)
{
	__u32 r = bpf_get_prandom_u32();
	struct slot *s = slot_of(r >> 16);

	if (s)
		race_cgroup(s, r);
	return 0;
}

/* Empty every slot, at the end */
SEC("syscall")
int race_empty(void *ctx)
{
	struct task_struct *t;
	struct cgroup *c;
	struct slot *s;
	int i;

	for (i = 0; i < NSLOTS; i++) {
		s = slot_of(i);
		if (!s)
			continue;
		t = bpf_kptr_xchg(&s->task, NULL);
		if (t)
			bpf_task_release(t);
		c = bpf_kptr_xchg(&s->cgrp, NULL);
		if (c)
			bpf_cgroup_release(c);
	}
	return 0;
}

/* ---- maps without kptrs, freed while their elements' frees are pending ---- */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 64);
	__type(key, int);
	__type(value, __u64);
} plain_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 64);
	__type(key, int);
	__type(value, __u64);
} plain_pcpu_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} plain_task_storage SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_INODE_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} plain_inode_storage SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} plain_sk_storage SEC(".maps");

__u64 plain_ops;

/* Insert and delete hash elements: the deleted ones are freed later */
SEC("syscall")
int plain_hash_churn(void *ctx)
{
	__u64 v = 1;
	int i, key;

	for (i = 0; i < 32; i++) {
		key = i;
		bpf_map_update_elem(&plain_hash, &key, &v, BPF_ANY);
		bpf_map_update_elem(&plain_pcpu_hash, &key, &v, BPF_ANY);
	}
	for (i = 0; i < 32; i++) {
		key = i;
		bpf_map_delete_elem(&plain_hash, &key);
		bpf_map_delete_elem(&plain_pcpu_hash, &key);
	}
	add(plain_ops);
	return 0;
}

/* Create and delete local storage from a sleepable program: the deleted
 * elements are freed after a tasks trace grace period.
 */
SEC("lsm.s/file_open")
int BPF_PROG(plain_storage_churn, struct file *file)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	__u64 *v;

	if ((bpf_get_current_pid_tgid() >> 32) != test_tgid)
		return 0;
	v = bpf_task_storage_get(&plain_task_storage, cur, 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (v)
		bpf_task_storage_delete(&plain_task_storage, cur);
	v = bpf_inode_storage_get(&plain_inode_storage, file->f_inode, 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (v)
		bpf_inode_storage_delete(&plain_inode_storage, file->f_inode);
	add(plain_ops);
	return 0;
}

SEC("fentry/inet_getname")
int BPF_PROG(plain_sk_churn, struct socket *sock)
{
	__u64 *v;

	if ((bpf_get_current_pid_tgid() >> 32) != test_tgid)
		return 0;
	v = bpf_sk_storage_get(&plain_sk_storage, sock->sk, 0,
			       BPF_SK_STORAGE_GET_F_CREATE);
	if (v)
		bpf_sk_storage_delete(&plain_sk_storage, sock->sk);
	add(plain_ops);
	return 0;
}

/* Storage maps that only user space updates: no program holds them, so
 * they are freed (after two RCU grace periods) as soon as the skeleton
 * closes them, while the tasks trace callbacks of the elements that user
 * space deleted may still be pending.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} plain_user_task_storage SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_INODE_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} plain_user_inode_storage SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} plain_user_sk_storage SEC(".maps");

/* What the watch_ programs know of a storage map, by its address */
enum {
	MAP_USER_STORAGE = 1,	/* a plain_user_ storage map */
	MAP_FREED = 2,		/* ... whose map_free has started */
};

/* Only the first round's maps matter, and map addresses are reused */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u32);
} watch_maps SEC(".maps");

/* The map_free calls in progress, by the task running them: whether the
 * map is a plain_ one is known on the way in only, when the map is alive
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u32);
} watch_frees SEC(".maps");

__u64 watch_nokptr_dtors, watch_plain_htabs_freed, watch_plain_storage_freed;
__u64 watch_user_storage_freed, watch_late_user_elem_frees;
__u64 watch_user_elem_frees_held;
/* set by user space while it holds tasks trace grace periods back */
int watch_holding;

static bool name_starts(const char *map_name, const char *prefix, int len)
{
	char name[12] = {};
	int i;

	bpf_probe_read_kernel_str(name, sizeof(name), map_name);
	for (i = 0; i < len && i < sizeof(name); i++)
		if (name[i] != prefix[i])
			return false;
	return true;
}

static __u32 flags_of(void *map)
{
	__u64 key = (__u64)map;
	__u32 *f = bpf_map_lookup_elem(&watch_maps, &key);

	return f ? *f : 0;
}

static void set_flags(void *map, __u32 flags)
{
	__u64 key = (__u64)map;

	if (flags)
		bpf_map_update_elem(&watch_maps, &key, &flags, BPF_ANY);
	else
		bpf_map_delete_elem(&watch_maps, &key);
}

/* map_free of a plain_ map starts in this task: remember what it is */
static void free_starts(struct bpf_map *map, __u32 what)
{
	__u64 task = bpf_get_current_pid_tgid();

	if (name_starts(map->name, "plain_", 6))
		bpf_map_update_elem(&watch_frees, &task, &what, BPF_ANY);
}

/* map_free ended in this task: what it freed, 0 if not a plain_ map */
static __u32 free_ended(void)
{
	__u64 task = bpf_get_current_pid_tgid();
	__u32 *what = bpf_map_lookup_elem(&watch_frees, &task), v;

	if (!what)
		return 0;
	v = *what;
	bpf_map_delete_elem(&watch_frees, &task);
	return v;
}

/* struct bpf_map as our series has it (see count_nokptr_dtor()) */
struct bpf_map___kptrs {
	struct bpf_kptr_tab *kptr_tab;
} __attribute__((preserve_access_index));

/* A hash map without kptrs does not wait for its elements' frees when it is
 * freed (so that it costs what it did on 6.1): no allocator destructor,
 * which would read the map, may run for it.
 */
static void count_nokptr_dtor(struct bpf_htab *htab)
{
	/* A local flavour of struct bpf_map: the field is our series', and
	 * this file is also built against the baseline's and upstream's BTF.
	 * (There, htab_elem_dtor does not exist and nothing attaches here.)
	 */
	struct bpf_map___kptrs *map = (void *)&htab->map;

	if (bpf_core_field_exists(map->kptr_tab) && !BPF_CORE_READ(map, kptr_tab))
		add(watch_nokptr_dtors);
}

SEC("fentry/htab_elem_dtor")
int BPF_PROG(watch_elem_dtor, void *obj, void *htab)
{
	count_nokptr_dtor(htab);
	return 0;
}

SEC("fentry/htab_pcpu_value_dtor")
int BPF_PROG(watch_pcpu_value_dtor, void *obj, void *htab)
{
	count_nokptr_dtor(htab);
	return 0;
}

SEC("fentry/htab_map_free")
int BPF_PROG(watch_htab_free_start, struct bpf_map *map)
{
	free_starts(map, 1);
	return 0;
}

SEC("fexit/htab_map_free")
int BPF_PROG(watch_htab_free, struct bpf_map *map)
{
	if (free_ended())
		add(watch_plain_htabs_freed);
	return 0;
}

SEC("fexit/bpf_local_storage_map_alloc")
int BPF_PROG(watch_storage_alloc, union bpf_attr *attr,
	     struct bpf_local_storage_cache *cache, struct bpf_map *map)
{
	if ((unsigned long)map >= (unsigned long)-4095)
		return 0;
	/* a new map, maybe where a freed one was; map->name is set only once
	 * the map is allocated
	 */
	set_flags(map, name_starts(attr->map_name, "plain_user_", 11) ? MAP_USER_STORAGE : 0);
	return 0;
}

SEC("fentry/bpf_local_storage_map_free")
int BPF_PROG(watch_storage_free_start, struct bpf_map *map)
{
	__u32 f = flags_of(map);

	if (f & MAP_USER_STORAGE)
		set_flags(map, f | MAP_FREED);
	free_starts(map, f & MAP_USER_STORAGE ? 2 : 1);
	return 0;
}

SEC("fexit/bpf_local_storage_map_free")
int BPF_PROG(watch_storage_free, struct bpf_map *map)
{
	__u32 what = free_ended();

	if (what)
		add(watch_plain_storage_freed);
	if (what == 2)
		add(watch_user_storage_freed);
	return 0;
}

/* The tasks trace callback that frees an element of a map without kptrs
 * may run after that map was freed, as long as it does not read the map
 * (which KASAN reports): count those that did (or ran while the map was
 * being freed), to show the race was on, and those that ran while user
 * space held such callbacks back, to show that the hold worked.
 */
SEC("fentry/bpf_selem_free_rcu")
int BPF_PROG(watch_selem_free, struct callback_head *rcu)
{
	struct bpf_local_storage_elem *selem;
	__u32 f;

	selem = (void *)rcu - bpf_core_field_offset(struct bpf_local_storage_elem, rcu);
	f = flags_of(BPF_CORE_READ(selem, sdata.smap));
	if (!(f & MAP_USER_STORAGE))
		return 0;
	if (f & MAP_FREED)
		add(watch_late_user_elem_frees);
	if (watch_holding)
		add(watch_user_elem_frees_held);
	return 0;
}

/* Holding back tasks trace grace periods: when user space sets
 * watch_block_tid, that thread's next open() runs this sleepable program,
 * which reads a user page whose fault user space resolves (userfaultfd)
 * only once the maps it watches are freed. Until then the program stays in
 * its RCU tasks trace read section, and no such grace period can end.
 */
int watch_block_tid;
__u64 watch_block_addr;
__u64 watch_block_reads;

SEC("lsm.s/file_open")
int BPF_PROG(watch_block_trace_gp, struct file *file)
{
	__u64 v;

	if (!watch_block_tid || (__u32)bpf_get_current_pid_tgid() != watch_block_tid)
		return 0;
	watch_block_tid = 0;
	if (!bpf_copy_from_user(&v, sizeof(v), (void *)watch_block_addr))
		add(watch_block_reads);
	return 0;
}
