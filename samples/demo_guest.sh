#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make demo`, inside the VM: load the core, let the sample consumer call it,
# unload both. Each step is a KTAP line so the runner can judge the run; the
# `#` lines show the kernel's own words for each step.
. /kofi/tests/ktap_helpers.sh
MODDIR=/kofi/modules

show() { # show the kernel log lines that the last step added
	dmesg | grep -E 'kofi' | tail -n "$1" | sed 's/^/# dmesg: /'
}

ktap_plan 4
ktap_expect_ok "insmod kofi.ko" insmod $MODDIR/kofi.ko
show 1
for p in $MODDIR/kofi_sock.ko $MODDIR/kofi_verbs.ko; do
	[ -e "$p" ] && insmod "$p" && show 1
done
ktap_expect_ok "insmod kofi_sample_consumer.ko (calls fi_version)" insmod $MODDIR/kofi_sample_consumer.ko
show 1
ktap_diag "lsmod:"
lsmod | sed 's/^/#   /'
ktap_expect_ok "rmmod kofi_sample_consumer" rmmod kofi_sample_consumer
show 1
for p in kofi_verbs kofi_sock; do
	[ -e /sys/module/$p ] && rmmod $p
done
ktap_expect_ok "rmmod kofi" rmmod kofi
show 1
ktap_finish
