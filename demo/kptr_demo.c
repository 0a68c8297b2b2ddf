// SPDX-License-Identifier: GPL-2.0
/*
 * kptr demo, user side: drive the programs of kptr_demo.bpf.c with
 * BPF_PROG_TEST_RUN and show, step by step, who holds references to the
 * kernel's test object. Exits non-zero when a step does not do what kptrs
 * promise, so the demo doubles as a test.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kptr_demo.skel.h"

static int failures;

static int run(struct bpf_program *prog)
{
	char pkt[64] = {};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = pkt,
		    .data_size_in = sizeof(pkt), .repeat = 1);
	int err = bpf_prog_test_run_opts(bpf_program__fd(prog), &opts);

	if (err || opts.retval) {
		printf("  %s: test run failed: err=%d retval=%u\n",
		       bpf_program__name(prog), err, opts.retval);
		failures++;
		return -1;
	}
	return 0;
}

/* The object's refcount outside any program (1 means: nobody holds it). */
static int refcount(struct kptr_demo *skel)
{
	return run(skel->progs.count) ? -1 : skel->data->refs;
}

static void expect(const char *what, int got, int want)
{
	printf("  %-66s %d%s\n", what, got, got == want ? "" : "   <-- WRONG");
	if (got != want) {
		printf("  expected %d\n", want);
		failures++;
	}
}

static int add_entry(struct kptr_demo *skel)
{
	char value[bpf_map__value_size(skel->maps.cache)];
	int key = 0;

	memset(value, 0, sizeof(value));
	return bpf_map__update_elem(skel->maps.cache, &key, sizeof(key), value,
				    sizeof(value), BPF_ANY);
}

int main(void)
{
	struct kptr_demo *skel;
	int key = 0, i, n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	skel = kptr_demo__open_and_load();
	if (!skel) {
		printf("kptr demo: the kernel refused the kptr programs (see libbpf's log above)\n");
		return 1;
	}
	if (add_entry(skel)) {
		printf("kptr demo: cannot create the map entry\n");
		return 1;
	}
	printf("kptr demo: a hash map entry caches struct prog_test_ref_kfunc\n");
	printf("  (net/bpf/test_run.c) as __kptr 'seen' and as __kptr_ref 'owned'.\n");
	printf("  %-66s %s\n", "step", "refcount (or value)");
	expect("start: nobody holds the object", refcount(skel), 1);

	run(skel->progs.store);
	expect("store: acquire, plain store to 'seen', bpf_kptr_xchg to 'owned'",
	       refcount(skel), 2);
	expect("  ... 'owned' was empty before (bpf_kptr_xchg returned NULL)",
	       skel->data->had_old, 0);

	run(skel->progs.peek);
	expect("peek: untrusted load of 'seen', field a of the object", skel->data->field_a, 42);

	run(skel->progs.borrow);
	expect("borrow: kptr_get takes a second reference while the map keeps one",
	       skel->data->refs, 3);
	expect("  ... and releases it again", refcount(skel), 2);

	run(skel->progs.store);
	expect("store again: the old owner comes back out and is released",
	       refcount(skel), 2);
	expect("  ... bpf_kptr_xchg returned the previous reference", skel->data->had_old, 1);

	run(skel->progs.take);
	expect("take: bpf_kptr_xchg(NULL) moves the reference out, then release",
	       refcount(skel), 1);

	run(skel->progs.store);
	bpf_map__delete_elem(skel->maps.cache, &key, sizeof(key), 0);
	expect("store, then delete the entry: the map's destructor releases it",
	       refcount(skel), 1);

	add_entry(skel);
	run(skel->progs.store);
	expect("store into a new entry", refcount(skel), 2);
	kptr_demo__destroy(skel);

	/* The map is freed from a workqueue after the last fd goes away. */
	skel = kptr_demo__open_and_load();
	if (!skel)
		return 1;
	for (i = 0, n = -1; i < 50; i++) {
		n = refcount(skel);
		if (n == 1)
			break;
		usleep(100 * 1000);
	}
	expect("close the map: freeing it releases the reference it held", n, 1);
	kptr_demo__destroy(skel);

	printf("kptr demo: %s\n", failures ? "FAILED" : "all steps behaved as expected");
	return failures ? 1 : 0;
}
