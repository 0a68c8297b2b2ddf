// SPDX-License-Identifier: GPL-2.0
/*
 * kptr stress test: race the programs of kptr_stress.bpf.c, which move
 * references to the test object of net/bpf/test_run.c in and out of maps,
 * against each other and against user space on both CPUs, each scenario for
 * a bounded time. Afterwards every reference must be accounted for: once a
 * scenario's maps are gone the object's refcount has to be back where it
 * was, and kmemleak (on a debug kernel) must not report anything.
 *
 *   kptr_stress [--seconds N] [--only LABEL]
 *
 * Scenarios: 1 bpf_kptr_xchg()/kptr_get on shared slots from both CPUs;
 * 2a-2c user space updates and deletes against programs holding and storing
 * references (hash, BPF_F_NO_PREALLOC hash, array); 3 LRU eviction storm;
 * 4 inner map replacement in map-in-maps; 5 the last map fds, then program
 * fds, closed while programs run. Each runs for N seconds (default 3).
 *
 * Exits 0 only if every scenario passed. A kernel without kptrs refuses the
 * programs, so every scenario fails there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "kptr_stress.skel.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define KMEMLEAK "/sys/kernel/debug/kmemleak"
/* map freeing is deferred to workqueues and RCU callbacks */
#define SETTLE_SECONDS 10.0
/* runs per BPF_PROG_TEST_RUN: long enough to keep a CPU busy in the kernel,
 * short enough for the stop flag to be seen quickly
 */
#define REPEAT 64

/* The map value of kptr_stress.bpf.c as user space sees it. */
struct elem {
	__u64 ref;	/* always read as 0, ignored on update */
	__u64 gen;
};

static double seconds = 3.0;	/* per scenario */
static int ncpus;
static struct kptr_stress *ctl;	/* holds ctl_count, the refcount reader */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_for(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s,
			       .tv_nsec = (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Pin the calling thread, so that the two CPUs really run at once. */
static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % ncpus, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		printf("  sched_setaffinity(cpu %d): %s\n", cpu, strerror(errno));
		return -1;
	}
	return 0;
}

static int test_run(int prog_fd, int repeat, __u32 *retval)
{
	char pkt[64] = {};	/* an Ethernet header's worth and more */
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = pkt,
		    .data_size_in = sizeof(pkt), .repeat = repeat);
	int err;

	err = bpf_prog_test_run_opts(prog_fd, &opts);
	*retval = opts.retval;
	return err ? -errno : 0;
}

/* The object's refcount outside any program: 1 when nobody holds it. */
static int refcount(void)
{
	__u32 retval;

	if (test_run(bpf_program__fd(ctl->progs.ctl_count), 1, &retval) || retval)
		return -1;
	return ctl->data->refs;
}

/*
 * Open the object with only the programs and maps whose names start with
 * prefix (plus the globals), so that each scenario owns its maps.
 */
static struct kptr_stress *open_scenario(const char *prefix)
{
	size_t len = strlen(prefix);
	struct kptr_stress *skel;
	struct bpf_program *prog;
	struct bpf_map *map;
	int err;

	skel = kptr_stress__open();
	if (!skel)
		return NULL;
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, !strncmp(bpf_program__name(prog),
							 prefix, len));
	bpf_object__for_each_map(map, skel->obj)
		bpf_map__set_autocreate(map, bpf_map__is_internal(map) ||
					!strncmp(bpf_map__name(map), prefix, len));
	err = kptr_stress__load(skel);
	if (err) {
		printf("  loading the %s programs failed: %s\n", prefix, strerror(-err));
		kptr_stress__destroy(skel);
		return NULL;
	}
	return skel;
}

/* Run a census program: how many slots of its maps are not empty. */
static long long census(struct kptr_stress *skel, struct bpf_program *prog)
{
	__u32 retval;

	if (test_run(bpf_program__fd(prog), 1, &retval) || retval)
		return -1;
	return skel->bss->n_census;
}

