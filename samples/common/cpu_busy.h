/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The CPU time the machine has been busy, for the streaming benchmarks
 * (kofi_bw and its raw TCP baseline) to report what their clocked part
 * took, and nothing of their set-up and checks.
 */
#ifndef KOFI_SAMPLES_CPU_BUSY_H
#define KOFI_SAMPLES_CPU_BUSY_H

#include <linux/cpumask.h>
#include <linux/kernel_stat.h>

/* All CPUs' busy time so far in ns: /proc/stat's less idle and iowait. */
static inline u64 cpu_busy_ns(void)
{
	struct kernel_cpustat kcs;
	u64 ns = 0;
	int cpu;

	for_each_online_cpu(cpu) {
		kcpustat_cpu_fetch(&kcs, cpu);
		ns += kcs.cpustat[CPUTIME_USER] + kcs.cpustat[CPUTIME_NICE] +
		      kcs.cpustat[CPUTIME_SYSTEM] + kcs.cpustat[CPUTIME_IRQ] +
		      kcs.cpustat[CPUTIME_SOFTIRQ] + kcs.cpustat[CPUTIME_STEAL];
	}
	return ns;
}

#endif
