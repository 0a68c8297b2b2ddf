// SPDX-License-Identifier: GPL-2.0
/*
 * Feature probe, BPF side: use the task kfuncs only where the running kernel
 * has them. The kfuncs are weak externs: where the kernel's BTF lacks one,
 * libbpf leaves its calls unresolved (imm 0), which the verifier accepts
 * only in code it proves dead. have_task_kfuncs is read-only data the loader
 * sets before the load, from its own probe: a constant to the verifier, so
 * the branch that calls them is dead where they are missing.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "GPL";

extern struct task_struct *bpf_task_acquire(struct task_struct *p) __ksym __weak;
extern void bpf_task_release(struct task_struct *p) __ksym __weak;

const volatile bool have_task_kfuncs;	/* set by the loader */
int watched_tgid;
int acquired;				/* references taken and released */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(count_forks, struct task_struct *parent, struct task_struct *child)
{
	struct task_struct *t;

	if (parent->tgid != watched_tgid)
		return 0;
	if (have_task_kfuncs) {
		t = bpf_task_acquire(child);
		if (t) {
			acquired++;
			bpf_task_release(t);
		}
	}
	return 0;
}