/* A thread pinned to a CPU, running a program or a user space loop. */
struct worker {
	pthread_t thread;
	int cpu;
	int prog_fd;			/* run this program, unless body is set */
	bool stop_on_ebadf;		/* its fd being closed ends the loop */
	void (*body)(struct worker *w);
	void *arg;
	int *stop;			/* set with __atomic_store_n() */
	unsigned long long runs;	/* program runs, or syscalls of body */
	unsigned long long ops;		/* body: syscalls that did something */
	unsigned long long errors;
	int first_err;
};

static bool stopped(struct worker *w)
{
	return __atomic_load_n(w->stop, __ATOMIC_ACQUIRE);
}

static void note_error(struct worker *w, int err)
{
	if (!w->errors++)
		w->first_err = err;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	__u32 retval;
	int err;

	if (pin(w->cpu))
		note_error(w, -EINVAL);
	if (w->body) {
		w->body(w);
		return NULL;
	}
	while (!stopped(w)) {
		err = test_run(w->prog_fd, REPEAT, &retval);
		if (err == -EBADF && w->stop_on_ebadf)
			break;
		if (err || retval)
			note_error(w, err ? err : (int)retval);
		else
			__atomic_add_fetch(&w->runs, REPEAT, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Start the workers; should one fail to start, stop those already running. */
static int start_all(struct worker *w, int n)
{
	int i, err;

	for (i = 0; i < n; i++) {
		err = pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
		if (err) {
			printf("  FAIL pthread_create: %s\n", strerror(err));
			__atomic_store_n(w[0].stop, 1, __ATOMIC_RELEASE);
			while (i--)
				pthread_join(w[i].thread, NULL);
			return -1;
		}
	}
	return 0;
}

static void stop_all(struct worker *w, int n)
{
	int i;

	__atomic_store_n(w[0].stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < n; i++)
		pthread_join(w[i].thread, NULL);
}

static unsigned long long runs_of(struct worker *w)
{
	return __atomic_load_n(&w->runs, __ATOMIC_RELAXED);
}

static int check_worker(const char *what, struct worker *w)
{
	if (!w->errors)
		return 0;
	printf("  FAIL %s on cpu %d: %llu errors, the first %d (%s)\n", what, w->cpu,
	       w->errors, w->first_err,
	       w->first_err < 0 ? strerror(-w->first_err) : "program's return value");
	return -1;
}

/* Cheap per-thread pseudo random numbers for the user space loops. */
static unsigned int next_rand(unsigned int *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

struct result {
	unsigned long long iterations, ops;
	int before, after;
	double secs, freed, waited;
	int alive;		/* maps not freed when we stopped waiting */
	bool failed;
	int nids;
	__u32 ids[512];		/* of every map the scenario created */
};

static __u32 obj_id(int fd)
{
	struct bpf_prog_info info = {};	/* id is at the same offset in map info */
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.id;
}

static void add_id(struct result *r, int fd)
{
	__u32 id = obj_id(fd);

	if (id && r->nids < (int)ARRAY_SIZE(r->ids))
		r->ids[r->nids++] = id;
}

/* Remember the scenario's maps, then close every fd of the object. */
static void finish(struct result *r, struct kptr_stress *skel)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, skel->obj)
		if (bpf_map__fd(map) >= 0)
			add_id(r, bpf_map__fd(map));
	kptr_stress__destroy(skel);
}

/* How many of the scenario's maps still exist (can be opened by id). */
static int maps_alive(struct result *r)
{
	int i, fd, n = 0;

	for (i = 0; i < r->nids; i++) {
		fd = bpf_map_get_fd_by_id(r->ids[i]);
		if (fd >= 0) {
			n++;
			close(fd);
		}
	}
	return n;
}

/*
 * Wait for the deferred frees (workqueue, RCU callbacks) to drop the maps
 * and their references: until the refcount is back, or for at most
 * SETTLE_SECONDS, or until the maps have been gone for 2 s with the
 * refcount standing still, as then nothing is left to release it.
 */
static void settle(struct result *r)
{
	double start = now(), still = start;
	int last = -2;

	r->freed = -1;
	for (;;) {
		r->after = refcount();
		r->alive = maps_alive(r);
		if (!r->alive && r->freed < 0)
			r->freed = now() - start;
		if (r->after == r->before && !r->alive)
			break;
		if (r->after != last || r->alive) {
			last = r->after;
			still = now();
		}
		if (now() - still > 2.0 || now() - start > SETTLE_SECONDS)
			break;
		sleep_for(0.05);
	}
	r->waited = now() - start;
}

/* The programs' counters: everything they did to slots and elements. */
static unsigned long long prog_ops(const struct kptr_stress__bss *b)
{
	return b->n_xchg_in + b->n_xchg_out + b->n_borrow + b->n_borrow_null +
	       b->n_update + b->n_update_err;
}

static void print_counters(const struct kptr_stress__bss *b)
{
	printf("  programs: %llu xchg in, %llu xchg out, %llu released on the way out,\n"
	       "    %llu kptr_get (+%llu found empty), %llu inserted (%llu failed),"
	       " %llu lookups missed\n",
	       b->n_xchg_in, b->n_xchg_out, b->n_old, b->n_borrow, b->n_borrow_null,
	       b->n_update, b->n_update_err, b->n_miss);
	if (b->n_acquire_null)
		printf("  the acquire kfunc returned NULL %llu times\n", b->n_acquire_null);
}

/*
 * What a scenario leaves behind: the references still in its maps (with the
 * census, when the slots are all visible to it), then the count once the
 * maps are gone.
 */
static void held_at_end(struct result *r, long long in_slots, bool exact)
{
	int held = refcount() - r->before;

	if (in_slots < 0) {
		printf("  at the end: %d references held by the maps\n", held);
		return;
	}
	printf("  at the end: %d references held by the maps, %lld slots not empty\n",
	       held, in_slots);
	if (exact && held != in_slots) {
		printf("  FAIL the refcount does not match the slots holding references\n");
		r->failed = true;
	} else if (held != in_slots) {
		/* a program may store into an element it looked up just before
		 * it was deleted or evicted; that element keeps the reference
		 * until it is reused or the map is freed
		 */
		printf("  (%lld references in elements that were deleted or evicted"
		       " under a program)\n", held - in_slots);
	}
}

/* Scenario 1: bpf_kptr_xchg() and kptr_get on the same slots from both CPUs. */
static int s1(struct result *r)
{
	struct worker w[2] = {};
	int stop = 0;
	struct kptr_stress *skel;
	double t0;
	int i;

	skel = open_scenario("s1_");
	if (!skel)
		return -1;
	t0 = now();
	for (i = 0; i < 2; i++) {
		w[i].cpu = i;
		w[i].prog_fd = bpf_program__fd(skel->progs.s1_churn);
		w[i].stop = &stop;
	}
	if (start_all(w, 2)) {
		kptr_stress__destroy(skel);
		return -1;
	}
	sleep_for(seconds);
	stop_all(w, 2);
	for (i = 0; i < 2; i++) {
		r->iterations += w[i].runs;
		if (check_worker("s1_churn", &w[i]))
			r->failed = true;
	}
	r->secs = now() - t0;
	print_counters(skel->bss);
	r->ops = prog_ops(skel->bss);
	/* array slots never go away: each reference must be in one */
	held_at_end(r, census(skel, skel->progs.s1_census), true);
	finish(r, skel);
	return 0;
}

/* Scenario 2's user space half: update and delete what the program uses. */
struct s2_map {
	int fd;
	bool hash;	/* delete too; an array element can only be replaced */
};

static void s2_updater(struct worker *w)
{
	struct s2_map *m = w->arg;
	unsigned int seed = 0x5eed1234, rnd;
	struct elem v = {};
	int key, err;

	while (!stopped(w)) {
		rnd = next_rand(&seed);
		key = rnd % 16;
		v.gen++;
		/* an update releases what the old value held, kptrs are
		 * never copied from user space
		 */
		if (m->hash && (rnd & 0x10000))
			err = bpf_map_delete_elem(m->fd, &key);
		else
			err = bpf_map_update_elem(m->fd, &key, &v, BPF_ANY);
		w->runs++;
		if (!err)
			w->ops++;
		else if (errno != ENOENT)	/* deleting what is not there */
			note_error(w, -errno);
	}
}

static int s2(struct result *r, const char *prefix, bool hash)
{
	struct bpf_program *hold, *count;
	struct worker w[2] = {};
	int stop = 0;
	struct kptr_stress *skel;
	struct bpf_map *map;
	struct s2_map m = { .fd = -1, .hash = hash };
	char name[32];
	double t0;

	skel = open_scenario(prefix);
	if (!skel)
		return -1;
	bpf_object__for_each_map(map, skel->obj)
		if (!bpf_map__is_internal(map) && bpf_map__fd(map) >= 0)
			m.fd = bpf_map__fd(map);
	snprintf(name, sizeof(name), "%shold", prefix);
	hold = bpf_object__find_program_by_name(skel->obj, name);
	snprintf(name, sizeof(name), "%scensus", prefix);
	count = bpf_object__find_program_by_name(skel->obj, name);
	if (m.fd < 0 || !hold || !count) {
		printf("  FAIL the object has no map or programs for %s\n", prefix);
		kptr_stress__destroy(skel);
		return -1;
	}
	t0 = now();
	w[0].cpu = 0;
	w[0].body = s2_updater;
	w[0].arg = &m;
	w[1].cpu = 1;
	w[1].prog_fd = bpf_program__fd(hold);
	w[0].stop = &stop;
	w[1].stop = &stop;
	if (start_all(w, 2)) {
		kptr_stress__destroy(skel);
		return -1;
	}
	sleep_for(seconds);
	stop_all(w, 2);
	r->secs = now() - t0;
	if (check_worker("map update/delete", &w[0]) ||
	    check_worker(bpf_program__name(hold), &w[1]))
		r->failed = true;
	r->iterations = w[0].runs + w[1].runs;
	r->ops = w[0].ops + prog_ops(skel->bss);
	printf("  user space: %llu %s, %llu of them changed an element\n",
	       w[0].runs, hash ? "updates and deletes" : "updates", w[0].ops);
	printf("  program runs: %llu\n", w[1].runs);
	print_counters(skel->bss);
	held_at_end(r, census(skel, count), !hash);
	finish(r, skel);
	return 0;
}

static int s2a(struct result *r)
{
	return s2(r, "s2a_", true);
}

static int s2b(struct result *r)
{
	return s2(r, "s2b_", true);
}

static int s2c(struct result *r)
{
	return s2(r, "s2c_", false);
}

/* Scenario 3: LRU eviction storm from programs on both CPUs. */
static int s3(struct result *r)
{
	struct worker w[2] = {};
	int stop = 0;
	struct kptr_stress *skel;
	double t0;
	int i;

	skel = open_scenario("s3_");
	if (!skel)
		return -1;
	t0 = now();
	for (i = 0; i < 2; i++) {
		w[i].cpu = i;
		w[i].prog_fd = bpf_program__fd(skel->progs.s3_storm);
		w[i].stop = &stop;
	}
	if (start_all(w, 2)) {
		kptr_stress__destroy(skel);
		return -1;
	}
	sleep_for(seconds);
	stop_all(w, 2);
	for (i = 0; i < 2; i++) {
		r->iterations += w[i].runs;
		if (check_worker("s3_storm", &w[i]))
			r->failed = true;
	}
	r->secs = now() - t0;
	print_counters(skel->bss);
	printf("  %llu distinct keys into %u entries: at least %llu evictions\n",
	       skel->bss->s3_next_key, bpf_map__max_entries(skel->maps.s3_lru),
	       skel->bss->n_update > bpf_map__max_entries(skel->maps.s3_lru) ?
	       skel->bss->n_update - bpf_map__max_entries(skel->maps.s3_lru) : 0);
	r->ops = prog_ops(skel->bss);
	if (skel->bss->n_update <= 2 * bpf_map__max_entries(skel->maps.s3_lru)) {
		printf("  FAIL too few insertions to evict anything\n");
		r->failed = true;
	}
	held_at_end(r, census(skel, skel->progs.s3_census), false);
	finish(r, skel);
	return 0;
}

/* Scenario 4's user space half: replace inner maps, close the old ones. */
#define S4_OUTER 4		/* as in kptr_stress.bpf.c */
#define S4_REPLACERS 4

struct s4_maps {
	int outer_arr, outer_hash, btf;
	__u32 key_id, value_id;
};

/* Put a fresh inner map at outer[key], then drop our fd of it. */
static int s4_replace(struct s4_maps *m, bool hash, int key)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .btf_fd = m->btf,
		    .btf_key_type_id = m->key_id, .btf_value_type_id = m->value_id);
	int fd, err;

	/* the same BTF as the object's inner map, kptr_ref included: the
	 * outer map only accepts inner maps that match its template
	 */
	fd = bpf_map_create(hash ? BPF_MAP_TYPE_HASH : BPF_MAP_TYPE_ARRAY,
			    hash ? "s4_inner_hash" : "s4_inner_arr", sizeof(int),
			    sizeof(struct elem), hash ? 8 : 4, &opts);
	if (fd < 0)
		return -errno;
	err = bpf_map_update_elem(hash ? m->outer_hash : m->outer_arr, &key, &fd, BPF_ANY);
	if (err)
		err = -errno;
	close(fd);
	return err;
}

