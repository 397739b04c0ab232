#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# What every part of `make demo` says before its figures: the kernel they
# come from, so that nobody reads a debug kernel's figures as speeds.

# demo_kernel_label: a KTAP comment naming the kernel and what it is.
demo_kernel_label() {
	if [ -e /sys/kernel/debug/kmemleak ]; then
		kind="kofi's debug build: KASAN, lockdep, kmemleak"
		meaning="they show the path works, not its speed; make bench measures on the perf kernel"
	else
		kind="kofi's perf build"
		meaning="under emulation, compare them with each other, not with hardware"
	fi
	ktap_diag "figures below: Linux $(uname -r) ($kind) under QEMU TCG on $(nproc) CPU(s): $meaning"
}
