// SPDX-License-Identifier: GPL-2.0
/*
 * Feature probe, user side: tell at load time which kptrs the running kernel
 * has, the way Documentation/bpf/kptrs.rst ("Probing the running kernel")
 * describes, then load kptr_probe.bpf.c with the task kfuncs enabled only
 * where they exist, and show that it loads and works either way.
 *
 *   kptr_probe [--expect none|upstream-6.1|series|upstream-6.4]
 *
 * none:         bpf_kptr_xchg() (helper 194) is unknown: no kptrs
 * upstream-6.1: bpf_kptr_xchg(), but no task kfuncs (5.19 to 6.1)
 * series:       bpf_task_acquire() and bpf_task_kptr_get(): this series on
 *               6.1 (upstream 6.2 and 6.3 have both too)
 * upstream-6.4: bpf_task_acquire() without bpf_task_kptr_get() (6.4 on)
 * Exit status 1 if the class is not the expected one or the program failed.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "kptr_probe.skel.h"

/* Is NAME a function of the kernel's BTF (vmlinux), as kfuncs are? */
static int kernel_has_func(const struct btf *vmlinux, const char *name)
{
	return btf__find_by_name_kind(vmlinux, name, BTF_KIND_FUNC) > 0;
}

int main(int argc, char **argv)
{
	const char *expect = argc == 3 && !strcmp(argv[1], "--expect") ? argv[2] : NULL;
	int xchg, acquire, kptr_get, err, failed = 0;
	const char *class;
	struct kptr_probe *skel;
	struct btf *vmlinux;
	pid_t pid;

	/* 1 if the verifier knows the helper for this program type */
	xchg = libbpf_probe_bpf_helper(BPF_PROG_TYPE_SCHED_CLS, BPF_FUNC_kptr_xchg, NULL);
	vmlinux = btf__load_vmlinux_btf();
	if (xchg < 0 || !vmlinux) {
		printf("kptr_probe: cannot probe (helper probe %d, vmlinux BTF %s)\n",
		       xchg, vmlinux ? "read" : "missing");
		return 1;
	}
	acquire = kernel_has_func(vmlinux, "bpf_task_acquire");
	kptr_get = kernel_has_func(vmlinux, "bpf_task_kptr_get");
	btf__free(vmlinux);
	if (!xchg)
		class = "none";
	else if (!acquire)
		class = "upstream-6.1";
	else if (kptr_get)
		class = "series";
	else
		class = "upstream-6.4";
	printf("kptr_probe: bpf_kptr_xchg %s, bpf_task_acquire %s, bpf_task_kptr_get %s: %s\n",
	       xchg ? "yes" : "no", acquire ? "yes" : "no", kptr_get ? "yes" : "no", class);

	/* The program calls the task kfuncs only where they exist */
	skel = kptr_probe__open();
	if (!skel) {
		printf("kptr_probe: cannot open the object\n");
		return 1;
	}
	skel->rodata->have_task_kfuncs = acquire;
	skel->bss->watched_tgid = getpid();
	err = kptr_probe__load(skel) ?: kptr_probe__attach(skel);
	if (err) {
		printf("kptr_probe: FAIL: the program did not load or attach (%d)\n", err);
		kptr_probe__destroy(skel);
		return 1;
	}
	pid = fork();
	if (!pid)
		_exit(0);
	waitpid(pid, NULL, 0);
	printf("kptr_probe: the program loaded; task references taken at fork: %d\n",
	       skel->bss->acquired);
	if (acquire != (skel->bss->acquired > 0)) {
		printf("kptr_probe: FAIL: expected %s task reference\n", acquire ? "a" : "no");
		failed = 1;
	}
	kptr_probe__destroy(skel);
	if (expect && strcmp(expect, class)) {
		printf("kptr_probe: FAIL: expected %s\n", expect);
		failed = 1;
	}
	return failed;
}