static void s4_replacer(struct worker *w)
{
	unsigned int seed = 0xc0ffee + 7919 * w->cpu + (unsigned long)w % 4099;
	struct s4_maps *m = w->arg;
	unsigned int rnd;
	int key, err;

	/* each update of a map-in-map waits for an RCU grace period: more
	 * threads than CPUs, so that they share grace periods
	 */
	while (!stopped(w)) {
		rnd = next_rand(&seed);
		key = rnd % S4_OUTER;
		switch ((rnd >> 8) % 4) {
		case 0:
		case 1:
			err = s4_replace(m, false, key);
			break;
		case 2:
			err = s4_replace(m, true, key);
			break;
		default:
			err = bpf_map_delete_elem(m->outer_hash, &key) ? -errno : 0;
			if (err == -ENOENT)
				err = 1;
			break;
		}
		w->runs++;
		if (!err)
			w->ops++;
		else if (err < 0)
			note_error(w, err);
	}
}

static int s4(struct result *r)
{
	struct worker w[S4_REPLACERS + 2] = {};
	int i, k, nw = S4_REPLACERS + 2, err;
	unsigned long long replaced = 0, runs = 0;
	int stop = 0;
	struct kptr_stress *skel;
	struct s4_maps m = {};
	struct btf *btf;
	double t0;

	skel = open_scenario("s4_");
	if (!skel)
		return -1;
	/* libbpf drops its inner map templates once the outer maps exist:
	 * find the key and value types in the object's BTF instead
	 */
	btf = bpf_object__btf(skel->obj);
	err = btf ? btf__find_by_name_kind(btf, "int", BTF_KIND_INT) : -1;
	m.key_id = err > 0 ? err : 0;
	err = btf ? btf__find_by_name_kind(btf, "elem", BTF_KIND_STRUCT) : -1;
	m.value_id = err > 0 ? err : 0;
	if (!m.key_id || !m.value_id) {
		printf("  FAIL no BTF for the inner maps' key and value\n");
		kptr_stress__destroy(skel);
		return -1;
	}
	m.outer_arr = bpf_map__fd(skel->maps.s4_outer_arr);
	m.outer_hash = bpf_map__fd(skel->maps.s4_outer_hash);
	m.btf = bpf_object__btf_fd(skel->obj);
	for (k = 0; k < S4_OUTER; k++) {
		err = s4_replace(&m, false, k);
		if (!err)
			err = s4_replace(&m, true, k);
		if (err) {
			printf("  FAIL cannot install inner maps: %s\n", strerror(-err));
			kptr_stress__destroy(skel);
			return -1;
		}
	}
	t0 = now();
	for (i = 0; i < nw; i++) {
		w[i].cpu = i % 2;
		w[i].stop = &stop;
		if (i < S4_REPLACERS) {
			w[i].body = s4_replacer;
			w[i].arg = &m;
		} else {
			w[i].prog_fd = bpf_program__fd(skel->progs.s4_store);
		}
	}
	if (start_all(w, nw)) {
		kptr_stress__destroy(skel);
		return -1;
	}
	sleep_for(seconds);
	stop_all(w, nw);
	for (i = 0; i < nw; i++) {
		if (check_worker(i < S4_REPLACERS ? "inner map replacement" : "s4_store",
				 &w[i]))
			r->failed = true;
		r->iterations += w[i].runs;
		if (i < S4_REPLACERS)
			replaced += w[i].ops;
		else
			runs += w[i].runs;
	}
	r->secs = now() - t0;
	r->ops = replaced + prog_ops(skel->bss);
	printf("  user space: %llu inner maps replaced or deleted\n", replaced);
	printf("  program runs: %llu\n", runs);
	print_counters(skel->bss);
	held_at_end(r, -1, false);
	finish(r, skel);
	return 0;
}

