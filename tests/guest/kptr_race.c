// SPDX-License-Identifier: GPL-2.0
/*
 * kptr race test: the programs of kptr_race.bpf.c take references to tasks
 * and cgroups out of map slots on both CPUs while the slots' objects are
 * dropped by other programs and retired by the kernel (children exit and
 * are reaped, cgroups are removed), and maps without kptrs are freed while
 * their elements' frees are still pending.
 *
 *   kptr_race [--seconds N] [--only tasks|cgroups|plain]
 *
 * A scenario passes when the programs saw no impossible object (see the BPF
 * side), took references and dropped objects, and every slot could be
 * emptied; on a debug kernel KASAN, lockdep and kmemleak watch the rest.
 * Exits 0 only if every scenario run passed.
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
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kptr_race.skel.h"

#define CGROUP_ROOT "/sys/fs/cgroup"

static double seconds = 3.0;
static int ncpus;
static volatile bool stop;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % ncpus, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Only the programs and maps whose names start with prefix */
static struct kptr_race *open_prefix(const char *prefix)
{
	size_t len = strlen(prefix);
	struct kptr_race *skel;
	struct bpf_program *prog;
	struct bpf_map *map;
	int err;

	skel = kptr_race__open();
	if (!skel)
		return NULL;
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, !strncmp(bpf_program__name(prog),
							 prefix, len));
	bpf_object__for_each_map(map, skel->obj)
		bpf_map__set_autocreate(map, bpf_map__is_internal(map) ||
					!strcmp(bpf_map__name(map), "slots") ||
					!strncmp(bpf_map__name(map), prefix, len));
	err = kptr_race__load(skel);
	if (err) {
		printf("  loading the %s programs failed: %s\n", prefix, strerror(-err));
		kptr_race__destroy(skel);
		return NULL;
	}
	return skel;
}

struct racer {
	pthread_t thread;
	int cpu;
	int prog_fd;
	unsigned long long runs;
	int err;
};

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	char pkt[64] = {};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = pkt,
		    .data_size_in = sizeof(pkt), .repeat = 64);

	pin(r->cpu);
	while (!stop) {
		if (bpf_prog_test_run_opts(r->prog_fd, &opts)) {
			r->err = -errno;
			break;
		}
		r->runs += 64;
	}
	return NULL;
}

static int run_syscall(struct bpf_program *prog)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);

	return bpf_prog_test_run_opts(bpf_program__fd(prog), &opts);
}

/* Race the program on every CPU while churn() retires objects */
static int race(struct kptr_race *skel, struct bpf_program *prog,
		void (*churn)(unsigned long long *n), unsigned long long *churned,
		unsigned long long *runs)
{
	struct racer racers[2];
	double end = now() + seconds;
	int i, err = 0;

	stop = false;
	for (i = 0; i < 2; i++) {
		racers[i] = (struct racer){ .cpu = i, .prog_fd = bpf_program__fd(prog) };
		pthread_create(&racers[i].thread, NULL, racer_main, &racers[i]);
	}
	while (now() < end)
		churn(churned);
	stop = true;
	*runs = 0;
	for (i = 0; i < 2; i++) {
		pthread_join(racers[i].thread, NULL);
		*runs += racers[i].runs;
		if (racers[i].err)
			err = racers[i].err;
	}
	if (err)
		printf("  FAIL running %s: %s\n", bpf_program__name(prog), strerror(-err));
	return err;
}

static void fork_children(unsigned long long *n)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	if (pid > 0) {
		waitpid(pid, NULL, 0);
		(*n)++;
	}
}

static void make_cgroups(unsigned long long *n)
{
	char dir[64];

	snprintf(dir, sizeof(dir), CGROUP_ROOT "/kptr_race_%llu", *n % 8);
	if (!mkdir(dir, 0755) && !rmdir(dir))
		(*n)++;
}

static bool check(const char *what, unsigned long long val, bool want_nonzero)
{
	bool ok = want_nonzero ? val > 0 : val == 0;

	if (!ok)
		printf("  FAIL %s: %llu\n", what, val);
	return ok;
}

