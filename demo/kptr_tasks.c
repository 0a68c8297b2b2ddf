// SPDX-License-Identifier: GPL-2.0
/*
 * Task cache, user side: fork a few workers while kptr_tasks.bpf.c caches
 * them, let two of them run and exit, keep one alive, then free the map, and
 * print what the BPF side saw through its cached task references. Every
 * claim is checked; the exit status says whether they all held, so the demo
 * is a test too.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>
#include "kptr_tasks.h"
#include "kptr_tasks.skel.h"

#define NR_WORKERS 3

static int failures;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("  [%s] ", ok ? " ok " : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failures += !ok;
}

/* Burn some CPU time and sleep a little, so the scheduler switches us out. */
static void work(int rounds)
{
	volatile unsigned long x = 0;

	for (int i = 0; i < rounds; i++) {
		for (unsigned long j = 0; j < 2000000; j++)
			x += j;
		usleep(2000);
	}
}

/* A worker names itself after forking: the cache sees the new name. */
static pid_t spawn(int n, int cmd_fd, int ack_fd)
{
	pid_t pid = fork();
	char name[32], c;

	if (pid)
		return pid;
	/* A fork inherits every fd: the BPF program, link and map fds would
	 * keep the map alive as long as the survivor lives, and the parent's
	 * pipe ends would hide the EOF it waits for. Keep only our pipe ends.
	 */
	for (int fd = 3; fd < 1024; fd++)
		if (fd != cmd_fd && fd != ack_fd)
			close(fd);
	snprintf(name, sizeof(name), "worker-%d", n);
	prctl(PR_SET_NAME, name);
	work(5);
	if (cmd_fd < 0)
		_exit(0);
	/* the survivor: answer each command with a getpgid() for the probe */
	while (read(cmd_fd, &c, 1) == 1) {
		syscall(SYS_getpgid, 0);
		if (write(ack_fd, &c, 1) != 1)
			break;
	}
	_exit(0);
}

/* The survivor's rcu_users, as the probe program of @skel sees it. */
static int survivor_users(struct kptr_tasks *skel, pid_t pid, int cmd_fd, int ack_fd)
{
	char c = 'p';

	skel->data->probe_users = -1;
	skel->bss->probe_tgid = pid;
	if (write(cmd_fd, &c, 1) != 1 || read(ack_fd, &c, 1) != 1)
		return -1;
	return skel->data->probe_users;
}

int main(void)
{
	int cmd[2], ack[2], i, users, status;
	struct kptr_tasks *skel, *probe;
	pid_t pids[NR_WORKERS];
	struct report *r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("kptr_tasks: cache the tasks this process forks as referenced kptrs\n");
	printf("  hooks: tp_btf/sched_process_fork (cache), tp_btf/sched_switch (read),\n"
	       "         tp_btf/sched_process_exit (release)\n");
	skel = kptr_tasks__open_and_load();
	if (!skel) {
		printf("  [FAIL] the kernel refused the task cache programs\n");
		return 1;
	}
	probe = kptr_tasks__open_and_load();
	if (!probe || kptr_tasks__attach(skel) ||
	    !bpf_program__attach(probe->progs.probe_users_count) ||
	    pipe(cmd) || pipe(ack)) {
		printf("  [FAIL] setup\n");
		return 1;
	}
	skel->bss->watched_tgid = getpid();

	for (i = 0; i < NR_WORKERS; i++)
		pids[i] = spawn(i, i == NR_WORKERS - 1 ? cmd[0] : -1, ack[1]);
	for (i = 0; i < NR_WORKERS - 1; i++)
		waitpid(pids[i], &status, 0);
	skel->bss->watched_tgid = 0;

	printf("\nwhat the BPF programs saw through the cached references:\n");
	printf("  %-6s %-10s %-8s %-9s %-12s %s\n", "pid", "comm", "switches",
	       "runtime", "rcu_users", "state");
	for (i = 0; i < NR_WORKERS; i++) {
		r = &skel->bss->reports[i];
		printf("  %-6d %-10s %-8d %6.1fms  %-12d %s\n", r->pid, r->comm,
		       r->switches, r->runtime_ns / 1e6, r->users_cached,
		       r->exited ? "exited, reference released" : "alive, cached");
	}
	printf("\nchecks:\n");
	check(skel->bss->errors == 0 && skel->bss->nr_children == NR_WORKERS,
	      "%d forks cached, %d errors", skel->bss->nr_children, skel->bss->errors);
	for (i = 0; i < NR_WORKERS; i++) {
		char want[32];

		r = &skel->bss->reports[i];
		snprintf(want, sizeof(want), "worker-%d", i);
		check(r->pid == pids[i], "worker %d cached under its pid %d", i, pids[i]);
		check(r->switches > 0 && r->runtime_ns > 0 && !strcmp(r->comm, want),
		      "worker %d read through the cache on later events: comm %s, %d switches",
		      i, r->comm, r->switches);
		check(r->exited == (i < NR_WORKERS - 1), "worker %d %s", i,
		      i < NR_WORKERS - 1 ? "released when it exited" : "still cached");
	}
	check(bpf_map_get_next_key(bpf_map__fd(skel->maps.cache), NULL, &i) == 0 &&
	      i == pids[NR_WORKERS - 1], "only the survivor left in the map");

	users = survivor_users(probe, pids[NR_WORKERS - 1], cmd[1], ack[0]);
	check(users == 3, "survivor's rcu_users while cached: %d (its own 2 + the map's)",
	      users);
	kptr_tasks__destroy(skel);
	/* the map goes once the detached programs are freed, after RCU (tasks)
	 * grace periods, and then on a workqueue: slow under emulation
	 */
	for (i = 0; i < 600; i++) {
		users = survivor_users(probe, pids[NR_WORKERS - 1], cmd[1], ack[0]);
		if (users == 2)
			break;
		usleep(50000);
	}
	if (users == 2)
		printf("  map freed after %.2fs\n", i * 0.05);
	check(users == 2, "survivor's rcu_users after the map was freed: %d", users);
	close(cmd[1]);
	kill(pids[NR_WORKERS - 1], SIGKILL);
	waitpid(pids[NR_WORKERS - 1], &status, 0);
	kptr_tasks__destroy(probe);

	printf("\n%s\n", failures ? "kptr_tasks: FAILED" : "kptr_tasks: all checks passed");
	return failures ? 1 : 0;
}
