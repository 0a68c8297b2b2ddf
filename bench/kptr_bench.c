// SPDX-License-Identifier: GPL-2.0
/*
 * kptr benchmark, user side: run the programs of kptr_bench.bpf.c with
 * BPF_PROG_TEST_RUN and time program loads, then print one CSV line per case
 * to stdout:
 *
 *   kernel,case,median_ns,min_ns,max_ns,rounds,repeat
 *
 * For the program cases the figures are ns per operation: the kernel's
 * average ns per run, minus the median of the empty program, divided by
 * BENCH_OPS. "empty" itself is ns per run. For the load cases they are wall
 * ns per load of the whole set. Progress and notes go to stderr.
 *
 *   kptr_bench [KERNEL_NAME]      (default: uname -r)
 *
 * Environment: BENCH_ROUNDS (21), BENCH_ROUND_MS (20, the target length of
 * one round of a program case), BENCH_LOAD_ROUNDS (15).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kptr_bench.h"
#include "kptr_bench.skel.h"

#define MAX_ROUNDS	101
#define MAX_REPEAT	2000000

/*
 * The program cases, in output order. kptr marks programs a kernel without
 * kptr support refuses; they are skipped there instead of failing the run.
 */
static const struct bench_case {
	const char *name;
	bool kptr;
} cases[] = {
	{ "empty" }, { "loop" },
	{ "cached_get", true }, { "cached_load", true }, { "acquire_release" },
	{ "xchg_kptr", true }, { "xchg_atomic" },
	{ "array_update_k0" }, { "array_update_k1", true },
	{ "array_update_k8", true }, { "array_update_ref1", true },
	{ "array_update_mix", true },
	{ "array_lookup_k0" }, { "array_lookup_k1", true },
	{ "array_lookup_k8", true }, { "array_lookup_ref1", true },
	{ "array_lookup_mix", true },
	{ "hash_update_k0" }, { "hash_update_k1", true },
	{ "hash_update_k8", true }, { "hash_update_ref1", true },
	{ "hash_update_mix", true },
	{ "hash_lookup_k0" }, { "hash_lookup_k1", true },
	{ "hash_lookup_k8", true }, { "hash_lookup_ref1", true },
	{ "hash_lookup_mix", true },
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* Hash maps whose key 0 must exist before the cases run. */
static const char *const hash_maps[] = {
	"hash_k0", "hash_k1", "hash_k8", "hash_ref1", "hash_mix",
};

static const char *kernel;
static bool have_kptrs = true;
static int rounds = 21, load_rounds = 15, round_ms = 20;

static int env_int(const char *name, int def, int min, int max)
{
	const char *s = getenv(name);
	int v;

	if (!s || !*s)
		return def;
	v = atoi(s);
	return v < min ? min : v > max ? max : v;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts v. */
static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void report(const char *name, double *v, int n, unsigned int repeat)
{
	double med = median(v, n);

	printf("%s,%s,%.2f,%.2f,%.2f,%d,%u\n", kernel, name, med, v[0],
	       v[n - 1], n, repeat);
}

/* One BPF_PROG_TEST_RUN of repeat runs: the kernel's average ns per run. */
static int test_run(struct bpf_program *prog, unsigned int repeat, double *ns)
{
	char pkt[64] = {};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = pkt,
		    .data_size_in = sizeof(pkt), .repeat = repeat);
	int err;

	err = bpf_prog_test_run_opts(bpf_program__fd(prog), &opts);
	if (err || opts.retval) {
		fprintf(stderr, "%s: test run failed: err=%d retval=%u\n",
			bpf_program__name(prog), err, opts.retval);
		return -1;
	}
	*ns = opts.duration;
	return 0;
}

static struct kptr_bench *open_and_load(void)
{
	struct kptr_bench *skel;
	unsigned int i;

	skel = kptr_bench__open();
	if (!skel)
		return NULL;
	if (!have_kptrs) {
		bpf_program__set_autoload(skel->progs.setup_store, false);
		for (i = 0; i < NCASES; i++)
			if (cases[i].kptr)
				bpf_program__set_autoload(
					bpf_object__find_program_by_name(skel->obj,
									 cases[i].name),
					false);
	}
	if (kptr_bench__load(skel)) {
		kptr_bench__destroy(skel);
		return NULL;
	}
	return skel;
}

static int setup(struct kptr_bench *skel)
{
	char zero[256] = {};
	__u64 one = 1;
	unsigned int i;
	int key = 0;
	double ns;

	if (have_kptrs && test_run(skel->progs.setup_store, 1, &ns))
		return -1;
	if (bpf_map__update_elem(skel->maps.atom, &key, sizeof(key), &one,
				 sizeof(one), BPF_ANY))
		return -1;
	for (i = 0; i < sizeof(hash_maps) / sizeof(hash_maps[0]); i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(skel->obj, hash_maps[i]);

		if (bpf_map__update_elem(m, &key, sizeof(key), zero,
					 bpf_map__value_size(m), BPF_ANY)) {
			fprintf(stderr, "cannot create key 0 in %s: %s\n",
				hash_maps[i], strerror(errno));
			return -1;
		}
	}
	return 0;
}

/*
 * The program cases. Rounds are interleaved (round r of every case, then
 * round r + 1) so that a slow phase of the host, common under TCG, spreads
 * over all cases instead of skewing one, and the within-kernel ratios stay
 * comparable.
 */
static int bench_programs(struct kptr_bench *skel)
{
	static double raw[NCASES][MAX_ROUNDS];
	struct bpf_program *prog[NCASES];
	unsigned int repeat[NCASES], i, n;
	double ns, empty_ns, v[MAX_ROUNDS];
	int r;

	for (i = 0; i < NCASES; i++) {
		prog[i] = NULL;
		if (cases[i].kptr && !have_kptrs)
			continue;
		prog[i] = bpf_object__find_program_by_name(skel->obj, cases[i].name);
		if (!prog[i]) {
			fprintf(stderr, "no program %s\n", cases[i].name);
			return -1;
		}
		/*
		 * Calibrate: enough runs per round for round_ms of work. The
		 * trial grows until it lasts 5 ms, so that a coarse clock
		 * cannot make a case look free (and then run for minutes).
		 */
		for (n = 100; ; n *= 4) {
			if (test_run(prog[i], n, &ns))
				return -1;
			if (ns * n >= 5e6 || n >= MAX_REPEAT / 4)
				break;
		}
		ns = round_ms * 1e6 / (ns > 1 ? ns : 1);
		repeat[i] = ns < 100 ? 100 : ns > MAX_REPEAT ? MAX_REPEAT : ns;
	}
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < NCASES; i++) {
			if (!prog[i])
				continue;
			if (test_run(prog[i], repeat[i], &raw[i][r]))
				return -1;
		}
	}
	if (skel->bss->misses) {
		fprintf(stderr, "%u operations failed: the numbers are not valid\n",
			skel->bss->misses);
		return -1;
	}
	memcpy(v, raw[0], rounds * sizeof(v[0]));
	empty_ns = median(v, rounds);
	for (i = 0; i < NCASES; i++) {
		if (!prog[i]) {
			fprintf(stderr, "%s: skipped, the kernel has no kptrs\n",
				cases[i].name);
			continue;
		}
		for (r = 0; r < rounds; r++)
			v[r] = i == 0 ? raw[i][r] :
				(raw[i][r] - empty_ns) / BENCH_OPS;
		report(cases[i].name, v, rounds, repeat[i]);
	}
	return 0;
}

