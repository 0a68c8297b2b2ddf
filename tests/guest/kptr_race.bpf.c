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
 * the map, which may be gone by then.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

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
