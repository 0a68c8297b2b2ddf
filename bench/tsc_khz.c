// SPDX-License-Identifier: GPL-2.0
/*
 * Host helper of scripts/bench.sh: print the host's TSC frequency in kHz.
 *
 * The test kernels have no HPET or PM timer the guest can find (no ACPI),
 * so under QEMU TCG they cannot calibrate the TSC and fall back to the
 * jiffies clocksource: 4 ms resolution, useless for BPF_PROG_TEST_RUN's
 * timings. TCG's guest TSC is the host's, so bench.sh boots the guests with
 * tsc_early_khz set to what this measures against CLOCK_MONOTONIC_RAW.
 */
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	unsigned long long c0, c1;
	double t0, t1;

	t0 = now();
	c0 = __rdtsc();
	do
		t1 = now();
	while (t1 - t0 < 0.2);
	c1 = __rdtsc();
	printf("%.0f\n", (c1 - c0) / (t1 - t0) / 1e3);
	return 0;
}