/*
 * Verifier load time, the kernel's part only: the instructions libbpf
 * loaded (relocated, map fds embedded) are loaded again with bpf_prog_load(),
 * which verifies and JITs them, without libbpf's own work. load_progs is all
 * programs that use kptrs, load_empty the empty program (the fixed cost of
 * a load).
 */
/* Whether a program of the object uses kptrs (setup_store is no case). */
static bool kptr_prog(const char *name)
{
	unsigned int i;

	for (i = 0; i < NCASES; i++)
		if (!strcmp(cases[i].name, name))
			return cases[i].kptr;
	return true;
}

static int load_set(struct kptr_bench *skel, bool kptrs, double *ns)
{
	struct bpf_program *p;
	double start, total = 0;
	const char *name;
	int fd;

	bpf_object__for_each_program(p, skel->obj) {
		name = bpf_program__name(p);
		if (kptrs ? !kptr_prog(name) : strcmp(name, "empty"))
			continue;
		start = now_ns();
		fd = bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, name, "GPL",
				   bpf_program__insns(p), bpf_program__insn_cnt(p),
				   NULL);
		total += now_ns() - start;
		if (fd < 0) {
			fprintf(stderr, "reloading %s failed: %s\n", name,
				strerror(errno));
			return -1;
		}
		close(fd);
	}
	*ns = total;
	return 0;
}

/*
 * Upstream 6.1's own kptr selftest object, the same file on every kernel
 * (bench.sh puts it beside us): BTF, maps and all its programs, loaded with
 * libbpf. Open is excluded. It is a test of every kptr rule, not tuned to
 * this benchmark, so its verifier time is the one users see.
 */