/*
 * Scenario 5: drop the last map fds, then the last program fds, while both
 * CPUs are running the programs. Each round loads a fresh object.
 */
static int s5_round(struct result *r, unsigned long long *fdless,
		    unsigned long long *in_flight, struct kptr_stress__bss *sum)
{
	unsigned long long at_close = 0, at_destroy = 0, total = 0;
	int prog_fd, bss_fd, i, key = 0, ret = 0;
	struct kptr_stress__bss bss;
	struct worker w[2] = {};
	int stop = 0;
	struct kptr_stress *skel;
	struct bpf_map *map;
	/* long enough for many runs, short enough for several rounds */
	double phase = seconds / 15 < 0.2 ? 0.2 : seconds / 15 > 2 ? 2 : seconds / 15;

	skel = open_scenario("s5_");
	if (!skel)
		return -1;
	bpf_object__for_each_map(map, skel->obj)
		if (bpf_map__fd(map) >= 0)
			add_id(r, bpf_map__fd(map));
	/* fds of our own, opened by id: the program's and the counters' map */
	prog_fd = bpf_prog_get_fd_by_id(obj_id(bpf_program__fd(skel->progs.s5_store)));
	bss_fd = bpf_map_get_fd_by_id(obj_id(bpf_map__fd(skel->maps.bss)));
	if (prog_fd < 0 || bss_fd < 0) {
		printf("  FAIL cannot open the program or .bss by id: %s\n", strerror(errno));
		kptr_stress__destroy(skel);
		return -1;
	}
	for (i = 0; i < 2; i++) {
		w[i].cpu = i;
		w[i].prog_fd = prog_fd;
		w[i].stop_on_ebadf = true;
		w[i].stop = &stop;
	}
	if (start_all(w, 2)) {
		kptr_stress__destroy(skel);
		close(prog_fd);
		close(bss_fd);
		return -1;
	}
	sleep_for(phase);
	/* closes every map fd and the skeleton's program fd */
	kptr_stress__destroy(skel);
	for (i = 0; i < 2; i++)
		at_destroy += runs_of(&w[i]);
	sleep_for(phase);
	for (i = 0; i < 2; i++)
		at_close += runs_of(&w[i]);
	/* the last fd of the program: runs in flight keep it, and its maps;
	 * nothing opens an fd until the workers are done, so they see EBADF
	 */
	close(prog_fd);
	stop_all(w, 2);
	for (i = 0; i < 2; i++) {
		total += w[i].runs;
		if (check_worker("s5_store", &w[i]))
			ret = -1;
	}
	*fdless += at_close - at_destroy;
	*in_flight += total - at_close;
	r->iterations += total;
	if (bpf_map_lookup_elem(bss_fd, &key, &bss)) {
		printf("  FAIL cannot read the counters: %s\n", strerror(errno));
		ret = -1;
	} else {
		sum->n_xchg_in += bss.n_xchg_in;
		sum->n_xchg_out += bss.n_xchg_out;
		sum->n_old += bss.n_old;
		sum->n_borrow += bss.n_borrow;
		sum->n_borrow_null += bss.n_borrow_null;
		sum->n_update += bss.n_update;
		sum->n_update_err += bss.n_update_err;
		sum->n_miss += bss.n_miss;
		sum->n_acquire_null += bss.n_acquire_null;
	}
	close(bss_fd);
	return ret;
}

