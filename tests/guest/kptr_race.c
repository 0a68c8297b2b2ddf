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
 * The plain scenario also counts, with tracing programs, what must never
 * happen on any kernel (an element destructor for a hash map without
 * kptrs), and where the kernel has userfaultfd it holds RCU tasks trace
 * grace periods back so that element frees come after their map's free,
 * the race it is about, every time (checked by counting them).
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
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <poll.h>
#include <linux/userfaultfd.h>
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

/* Create and delete an element in each user-only storage map: their frees
 * wait for a tasks trace grace period. Returns how many were deleted.
 */
static int user_storage_churn(struct kptr_race *skel)
{
	int pidfd = syscall(SYS_pidfd_open, getpid(), 0);
	int file = open("/proc/self/status", O_RDONLY);
	int sock = socket(AF_INET, SOCK_DGRAM, 0);
	const struct {
		struct bpf_map *map;
		int key;
	} owners[] = {
		{ skel->maps.plain_user_task_storage, pidfd },
		{ skel->maps.plain_user_inode_storage, file },
		{ skel->maps.plain_user_sk_storage, sock },
	};
	int i, fd, deleted = 0;
	__u64 v = 1;

	for (i = 0; i < 3; i++) {
		fd = bpf_map__fd(owners[i].map);
		if (owners[i].key >= 0 &&
		    !bpf_map_update_elem(fd, &owners[i].key, &v, BPF_NOEXIST) &&
		    !bpf_map_delete_elem(fd, &owners[i].key))
			deleted++;
		else
			printf("  FAIL an element of %s: %s\n", bpf_map__name(owners[i].map),
			       strerror(errno));
		if (owners[i].key >= 0)
			close(owners[i].key);
	}
	return deleted;
}

/* Wait until *count reaches want, for at most a minute */
static bool wait_for(const char *what, volatile __u64 *count, unsigned long long want)
{
	double end = now() + 60;

	while (*count < want && now() < end)
		usleep(10000);
	if (*count >= want)
		return true;
	printf("  FAIL %s: %llu of %llu\n", what, (unsigned long long)*count, want);
	return false;
}

/* A thread whose open() runs watch_block_trace_gp, which then waits in its
 * RCU tasks trace read section for a page fault that user space resolves
 */
struct trace_gp_block {
	int uffd;
	char *page;
	long page_size;
	pthread_t thread;
	bool thread_started;
	struct kptr_race *watch;
};

static void *blocked_open(void *arg)
{
	struct trace_gp_block *b = arg;
	int fd;

	b->watch->bss->watch_block_tid = syscall(SYS_gettid);
	fd = open("/proc/self/status", O_RDONLY);
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* Resolve the fault, let the thread end, and free what the block used */
static void unblock_trace_gp(struct trace_gp_block *b)
{
	struct uffdio_zeropage zero = {
		.range = { .start = (unsigned long)b->page, .len = b->page_size },
	};

	if (b->thread_started) {
		if (ioctl(b->uffd, UFFDIO_ZEROPAGE, &zero))
			printf("  FAIL resolving the fault: %s\n", strerror(errno));
		pthread_join(b->thread, NULL);
	}
	b->watch->bss->watch_holding = 0;
	if (b->page != MAP_FAILED)
		munmap(b->page, b->page_size);
	close(b->uffd);
}

/* Start holding back tasks trace grace periods: 1 when they are held, 0
 * where the kernel has no userfaultfd, -1 on failure.
 */
static int block_trace_gp(struct trace_gp_block *b, struct kptr_race *watch)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct pollfd pfd;
	struct uffd_msg msg;

	b->watch = watch;
	b->thread_started = false;
	b->page = MAP_FAILED;
	b->page_size = sysconf(_SC_PAGESIZE);
	b->uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (b->uffd < 0 && errno == ENOSYS) {
		printf("  no userfaultfd in this kernel: tasks trace callbacks are not held back\n");
		return 0;
	}
	if (b->uffd < 0) {
		printf("  FAIL userfaultfd: %s\n", strerror(errno));
		return -1;
	}
	b->page = mmap(NULL, b->page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	reg.range.start = (unsigned long)b->page;
	reg.range.len = b->page_size;
	if (b->page == MAP_FAILED || ioctl(b->uffd, UFFDIO_API, &api) ||
	    ioctl(b->uffd, UFFDIO_REGISTER, &reg)) {
		printf("  FAIL userfaultfd setup: %s\n", strerror(errno));
		goto fail;
	}
	watch->bss->watch_block_addr = (unsigned long)b->page;
	if (pthread_create(&b->thread, NULL, blocked_open, b)) {
		printf("  FAIL thread\n");
		goto fail;
	}
	b->thread_started = true;
	/* the program is blocked once its fault is reported */
	pfd.fd = b->uffd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 30000) != 1 || read(b->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT) {
		printf("  FAIL the sleepable program did not fault on the page\n");
		goto fail;
	}
	watch->bss->watch_holding = 1;
	return 1;
fail:
	unblock_trace_gp(b);
	return -1;
}

