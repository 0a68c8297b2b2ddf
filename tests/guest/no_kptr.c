// SPDX-License-Identifier: GPL-2.0
/*
 * Prove that a kernel has no kptr support: load each program of
 * no_kptr.bpf.c on its own and require the verifier to reject it with the
 * expected message. Run on the baseline kernel it must pass; run on a kernel
 * with kptrs it must fail, which shows the check can tell the two apart.
 */
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "no_kptr.skel.h"

static char log_buf[1 << 20];

static const struct {
	const char *prog;
	const char *why;
	const char *msg;
} cases[] = {
	{ "unref_store_load",
	  "a kptr field is plain data: the load gives a scalar",
	  "invalid mem access 'scalar'" },
	{ "ref_xchg",
	  "bpf_kptr_xchg() is not implemented",
	  "unknown func bpf_kptr_xchg#194" },
	{ "ref_plain_store",
	  "a store does not move the reference into the map",
	  "Unreleased reference" },
};

static int check(int i)
{
	struct bpf_program *prog;
	struct no_kptr *skel;
	int err, ok;

	skel = no_kptr__open();
	if (!skel) {
		printf("FAIL %s: cannot open the object\n", cases[i].prog);
		return 0;
	}
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, !strcmp(bpf_program__name(prog),
							 cases[i].prog));
	prog = bpf_object__find_program_by_name(skel->obj, cases[i].prog);
	log_buf[0] = 0;
	bpf_program__set_log_buf(prog, log_buf, sizeof(log_buf));
	err = no_kptr__load(skel);
	ok = err && strstr(log_buf, cases[i].msg);
	if (ok)
		printf("ok   %-17s rejected: \"%s\" (%s)\n", cases[i].prog,
		       cases[i].msg, cases[i].why);
	else if (!err)
		printf("FAIL %-17s loaded, expected \"%s\"\n", cases[i].prog, cases[i].msg);
	else
		printf("FAIL %-17s rejected without \"%s\"; log:\n%s\n", cases[i].prog,
		       cases[i].msg, log_buf);
	no_kptr__destroy(skel);
	return ok;
}

int main(void)
{
	int i, passed = 0, n = sizeof(cases) / sizeof(cases[0]);

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < n; i++)
		passed += check(i);
	printf("no_kptr: %d of %d programs rejected as a kernel without kptrs must\n",
	       passed, n);
	return passed == n ? 0 : 1;
}