static int scenario_tasks(void)
{
	struct kptr_race *skel = open_prefix("race_");
	unsigned long long churned = 0, runs;
	bool ok = true;

	if (!skel)
		return -1;
	skel->bss->test_tgid = getpid();
	if (kptr_race__attach(skel)) {
		printf("  FAIL attach\n");
		kptr_race__destroy(skel);
		return -1;
	}
	ok &= !race(skel, skel->progs.race_tasks, fork_children, &churned, &runs);
	ok &= !run_syscall(skel->progs.race_empty);
	printf("  %llu children, %llu program runs: %llu stored, %llu got, %llu empty, %llu dropped, %llu impossible\n",
	       churned, runs, skel->bss->t_stored, skel->bss->t_got, skel->bss->t_empty,
	       skel->bss->t_dropped, skel->bss->t_bad);
	ok &= check("tasks stored", skel->bss->t_stored, true);
	ok &= check("references got", skel->bss->t_got, true);
	ok &= check("tasks dropped", skel->bss->t_dropped, true);
	ok &= check("impossible tasks seen", skel->bss->t_bad, false);
	kptr_race__destroy(skel);
	return ok ? 0 : -1;
}

static int scenario_cgroups(void)
{
	struct kptr_race *skel = open_prefix("race_");
	unsigned long long churned = 0, runs;
	bool ok = true;

	if (!skel)
		return -1;
	skel->bss->test_tgid = getpid();
	skel->bss->cgroup_level = 1;
	if (kptr_race__attach(skel)) {
		printf("  FAIL attach\n");
		kptr_race__destroy(skel);
		return -1;
	}
	ok &= !race(skel, skel->progs.race_cgroups, make_cgroups, &churned, &runs);
	ok &= !run_syscall(skel->progs.race_empty);
	printf("  %llu cgroups, %llu program runs: %llu stored, %llu got, %llu empty, %llu dropped, %llu impossible\n",
	       churned, runs, skel->bss->c_stored, skel->bss->c_got, skel->bss->c_empty,
	       skel->bss->c_dropped, skel->bss->c_bad);
	ok &= check("cgroups stored", skel->bss->c_stored, true);
	ok &= check("references got", skel->bss->c_got, true);
	ok &= check("cgroups dropped", skel->bss->c_dropped, true);
	ok &= check("impossible cgroups seen", skel->bss->c_bad, false);
	kptr_race__destroy(skel);
	return ok ? 0 : -1;
}

/* Maps without kptrs, freed right after their elements were deleted */
static int scenario_plain(void)
{
	double end = now() + seconds;
	unsigned long long rounds = 0, ops = 0;
	struct sockaddr_in a;
	socklen_t alen;
	int fd, sock;

	while (now() < end) {
		struct kptr_race *skel = open_prefix("plain_");

		if (!skel)
			return -1;
		skel->bss->test_tgid = getpid();
		if (kptr_race__attach(skel)) {
			printf("  FAIL attach\n");
			kptr_race__destroy(skel);
			return -1;
		}
		run_syscall(skel->progs.plain_hash_churn);
		fd = open("/proc/self/status", O_RDONLY);
		if (fd >= 0)
			close(fd);
		sock = socket(AF_INET, SOCK_DGRAM, 0);
		if (sock >= 0) {
			alen = sizeof(a);
			getsockname(sock, (void *)&a, &alen);
			close(sock);
		}
		ops += skel->bss->plain_ops;
		kptr_race__destroy(skel);
		rounds++;
	}
	printf("  %llu maps sets freed with frees pending, %llu program runs\n", rounds, ops);
	return check("program runs", ops, true) ? 0 : -1;
}

static const struct {
	const char *label;
	const char *title;
	int (*run)(void);
} scenarios[] = {
	{ "tasks", "kptr_get against xchg and release of exiting tasks, both CPUs", scenario_tasks },
	{ "cgroups", "kptr_get against xchg and release of removed cgroups, both CPUs", scenario_cgroups },
	{ "plain", "maps without kptrs freed while their elements' frees are pending", scenario_plain },
};

int main(int argc, char **argv)
{
	const char *only = "";
	int i, failed = 0, ran = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--seconds N] [--only tasks|cgroups|plain]\n",
				argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpus < 1)
		ncpus = 1;
	for (i = 0; i < (int)(sizeof(scenarios) / sizeof(scenarios[0])); i++) {
		double t0 = now();
		int err;

		if (strncmp(scenarios[i].label, only, strlen(only)))
			continue;
		printf("scenario %s: %s\n", scenarios[i].label, scenarios[i].title);
		err = scenarios[i].run();
		printf("scenario %s: %s (%.1f s)\n", scenarios[i].label,
		       err ? "FAIL" : "pass", now() - t0);
		failed += !!err;
		ran++;
	}
	if (!ran) {
		printf("no scenario matches '%s'\n", only);
		return 2;
	}
	printf("%d of %d scenarios failed\n", failed, ran);
	return failed ? 1 : 0;
}
