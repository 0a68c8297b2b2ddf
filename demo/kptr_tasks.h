/* SPDX-License-Identifier: GPL-2.0 */
/* Shared by kptr_tasks.bpf.c and kptr_tasks.c: what the BPF side reports */
#ifndef KPTR_TASKS_H
#define KPTR_TASKS_H

#define MAX_CHILDREN 8

/* One slot per forked child */
struct report {
	int pid;
	int users_cached;	/* rcu_users right after caching */
	int switches;		/* sched_switch events seen through the cache */
	int exited;
	__u64 runtime_ns;	/* se.sum_exec_runtime, read through the cache */
	char comm[16];		/* comm, read through the cache */
};

#endif