static int s5(struct result *r)
{
	unsigned long long fdless = 0, in_flight = 0;
	struct kptr_stress__bss sum = {};
	double t0 = now();
	int rounds = 0;

	while (rounds < 64 && (rounds < 2 || now() - t0 < seconds)) {
		if (s5_round(r, &fdless, &in_flight, &sum)) {
			if (!rounds)
				return -1;
			r->failed = true;
		}
		rounds++;
	}
	r->secs = now() - t0;
	printf("  %d rounds; program runs: %llu, %llu of them with no map fd left,"
	       " %llu in flight when the last program fd was closed\n",
	       rounds, r->iterations, fdless, in_flight);
	print_counters(&sum);
	r->ops = prog_ops(&sum);
	if (!fdless) {
		printf("  FAIL no program ran after the map fds were closed\n");
		r->failed = true;
	}
	return 0;
}

/*
 * kmemleak, when the kernel has it: two scans a moment apart (the docs
 * suggest it, an object seen once may be a false positive), then whatever
 * it lists is a leak. Cleared afterwards so the next scenario starts afresh.
 * kmemleak ignores objects younger than 5 s, so what a scenario leaks late
 * shows up in the next check: main() does a last one after a pause.
 */
static int kmemleak_write(const char *cmd)
{
	int fd = open(KMEMLEAK, O_WRONLY), err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, cmd, strlen(cmd)) < 0)
		err = -errno;
	close(fd);
	return err;
}

