// SPDX-License-Identifier: GPL-2.0
/*
 * kptr benchmark, guest side: runs the programs of kptr_bench.bpf.c and
 * kptr_scale.bpf.c with BPF_PROG_TEST_RUN, times program loads, and prints
 * every round of every case as a CSV line to stdout:
 *
 *   kernel,case,unit,round,value
 *
 * No statistics here: scripts/bench_stats.py folds the rounds and passes.
 *
 * unit is BENCH_UNIT: "ns" under a real-time clock, "ins" in bench.sh's
 * instruction-count mode, where the guest TSC ticks once per instruction
 * and every duration the kernel reports is a count of guest instructions.
 * Program cases are per operation: the kernel's average per run, minus the
 * median of the empty program, divided by BENCH_OPS ("empty" itself is per
 * run). Load cases are per load of a set of programs; "vinsns" lines are
 * the verifier's count of the instructions it processed (verified_insns),
 * no clock involved.
 *
 *   kptr_bench [KERNEL_NAME]      (default: uname -r)
 *
 * Environment:
 *   BENCH_UNIT         ns or ins (default ns)
 *   BENCH_ROUNDS       rounds per program case (default 21)
 *   BENCH_ROUND_US     target length of one round, in clock units / 1000
 *                      (default 20000: 20 ms)
 *   BENCH_LOAD_ROUNDS  rounds of the load cases (default 15)
 *   BENCH_SETS         which parts run, comma separated (default
 *                      "targets,scale"): targets (kptr_bench.bpf.c's cases,
 *                      loads, the task and cgroup cases), scale (the scale
 *                      table), contention (cases run on every CPU at once)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <linux/btf.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "kptr_bench.h"
#include "kptr_bench.skel.h"
#include "kptr_scale.skel.h"

#define MAX_ROUNDS	101
#define MAX_REPEAT	2000000
#define MAX_CASES	256

static const char *kernel, *unit = "ns", *sets = "targets,scale";
static int rounds = 21, load_rounds = 15, round_us = 20000;
static double empty_ns = -1;

static int env_int(const char *name, int def, int min, int max)
{
	const char *s = getenv(name);
	int v;

	if (!s || !*s)
		return def;
	v = atoi(s);
	return v < min ? min : v > max ? max : v;
}

static bool want(const char *set)
{
	const char *p = strstr(sets, set);
	size_t n = strlen(set);

	return p && (p == sets || p[-1] == ',') && (p[n] == 0 || p[n] == ',');
}

/* The guest's clock: instructions in instruction mode, else ns. */
static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void emit(const char *name, const char *u, int round, double v)
{
	printf("%s,%s,%s,%d,%.3f\n", kernel, name, u, round, v);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Only to subtract the empty run; the statistics are bench_stats.py's. */
static double median(const double *in, int n)
{
	double v[MAX_ROUNDS];

	memcpy(v, in, n * sizeof(v[0]));
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One BPF_PROG_TEST_RUN of repeat runs: the kernel's average per run. */
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

/* Programs of an object that are cases: tc programs but the helpers. */
static bool is_case(struct bpf_program *p)
{
	const char *sec = bpf_program__section_name(p);
	const char *name = bpf_program__name(p);

	if (strcmp(sec, "tc") && strcmp(sec, "classifier"))
		return false;
	return strncmp(name, "setup_", 6) && strncmp(name, "fill_", 5);
}

/* Enough runs per round for round_us of work, at least 2. */
static int calibrate(struct bpf_program *prog, unsigned int *repeat)
{
	double ns, n;

	if (test_run(prog, 4, &ns))
		return -1;
	/* with a coarse clock a case could look free: grow the trial */
	if (ns * 4 < 1e5) {
		if (test_run(prog, 400, &ns))
			return -1;
	}
	n = round_us * 1e3 / (ns > 1 ? ns : 1);
	*repeat = n < 2 ? 2 : n > MAX_REPEAT ? MAX_REPEAT : n;
	return 0;
}

/*
 * The program cases of an object. Rounds are interleaved (round r of every
 * case, then round r + 1) so that a slow phase of the host, common under
 * TCG, spreads over all cases instead of skewing one.
 */
static int bench_programs(struct bpf_object *obj, __u32 *misses)
{
	static double raw[MAX_CASES][MAX_ROUNDS];
	struct bpf_program *prog[MAX_CASES], *p;
	unsigned int repeat[MAX_CASES], i, n = 0;
	int r;

	bpf_object__for_each_program(p, obj) {
		if (!is_case(p))
			continue;
		if (n == MAX_CASES) {
			fprintf(stderr, "more than %d cases\n", MAX_CASES);
			return -1;
		}
		prog[n] = p;
		if (calibrate(p, &repeat[n]))
			return -1;
		n++;
	}
	for (r = 0; r < rounds; r++)
		for (i = 0; i < n; i++)
			if (test_run(prog[i], repeat[i], &raw[i][r]))
				return -1;
	if (*misses) {
		fprintf(stderr, "%u operations failed: the numbers are not valid\n",
			*misses);
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(bpf_program__name(prog[i]), "empty"))
			continue;
		empty_ns = median(raw[i], rounds);
		for (r = 0; r < rounds; r++)
			emit("empty", unit, r, raw[i][r]);
	}
	if (empty_ns < 0) {
		fprintf(stderr, "no empty case measured yet\n");
		return -1;
	}
	for (i = 0; i < n; i++) {
		const char *name = bpf_program__name(prog[i]);

		if (!strcmp(name, "empty"))
			continue;
		for (r = 0; r < rounds; r++)
			emit(name, unit, r, (raw[i][r] - empty_ns) / BENCH_OPS);
	}
	return 0;
}

/*
 * Task and cgroup: the tp_btf program times its cases each time this
 * process moves between two cgroups.
 */
static int move_to(const char *cg)
{
	char path[128], pid[32];
	int fd, n, ok;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/cgroup.procs", cg);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	n = snprintf(pid, sizeof(pid), "%d", getpid());
	ok = write(fd, pid, n) == n;
	close(fd);
	return ok ? 0 : -1;
}

static int bench_obj_cases(struct kptr_bench *skel)
{
	static const char *names[OC_NR] = OBJ_CASE_NAMES;
	double v[OC_NR][MAX_ROUNDS];
	struct bpf_program *prog;
	struct bpf_link *link;
	int r, c, err = -1;

	prog = bpf_object__find_program_by_name(skel->obj, "obj_cases");
	if (!prog)
		return 0;	/* a kernel without task and cgroup kfuncs */
	mkdir("/sys/fs/cgroup/bench_a", 0755);
	mkdir("/sys/fs/cgroup/bench_b", 0755);
	link = bpf_program__attach(prog);
	if (!link) {
		fprintf(stderr, "cannot attach obj_cases: %d\n", -errno);
		return -1;
	}
	skel->bss->target_pid = getpid();
	for (r = 0; r < rounds; r++) {
		if (move_to(r % 2 ? "bench_b" : "bench_a")) {
			fprintf(stderr, "cannot move to a cgroup: %s\n", strerror(errno));
			goto out;
		}
		if (skel->bss->obj_runs != (unsigned int)r + 1) {
			fprintf(stderr, "obj_cases did not run\n");
			goto out;
		}
		for (c = 0; c < OC_NR; c++)
			v[c][r] = skel->bss->obj_ns[c];
	}
	if (skel->bss->misses) {
		fprintf(stderr, "%u task/cgroup operations failed\n", skel->bss->misses);
		goto out;
	}
	for (c = 0; c < OC_NR; c++) {
		for (r = 0; r < rounds; r++) {
			/* a case this kernel lacks (kptr_get) stays 0 */
			if (c != OC_EMPTY && v[c][r] == 0)
				break;
			emit(names[c], unit, r, c == OC_EMPTY ? v[c][r] :
			     (v[c][r] - v[OC_EMPTY][r]) / BENCH_OPS);
		}
	}
	err = 0;
out:
	move_to("");
	bpf_link__destroy(link);
	/* the slots keep the task and cgroup until the map goes */
	return err;
}

/*
 * Verifier cost: the instructions libbpf prepared (relocated, map fds
 * embedded) are loaded again with bpf_prog_load(), which verifies and JITs
 * them, without libbpf's own work. The set is every program using kptr
 * maps (section "classifier"); load_empty is the empty program alone.
 */
/*
 * A kfunc call of a module (6.12 keeps bpf_kfunc_call_test_acquire() in
 * bpf_testmod) names the module's BTF by an index into the load's
 * fd_array, which libbpf filled and keeps to itself: give every index
 * bpf_testmod's BTF, the only module the programs call.
 */
static int module_fds[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };

static void find_module_btf(const char *module)
{
	struct bpf_btf_info info;
	__u32 id = 0, len;
	char name[64];
	int fd, i;

	while (!bpf_btf_get_next_id(id, &id)) {
		fd = bpf_btf_get_fd_by_id(id);
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		info.name = (__u64)(unsigned long)name;
		info.name_len = sizeof(name);
		len = sizeof(info);
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) && !strcmp(name, module)) {
			for (i = 1; i < 8; i++)
				module_fds[i] = fd;
			return;
		}
		close(fd);
	}
}