#define SELFTEST_OBJ "map_kptr.bpf.o"

static int bench_selftest_load(int n)
{
	double t[MAX_ROUNDS], start;
	struct bpf_object *obj;
	int r, err;

	if (!have_kptrs)
		return 0;
	for (r = 0; r < n; r++) {
		obj = bpf_object__open_file(SELFTEST_OBJ, NULL);
		if (!obj) {
			fprintf(stderr, "cannot open %s: %d\n", SELFTEST_OBJ, -errno);
			return -1;
		}
		start = now_ns();
		err = bpf_object__load(obj);
		t[r] = now_ns() - start;
		bpf_object__close(obj);
		if (err) {
			fprintf(stderr, "%s failed to load: %d\n", SELFTEST_OBJ, err);
			return -1;
		}
	}
	report("load_selftest", t, n, 1);
	return 0;
}

static int bench_loads(struct kptr_bench *skel)
{
	double progs[MAX_ROUNDS], empty[MAX_ROUNDS], obj[MAX_ROUNDS], start;
	struct kptr_bench *s;
	int r, n;

	for (r = 0; r < load_rounds; r++) {
		if (load_set(skel, false, &empty[r]))
			return -1;
		if (have_kptrs && load_set(skel, true, &progs[r]))
			return -1;
	}
	report("load_empty", empty, load_rounds, 1);
	if (have_kptrs)
		report("load_progs", progs, load_rounds, 1);

	/*
	 * The whole object with libbpf: BTF, the maps (the kernel parses their
	 * kptr fields at map creation) and every program. Open is excluded.
	 */
	n = load_rounds < 7 ? load_rounds : 7;
	for (r = 0; r < n; r++) {
		s = kptr_bench__open();
		if (!s)
			return -1;
		if (!have_kptrs) {
			kptr_bench__destroy(s);
			return 0;
		}
		start = now_ns();
		if (kptr_bench__load(s)) {
			kptr_bench__destroy(s);
			return -1;
		}
		obj[r] = now_ns() - start;
		kptr_bench__destroy(s);
	}
	report("load_object", obj, n, 1);
	return bench_selftest_load(n);
}

static void clocksource(char *cs, int size)
{
	FILE *f;

	cs[0] = 0;
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	if (f) {
		if (!fgets(cs, size, f))
			cs[0] = 0;
		fclose(f);
	}
	cs[strcspn(cs, "\n")] = 0;
}

/*
 * The kernel's durations are only as fine as its clocksource. With
 * tsc_early_khz the kernel switches from tsc-early to tsc about a second
 * after boot; wait for that rather than have it happen mid-measurement.
 */
static void warn_clock(void)
{
	char cs[64];
	int i;

	for (i = 0; i < 50; i++) {
		clocksource(cs, sizeof(cs));
		if (strcmp(cs, "tsc-early"))
			break;
		usleep(100 * 1000);
	}
	fprintf(stderr, "kptr_bench: clocksource %s\n", cs[0] ? cs : "unknown");
	if (!strcmp(cs, "jiffies"))
		fprintf(stderr, "kptr_bench: WARNING: a jiffies clock makes every "
			"timing coarse; boot with tsc_early_khz=HOST_TSC_KHZ\n");
}

int main(int argc, char **argv)
{
	struct kptr_bench *skel;
	struct utsname u;
	double t0 = now_ns();

	setvbuf(stdout, NULL, _IOLBF, 0);
	uname(&u);
	kernel = argc > 1 ? argv[1] : u.release;
	rounds = env_int("BENCH_ROUNDS", rounds, 1, MAX_ROUNDS);
	load_rounds = env_int("BENCH_LOAD_ROUNDS", load_rounds, 1, MAX_ROUNDS);
	round_ms = env_int("BENCH_ROUND_MS", round_ms, 1, 10000);

	warn_clock();
	skel = open_and_load();
	if (!skel) {
		fprintf(stderr, "kptr_bench: the kernel refused the kptr programs, "
			"running only the ones without kptrs\n");
		have_kptrs = false;
		skel = open_and_load();
	}
	if (!skel) {
		fprintf(stderr, "kptr_bench: cannot load the programs\n");
		return 1;
	}
	if (setup(skel) || bench_programs(skel) || bench_loads(skel)) {
		kptr_bench__destroy(skel);
		return 1;
	}
	kptr_bench__destroy(skel);
	fprintf(stderr, "kptr_bench: %s done in %.1f s (%d ops per run)\n",
		kernel, (now_ns() - t0) / 1e9, BENCH_OPS);
	return 0;
}