static int kmemleak_check(void)
{
	static char buf[1 << 16];
	size_t len = 0;
	ssize_t n;
	int fd, err;

	if (access(KMEMLEAK, F_OK)) {
		printf("  kmemleak: unavailable (no %s), not checked\n", KMEMLEAK);
		return 0;
	}
	err = kmemleak_write("scan");
	if (!err) {
		sleep_for(1.0);
		err = kmemleak_write("scan");
	}
	if (err) {
		printf("  kmemleak: cannot scan (%s), not checked\n", strerror(-err));
		return 0;
	}
	fd = open(KMEMLEAK, O_RDONLY);
	if (fd < 0) {
		printf("  kmemleak: cannot read: %s\n", strerror(errno));
		return 0;
	}
	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = 0;
	if (!len) {
		printf("  kmemleak: no leaks reported\n");
		return 0;
	}
	printf("  FAIL kmemleak reports leaks:\n%s\n", buf);
	kmemleak_write("clear");
	return -1;
}

static const struct {
	const char *label;
	const char *title;
	int (*run)(struct result *r);
} scenarios[] = {
	{ "1", "bpf_kptr_xchg and kptr_get on the same array slots from both CPUs", s1 },
	{ "2a", "updates and deletes from user space against programs storing into"
	  " the elements: hash", s2a },
	{ "2b", "... the same: hash with BPF_F_NO_PREALLOC", s2b },
	{ "2c", "... the same: array (updates only)", s2c },
	{ "3", "LRU eviction storm: distinct keys from both CPUs into a small LRU hash", s3 },
	{ "4", "inner maps replaced in ARRAY_OF_MAPS and HASH_OF_MAPS while programs"
	  " store into them", s4 },
	{ "5", "last map fds, then last program fds, closed while both CPUs run the"
	  " programs", s5 },
};