static int load_set(struct bpf_object *obj, bool kptrs, double *ns, double *vinsns)
{
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .fd_array = module_fds);
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	struct bpf_program *p;
	double start, total = 0, vi = 0;
	const char *name;
	int fd;

	bpf_object__for_each_program(p, obj) {
		name = bpf_program__name(p);
		if (kptrs ? strcmp(bpf_program__section_name(p), "classifier") :
			    strcmp(name, "empty"))
			continue;
		start = now_ns();
		fd = bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, name, "GPL",
				   bpf_program__insns(p), bpf_program__insn_cnt(p),
				   module_fds[1] >= 0 ? &opts : NULL);
		total += now_ns() - start;
		if (fd < 0) {
			fprintf(stderr, "reloading %s failed: %s\n", name,
				strerror(errno));
			return -1;
		}
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (!bpf_obj_get_info_by_fd(fd, &info, &len))
			vi += info.verified_insns;
		close(fd);
	}
	*ns = total;
	*vinsns = vi;
	return 0;
}

/* Sum of the verified_insns of an object's loaded programs */
static double object_vinsns(struct bpf_object *obj)
{
	struct bpf_prog_info info;
	struct bpf_program *p;
	double vi = 0;
	__u32 len;

	bpf_object__for_each_program(p, obj) {
		if (bpf_program__fd(p) < 0)
			continue;
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (!bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
			vi += info.verified_insns;
	}
	return vi;
}

/*
 * Upstream 6.1's own kptr selftest object, the same file on every 6.1
 * kernel (bench.sh puts it beside us, not on 6.12, whose tags differ):
 * BTF, maps and all its programs, loaded with libbpf. Open is excluded.
 */
#define SELFTEST_OBJ "map_kptr.bpf.o"

static int bench_selftest_load(int n)
{
	struct bpf_object *obj;
	double start;
	int r, err;

	if (access(SELFTEST_OBJ, R_OK))
		return 0;
	for (r = 0; r < n; r++) {
		obj = bpf_object__open_file(SELFTEST_OBJ, NULL);
		if (!obj) {
			fprintf(stderr, "cannot open %s: %d\n", SELFTEST_OBJ, -errno);
			return -1;
		}
		start = now_ns();
		err = bpf_object__load(obj);
		emit("load_selftest", unit, r, now_ns() - start);
		if (!err && r == 0)
			emit("vinsns_selftest", "vinsns", 0, object_vinsns(obj));
		bpf_object__close(obj);
		if (err) {
			fprintf(stderr, "%s failed to load: %d\n", SELFTEST_OBJ, err);
			return -1;
		}
	}
	return 0;
}

static int bench_loads(struct kptr_bench *skel)
{
	struct kptr_bench *s;
	double ns, vi, start;
	int r, n;

	for (r = 0; r < load_rounds; r++) {
		if (load_set(skel->obj, false, &ns, &vi))
			return -1;
		emit("load_empty", unit, r, ns);
		if (load_set(skel->obj, true, &ns, &vi))
			return -1;
		if (vi == 0)
			continue;	/* no kptr programs on this kernel */
		emit("load_progs", unit, r, ns);
		if (r == 0)
			emit("vinsns_progs", "vinsns", 0, vi);
	}

	/*
	 * The whole object with libbpf: BTF, the maps (the kernel parses their
	 * kptr fields at map creation) and every program. Open is excluded.
	 */
	n = load_rounds < 7 ? load_rounds : 7;
	for (r = 0; r < n; r++) {
		s = kptr_bench__open();
		if (!s)
			return -1;
		start = now_ns();
		if (kptr_bench__load(s)) {
			kptr_bench__destroy(s);
			return -1;
		}
		emit("load_object", unit, r, now_ns() - start);
		kptr_bench__destroy(s);
	}
	return bench_selftest_load(n);
}

/*
 * Verifier time against program size: raw programs of N kptr operations,
 * each taking the reference out of the cache map's slot with
 * bpf_kptr_xchg() and releasing it if there was one:
 *
 *	r1 = r6; r2 = 0; call bpf_kptr_xchg; if r0 == 0 goto +2;
 *	r1 = r0; call bpf_kfunc_call_test_release
 *
 * r6 holds the slot's address (a direct map value load). The same
 * instructions on every kernel: the helper's id and the kfunc's name are
 * 6.1's and 6.12's alike.
 */
#define OP_INSNS	6
#define BPF_FUNC_KPTR_XCHG	194

static int bench_verifier_scale(struct kptr_bench *skel)
{
	static const int sizes[] = { 1, 10, 100, 1000 };
	struct bpf_insn *insns, *in;
	struct bpf_prog_info info;
	struct btf *vmlinux;
	int release_id, map_fd, fd, i, k, r, cnt, n;
	char name[32];
	double start, t;
	__u32 len;

	if (!bpf_object__find_map_by_name(skel->obj, "cache"))
		return 0;
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		return -1;
	release_id = btf__find_by_name_kind(vmlinux, "bpf_kfunc_call_test_release",
					    BTF_KIND_FUNC);
	btf__free(vmlinux);
	if (release_id < 0) {
		fprintf(stderr, "no bpf_kfunc_call_test_release in vmlinux BTF\n");
		return -1;
	}
	map_fd = bpf_map__fd(bpf_object__find_map_by_name(skel->obj, "cache"));
	insns = calloc(4 + OP_INSNS * 1000, sizeof(*insns));
	if (!insns)
		return -1;
	n = load_rounds < 5 ? load_rounds : 5;
	for (k = 0; k < (int)(sizeof(sizes) / sizeof(sizes[0])); k++) {
		in = insns;
		/* r6 = &cache[0] */
		*in++ = (struct bpf_insn){ .code = BPF_LD | BPF_DW | BPF_IMM,
			.dst_reg = BPF_REG_6, .src_reg = BPF_PSEUDO_MAP_VALUE,
			.imm = map_fd };
		*in++ = (struct bpf_insn){ .imm = 0 };
		for (i = 0; i < sizes[k]; i++) {
			*in++ = (struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_X,
				.dst_reg = BPF_REG_1, .src_reg = BPF_REG_6 };
			*in++ = (struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_K,
				.dst_reg = BPF_REG_2, .imm = 0 };
			*in++ = (struct bpf_insn){ .code = BPF_JMP | BPF_CALL,
				.imm = BPF_FUNC_KPTR_XCHG };
			*in++ = (struct bpf_insn){ .code = BPF_JMP | BPF_JEQ | BPF_K,
				.dst_reg = BPF_REG_0, .off = 2, .imm = 0 };
			*in++ = (struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_X,
				.dst_reg = BPF_REG_1, .src_reg = BPF_REG_0 };
			*in++ = (struct bpf_insn){ .code = BPF_JMP | BPF_CALL,
				.src_reg = BPF_PSEUDO_KFUNC_CALL, .imm = release_id };
		}
		*in++ = (struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_K,
			.dst_reg = BPF_REG_0, .imm = 0 };
		*in++ = (struct bpf_insn){ .code = BPF_JMP | BPF_EXIT };
		cnt = in - insns;
		snprintf(name, sizeof(name), "verifier_ops_%d", sizes[k]);
		for (r = 0; r < n; r++) {
			start = now_ns();
			fd = bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, "vscale", "GPL",
					   insns, cnt, NULL);
			t = now_ns() - start;
			if (fd < 0) {
				fprintf(stderr, "%s: load failed: %s\n", name, strerror(errno));
				free(insns);
				return -1;
			}
			emit(name, unit, r, t);
			if (r == 0) {
				memset(&info, 0, sizeof(info));
				len = sizeof(info);
				if (!bpf_obj_get_info_by_fd(fd, &info, &len)) {
					snprintf(name, sizeof(name), "vinsns_ops_%d", sizes[k]);
					emit(name, "vinsns", 0, info.verified_insns);
					snprintf(name, sizeof(name), "verifier_ops_%d", sizes[k]);
				}
			}
			close(fd);
		}
	}
	free(insns);
	return 0;
}

