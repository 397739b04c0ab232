#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Providers and the module lifecycle: registration, a consumer using a
# provider, rmmod of a provider in use refused, on-demand loading of a
# provider by name (request_module("kofi-<name>")), clean unload.
. "$(dirname "$0")/ktap_helpers.sh"
MODDIR=/kofi/modules

ktap_plan 14
insmod $MODDIR/kofi.ko || { ktap_diag "insmod kofi.ko failed"; exit 1; }
ktap_expect_ok "provider_registers" insmod $MODDIR/kofi_test_provider.ko
if dmesg | grep -q 'provider "test" registered'; then ktap_ok "registration_logged"; else ktap_not_ok "registration_logged"; fi
ktap_expect_ok "consumer_uses_provider" insmod $MODDIR/kofi_sample_consumer.ko prov=test loopback=1
if dmesg | grep -q 'sent and received "hello through kofi"'; then
	ktap_ok "consumer_moved_data"
else
	dmesg | grep kofi | tail -5 | sed 's/^/# /'
	ktap_not_ok "consumer_moved_data"
fi
# The consumer holds a fabric, domain, EQ, CQ and endpoint of "test".
if grep -Eq '^test +1\.0 +0 +[1-9][0-9]* +1 +1 +1 +0 +1 +1 +0 +0$' /sys/kernel/debug/kofi/providers; then
	ktap_ok "debugfs_shows_open_objects"
else
	sed 's/^/# /' /sys/kernel/debug/kofi/providers
	ktap_not_ok "debugfs_shows_open_objects"
fi
ktap_expect_fail "provider_in_use_not_removable" rmmod kofi_test_provider
rmmod kofi_sample_consumer
ktap_expect_ok "provider_removable_when_unused" rmmod kofi_test_provider

# A provider written in Rust over the safe provider layer.
ktap_expect_ok "rust_provider_registers" insmod $MODDIR/kofi_rtest_provider.ko
dmesg -c >/dev/null
ktap_expect_ok "consumer_uses_rust_provider" insmod $MODDIR/kofi_sample_consumer.ko prov=rtest loopback=1
rmmod kofi_sample_consumer
if dmesg | grep -q 'sent and received "hello through kofi"' && rmmod kofi_rtest_provider; then
	ktap_ok "rust_provider_moved_data_and_unloads"
else
	ktap_not_ok "rust_provider_moved_data_and_unloads"
fi

# A provider loaded and unloaded 30 times while a consumer opens and closes
# its fabric and domain in a loop (reliability.rst, finding 14): each round
# opens both or finds the provider absent, each unload goes through once the
# objects are closed, KASAN sees no stale module. No modprobe meanwhile (an
# empty path), so that only the registry answers.
echo >/proc/sys/kernel/modprobe
dmesg -c >/dev/null
unloads=0
if insmod $MODDIR/kofi_registry_churn.ko prov=test; then
	i=0
	while [ $i -lt 30 ] && insmod $MODDIR/kofi_test_provider.ko; do
		i=$((i + 1))
		sleep 0.05
		tries=0
		while ! rmmod kofi_test_provider 2>/dev/null && [ $tries -lt 500 ]; do
			tries=$((tries + 1))
			sleep 0.01
		done
		lsmod | grep -q '^kofi_test_provider' && break
		unloads=$((unloads + 1))
	done
	rmmod kofi_registry_churn
fi
set -- $(dmesg | sed -n 's/.*kofi_registry_churn: \([0-9]*\) opened, \([0-9]*\) absent, \([0-9]*\) failed.*/\1 \2 \3/p')
ktap_diag "unloads $unloads of 30; rounds: ${1:-?} opened, ${2:-?} absent, ${3:-?} failed"
if [ "$unloads" = 30 ] && [ "${1:-0}" -gt 0 ] && [ "${2:-0}" -gt 0 ] && [ "${3:-1}" = 0 ]; then
	ktap_ok "provider_unloads_race_opens"
else
	dmesg | grep kofi | tail -5 | sed 's/^/# /'
	ktap_not_ok "provider_unloads_race_opens"
fi

# On-demand loading: install the modules where modprobe finds them.
mods=/lib/modules/$(uname -r)
mkdir -p "$mods/extra"
cp $MODDIR/*.ko "$mods/extra/"
depmod 2>/dev/null
echo /bin/modprobe >/proc/sys/kernel/modprobe
ktap_expect_ok "consumer_loads_provider_by_name" insmod $MODDIR/kofi_sample_consumer.ko prov=test
if lsmod | grep -q '^kofi_test_provider'; then ktap_ok "provider_was_loaded_on_demand"; else ktap_not_ok "provider_was_loaded_on_demand"; fi
rmmod kofi_sample_consumer
rmmod kofi_test_provider
ktap_expect_ok "core_unloads" rmmod kofi
ktap_finish