#define NR_SCENARIOS ((int)ARRAY_SIZE(scenarios))

static int run_scenario(int i)
{
	const char *label = scenarios[i].label;
	static struct result r;
	double t0 = now();

	memset(&r, 0, sizeof(r));
	printf("scenario %s: %s\n", label, scenarios[i].title);
	r.before = refcount();
	if (scenarios[i].run(&r)) {
		printf("scenario %s: FAIL (%.1f s)\n", label, now() - t0);
		return -1;
	}
	settle(&r);
	printf("  iterations %llu, operations %llu in %.2f s\n", r.iterations, r.ops, r.secs);
	printf("  refcount before %d, after %d (waited %.2f s; its %d maps freed after %.2f s)\n",
	       r.before, r.after, r.waited, r.nids, r.freed);
	if (r.alive) {
		printf("  FAIL %d of its maps still exist after %.1f s\n", r.alive, r.waited);
		r.failed = true;
	}
	if (r.after != r.before) {
		printf("  FAIL the refcount did not come back: %+d references leaked\n",
		       r.after - r.before);
		r.failed = true;
	}
	if (kmemleak_check())
		r.failed = true;
	printf("scenario %s: %s (%.1f s)\n", label, r.failed ? "FAIL" : "pass", now() - t0);
	return r.failed ? -1 : 0;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--seconds N] [--only SCENARIO]\n"
		"  --seconds N   run each scenario for N seconds (default 3)\n"
		"  --only S      run only the scenarios whose label starts with S\n"
		"                (1, 2 = 2a 2b 2c, 2b, 3, 4, 5)\n", prog);
	exit(2);
}