/*
 * Map free with N references held: an inner array of N referenced kptrs,
 * filled by a program, freed when its last reference goes; the kernel's
 * own work (bpf_map_free_deferred, a workqueue item) is timed by
 * fentry/fexit programs.
 */
#define FREE_MAP_NAME	"kb_refs"	/* 7 characters and the NUL: 8 bytes */

static int bench_map_free(struct kptr_scale *skel)
{
	static const int sizes[] = { 1, 1000, 65536, 1000000 };
	struct bpf_link *enter, *leave;
	struct btf *btf;
	char name[32];
	int k, r, n, key = 0, inner, outer, slot_id, int_id, waited;
	double ns;

	struct bpf_program *fill = bpf_object__find_program_by_name(skel->obj, "fill_refs");

	if (!fill)
		return 0;
	btf = bpf_object__btf(skel->obj);
	slot_id = btf__find_by_name_kind(btf, "ref_slot", BTF_KIND_STRUCT);
	int_id = btf__find_by_name_kind(btf, "int", BTF_KIND_INT);
	if (slot_id < 0 || int_id < 0) {
		fprintf(stderr, "no ref_slot or int in the object's BTF\n");
		return -1;
	}
	enter = bpf_program__attach(bpf_object__find_program_by_name(skel->obj, "free_enter"));
	leave = bpf_program__attach(bpf_object__find_program_by_name(skel->obj, "free_exit"));
	if (!enter || !leave) {
		fprintf(stderr, "cannot attach to bpf_map_free_deferred: %d\n", -errno);
		return -1;
	}
	outer = bpf_map__fd(bpf_object__find_map_by_name(skel->obj, "outer"));
	n = rounds < 3 ? rounds : 3;
	for (k = 0; k < (int)(sizeof(sizes) / sizeof(sizes[0])); k++) {
		/* a million references take a while: one round is enough */
		for (r = 0; r < (sizes[k] >= 65536 ? 1 : n); r++) {
			LIBBPF_OPTS(bpf_map_create_opts, opts,
				    .btf_fd = bpf_object__btf_fd(skel->obj),
				    .btf_key_type_id = int_id,
				    .btf_value_type_id = slot_id,
				    .map_flags = BPF_F_INNER_MAP);

			inner = bpf_map_create(BPF_MAP_TYPE_ARRAY, FREE_MAP_NAME, 4,
					       sizeof(__u64), sizes[k], &opts);
			if (inner < 0 ||
			    bpf_map_update_elem(outer, &key, &inner, BPF_ANY)) {
				fprintf(stderr, "cannot create the inner map: %s\n",
					strerror(errno));
				return -1;
			}
			skel->bss->fill_count = sizes[k];
			skel->bss->free_ns = 0;
			if (test_run(fill, 1, &ns) ||
			    skel->bss->filled != sizes[k]) {
				fprintf(stderr, "filling %d references failed (%ld)\n",
					sizes[k], skel->bss->filled);
				return -1;
			}
			memcpy((void *)&skel->bss->free_map_name, FREE_MAP_NAME, 8);
			bpf_map_delete_elem(outer, &key);
			close(inner);
			for (waited = 0; !skel->bss->free_ns && waited < 60000; waited++)
				usleep(1000);
			if (!skel->bss->free_ns) {
				fprintf(stderr, "the map of %d references was not freed\n",
					sizes[k]);
				return -1;
			}
			snprintf(name, sizeof(name), "map_free_refs_%d", sizes[k]);
			emit(name, unit, r, (double)skel->bss->free_ns);
		}
	}
	bpf_link__destroy(enter);
	bpf_link__destroy(leave);
	return 0;
}