/* Maps without kptrs, freed right after their elements were deleted */
static int scenario_plain(void)
{
	struct kptr_race *watch = open_prefix("watch_");
	unsigned long long rounds = 0, ops = 0, deleted = 0, held_deleted = 0;
	double end = now() + seconds;
	struct trace_gp_block block;
	bool ok = true, held = false;
	struct sockaddr_in a;
	int fd, sock, n;
	socklen_t alen;

	if (!watch)
		return -1;
	if (kptr_race__attach(watch)) {
		printf("  FAIL attach the watch_ programs\n");
		kptr_race__destroy(watch);
		return -1;
	}
	do {
		struct kptr_race *skel = open_prefix("plain_");

		if (!skel) {
			ok = false;
			break;
		}
		skel->bss->test_tgid = getpid();
		if (kptr_race__attach(skel)) {
			printf("  FAIL attach\n");
			kptr_race__destroy(skel);
			ok = false;
			break;
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
		/* The first round's user-only maps are freed while tasks trace
		 * grace periods are held back: their elements' callbacks come
		 * after that, and must not read the maps.
		 */
		if (!rounds) {
			n = block_trace_gp(&block, watch);
			ok &= n >= 0;
			held = n > 0;
		}
		n = user_storage_churn(skel);
		ok &= n == 3;
		deleted += n;
		ops += skel->bss->plain_ops;
		kptr_race__destroy(skel);
		rounds++;
		if (held && rounds == 1) {
			held_deleted = n;
			ok &= wait_for("user-only storage maps freed under the hold",
				       &watch->bss->watch_user_storage_freed, 3);
			ok &= check("user-only elements freed under the hold",
				    watch->bss->watch_user_elem_frees_held, false);
			unblock_trace_gp(&block);
			ok &= check("reads of the blocking program", watch->bss->watch_block_reads, true);
			/* before any new map may take a freed one's address */
			ok &= wait_for("held elements freed after their maps",
				       &watch->bss->watch_late_user_elem_frees, held_deleted);
		}
	} while (ok && now() < end);
	/* every round frees two hash maps and six storage maps, in the
	 * background, and then the elements user space deleted
	 */
	ok &= wait_for("hash maps freed", &watch->bss->watch_plain_htabs_freed, 2 * rounds);
	ok &= wait_for("storage maps freed", &watch->bss->watch_plain_storage_freed, 6 * rounds);
	/* counted by map address, which new maps reuse: a lower bound */
	printf("  %llu maps sets freed with frees pending, %llu program runs, %llu of %llu user-deleted elements freed after their map\n",
	       rounds, ops, (unsigned long long)watch->bss->watch_late_user_elem_frees, deleted);
	ok &= check("program runs", ops, true);
	ok &= check("element destructors run for hash maps without kptrs",
		    watch->bss->watch_nokptr_dtors, false);
	kptr_race__destroy(watch);
	return ok ? 0 : -1;
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