int main(int argc, char **argv)
{
	int i, failed = 0, ran = 0;
	bool late_leaks = false;
	const char *only = "";
	double t0 = now();
	char *end;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = strtod(argv[++i], &end);
			if (*end || seconds <= 0)
				usage(argv[0]);
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else {
			usage(argv[0]);
		}
	}
	for (i = 0; i < NR_SCENARIOS; i++)
		if (!strncmp(scenarios[i].label, only, strlen(only)))
			break;
	if (i == NR_SCENARIOS)
		usage(argv[0]);
	ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	/* the threads then take turns on one CPU: the accounting still holds,
	 * but programs and syscalls hardly ever overlap
	 */
	if (ncpus < 2)
		printf("kptr_stress: WARNING only %d CPU online, the races are weak\n",
		       ncpus);
	if (ncpus < 1)
		ncpus = 1;

	ctl = open_scenario("ctl_");
	if (!ctl || refcount() < 0) {
		printf("kptr_stress: cannot load the refcount reader (see libbpf's log)\n");
		return 1;
	}
	printf("kptr_stress: %d CPUs, %.1f s per scenario, refcount %d at start\n",
	       ncpus, seconds, refcount());
	/* leaks from before the test are not ours */
	if (!access(KMEMLEAK, F_OK))
		kmemleak_write("clear");

	for (i = 0; i < NR_SCENARIOS; i++) {
		if (strncmp(scenarios[i].label, only, strlen(only)))
			continue;
		ran++;
		if (run_scenario(i))
			failed++;
	}
	if (!access(KMEMLEAK, F_OK)) {
		printf("after all scenarios, once their objects are old enough for kmemleak:\n");
		sleep_for(6.0);
		late_leaks = kmemleak_check();
	}
	kptr_stress__destroy(ctl);
	printf("kptr_stress: %d of %d scenarios passed%s in %.1f s\n", ran - failed, ran,
	       late_leaks ? ", then kmemleak reported leaks" : "", now() - t0);
	return failed || late_leaks ? 1 : 0;
}