static int bench_scale(void)
{
	struct kptr_scale *skel;
	struct bpf_program *p;
	double ns;
	int err = -1;

	skel = kptr_scale__open_and_load();
	if (!skel) {
		fprintf(stderr, "cannot load kptr_scale: %d\n", -errno);
		return -1;
	}
	bpf_object__for_each_program(p, skel->obj) {
		if (strncmp(bpf_program__name(p), "fill_hsize_", 11))
			continue;
		if (test_run(p, 1, &ns))
			goto out;
	}
	if (skel->bss->misses) {
		fprintf(stderr, "filling the hash maps failed\n");
		goto out;
	}
	if (bench_programs(skel->obj, &skel->bss->misses) || bench_map_free(skel))
		goto out;
	err = 0;
out:
	kptr_scale__destroy(skel);
	return err;
}

/*
 * Contention (real-time mode, several CPUs): the same program run on every
 * CPU at once, each thread pinned to its CPU; per-op cost as each CPU sees
 * it, all threads' rounds reported. Misses are expected here (another CPU
 * holds the reference) and not counted as failures.
 */
struct contender {
	struct bpf_program *prog;
	unsigned int repeat;
	int cpu;
	double v[MAX_ROUNDS];
	int err;
};

static void *contend(void *arg)
{
	struct contender *c = arg;
	cpu_set_t set;
	int r;

	CPU_ZERO(&set);
	CPU_SET(c->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	for (r = 0; r < rounds && !c->err; r++)
		c->err = test_run(c->prog, c->repeat, &c->v[r]);
	return NULL;
}

static int bench_contention(struct kptr_bench *skel)
{
	static const char *progs[] = { "xchg_kptr", "xchg_atomic", "hash_update_k0" };
	struct contender c[8];
	pthread_t th[8];
	char name[64];
	int ncpu = sysconf(_SC_NPROCESSORS_ONLN), i, k, r;

	if (ncpu < 2) {
		fprintf(stderr, "contention: one CPU, skipped\n");
		return 0;
	}
	if (ncpu > 8)
		ncpu = 8;
	for (k = 0; k < 3; k++) {
		struct bpf_program *p = bpf_object__find_program_by_name(skel->obj, progs[k]);

		if (!p)
			continue;
		for (i = 0; i < ncpu; i++) {
			c[i] = (struct contender){ .prog = p, .cpu = i };
			if (calibrate(p, &c[i].repeat))
				return -1;
		}
		for (i = 0; i < ncpu; i++)
			pthread_create(&th[i], NULL, contend, &c[i]);
		for (i = 0; i < ncpu; i++)
			pthread_join(th[i], NULL);
		snprintf(name, sizeof(name), "contend_%s", progs[k]);
		for (i = 0; i < ncpu; i++) {
			if (c[i].err)
				return -1;
			for (r = 0; r < rounds; r++)
				emit(name, unit, i * rounds + r,
				     (c[i].v[r] - empty_ns) / BENCH_OPS);
		}
	}
	skel->bss->misses = 0;
	return 0;
}

/* Hash maps whose key 0 must exist before the cases run. */
static int setup(struct kptr_bench *skel)
{
	char zero[256] = {};
	struct bpf_map *m;
	__u64 one = 1;
	int key = 0;
	double ns;

	struct bpf_program *store = bpf_object__find_program_by_name(skel->obj, "setup_store");

	if (store && test_run(store, 1, &ns))
		return -1;
	if (bpf_map__update_elem(skel->maps.atom, &key, sizeof(key), &one,
				 sizeof(one), BPF_ANY))
		return -1;
	bpf_object__for_each_map(m, skel->obj) {
		enum bpf_map_type t = bpf_map__type(m);
		int ncpu = libbpf_num_possible_cpus();
		size_t size = bpf_map__value_size(m);
		void *val;

		if (t != BPF_MAP_TYPE_HASH && t != BPF_MAP_TYPE_LRU_HASH &&
		    t != BPF_MAP_TYPE_PERCPU_HASH && t != BPF_MAP_TYPE_LRU_PERCPU_HASH)
			continue;
		/* percpu values: one (8-byte rounded) value per possible CPU */
		if (t == BPF_MAP_TYPE_PERCPU_HASH || t == BPF_MAP_TYPE_LRU_PERCPU_HASH)
			size = ((size + 7) / 8 * 8) * ncpu;
		val = size <= sizeof(zero) ? zero : calloc(1, size);
		if (!val || bpf_map__update_elem(m, &key, sizeof(key), val, size, BPF_ANY)) {
			fprintf(stderr, "cannot create key 0 in %s: %s\n",
				bpf_map__name(m), strerror(errno));
			return -1;
		}
		if (val != zero)
			free(val);
	}
	return 0;
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
	fprintf(stderr, "kptr_bench: clocksource %s, unit %s\n",
		cs[0] ? cs : "unknown", unit);
	if (!strcmp(cs, "jiffies"))
		fprintf(stderr, "kptr_bench: WARNING: a jiffies clock makes every "
			"timing coarse; boot with tsc_early_khz=HOST_TSC_KHZ\n");
}

int main(int argc, char **argv)
{
	struct kptr_bench *skel;
	struct utsname u;
	double t0 = now_ns();
	int err = 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	uname(&u);
	kernel = argc > 1 ? argv[1] : u.release;
	rounds = env_int("BENCH_ROUNDS", rounds, 1, MAX_ROUNDS);
	load_rounds = env_int("BENCH_LOAD_ROUNDS", load_rounds, 1, MAX_ROUNDS);
	round_us = env_int("BENCH_ROUND_US", round_us, 1, 10000000);
	if (getenv("BENCH_UNIT") && *getenv("BENCH_UNIT"))
		unit = getenv("BENCH_UNIT");
	if (getenv("BENCH_SETS") && *getenv("BENCH_SETS"))
		sets = getenv("BENCH_SETS");

	warn_clock();
	find_module_btf("bpf_testmod");
	skel = kptr_bench__open_and_load();
	if (!skel) {
		fprintf(stderr, "kptr_bench: cannot load the programs\n");
		return 1;
	}
	if (setup(skel) || bench_programs(skel->obj, &skel->bss->misses))
		goto out;
	if (want("targets") &&
	    (bench_obj_cases(skel) || bench_loads(skel) || bench_verifier_scale(skel)))
		goto out;
	if (want("contention") && bench_contention(skel))
		goto out;
	if (want("scale") && bench_scale())
		goto out;
	err = 0;
	fprintf(stderr, "kptr_bench: %s done in %.1f s of guest clock (%d ops per run)\n",
		kernel, (now_ns() - t0) / 1e9, BENCH_OPS);
out:
	kptr_bench__destroy(skel);
	return err;
}
