#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Module lifecycle of the core and a C consumer: load, the consumer's call
# through the KOFI namespace, the core pinned while a consumer uses it, clean
# unload.
. "$(dirname "$0")/ktap_helpers.sh"
MODDIR=/kofi/modules

refcnt() { cat "/sys/module/$1/refcnt" 2>/dev/null; }

ktap_plan 8
ktap_expect_fail "consumer_needs_core" insmod $MODDIR/kofi_sample_consumer.ko
ktap_expect_ok "core_loads" insmod $MODDIR/kofi.ko
if [ "$(refcnt kofi)" = 0 ]; then ktap_ok "core_unused_after_load"; else ktap_not_ok "core_unused_after_load"; fi
ktap_expect_ok "consumer_loads" insmod $MODDIR/kofi_sample_consumer.ko
if dmesg | grep -Eq 'kofi_sample_consumer: fi_version\(\) = 1\.[0-9]+'; then
	ktap_ok "consumer_called_core"
else
	ktap_not_ok "consumer_called_core"
fi
if [ "$(refcnt kofi)" = 1 ]; then ktap_ok "core_pinned_by_consumer"; else ktap_not_ok "core_pinned_by_consumer"; fi
ktap_expect_fail "core_in_use_not_removable" rmmod kofi
rmmod kofi_sample_consumer
ktap_expect_ok "core_unloads" rmmod kofi
ktap_finish
