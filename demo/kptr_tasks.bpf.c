// SPDX-License-Identifier: GPL-2.0
/*
 * Task cache, BPF side: remember every process the watched process forks, as
 * a referenced task_struct kptr in a hash map keyed by pid, and look at the
 * task again through that reference on later scheduler events. The
 * reference is released when the task exits (its element is deleted, and
 * the map's destructor drops the reference) or when the map goes away.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "GPL";

#ifndef __kptr_ref
#define __kptr_ref __attribute__((btf_type_tag("kptr_ref")))
#endif

extern struct task_struct *bpf_task_acquire(struct task_struct *p) __ksym;
extern struct task_struct *bpf_task_kptr_get(struct task_struct **pp) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;

#include "kptr_tasks.h"

struct cached_task {
	struct task_struct __kptr_ref *task;
	int idx;		/* report slot */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_CHILDREN);
	__type(key, int);
	__type(value, struct cached_task);
} cache SEC(".maps");

int watched_tgid;	/* whose children are cached */
int probe_tgid;		/* whose rcu_users the probe reports */
int probe_users = -1;
int nr_children;
int errors;
struct report reports[MAX_CHILDREN];

SEC("tp_btf/sched_process_fork")
int BPF_PROG(cache_child, struct task_struct *parent, struct task_struct *child)
{
	struct cached_task init = {}, *v;
	struct task_struct *t;
	int pid = child->pid, idx;

	if (!watched_tgid || parent->tgid != watched_tgid)
		return 0;
	idx = __sync_fetch_and_add(&nr_children, 1);
	if (idx < 0 || idx >= MAX_CHILDREN)
		return 0;
	init.idx = idx;
	if (bpf_map_update_elem(&cache, &pid, &init, BPF_NOEXIST))
		goto fail;
	v = bpf_map_lookup_elem(&cache, &pid);
	if (!v)
		goto fail;
	t = bpf_task_acquire(child);
	if (!t)
		goto fail;
	t = bpf_kptr_xchg(&v->task, t);
	if (t)
		bpf_task_release(t);
	reports[idx].pid = pid;
	reports[idx].users_cached = child->rcu_users.refs.counter;
	return 0;
fail:
	__sync_fetch_and_add(&errors, 1);
	return 0;
}

/* On every switch away from a cached task, look at it through the cache. */
SEC("tp_btf/sched_switch")
int BPF_PROG(watch_switch, bool preempt, struct task_struct *prev)
{
	struct cached_task *v;
	struct task_struct *t;
	int pid = prev->pid, idx;
	struct report *r;

	v = bpf_map_lookup_elem(&cache, &pid);
	if (!v)
		return 0;
	idx = v->idx;
	if (idx < 0 || idx >= MAX_CHILDREN)
		return 0;
	t = bpf_task_kptr_get(&v->task);
	if (!t)
		return 0;
	r = &reports[idx];
	r->switches++;
	r->runtime_ns = t->se.sum_exec_runtime;
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), t->comm);
	bpf_task_release(t);
	return 0;
}

/* A cached task exits: drop its element, and with it the reference. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(forget_task, struct task_struct *p)
{
	struct cached_task *v;
	int pid = p->pid, idx;

	v = bpf_map_lookup_elem(&cache, &pid);
	if (!v)
		return 0;
	idx = v->idx;
	if (idx >= 0 && idx < MAX_CHILDREN)
		reports[idx].exited = 1;
	bpf_map_delete_elem(&cache, &pid);
	return 0;
}

/* The probe: the calling process's rcu_users, from a getpgid() call. */
SEC("fentry/__x64_sys_getpgid")
int BPF_PROG(probe_users_count)
{
	if (probe_tgid && (bpf_get_current_pid_tgid() >> 32) == probe_tgid)
		probe_users = bpf_get_current_task_btf()->rcu_users.refs.counter;
	return 0;
}
