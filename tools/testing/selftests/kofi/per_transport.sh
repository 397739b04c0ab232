#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs a provider-agnostic KUnit module once per provider and device:
# kofi_sock over IPv4 and IPv6 loopback, kofi_verbs over siw and over rxe on
# eth0. Each run is a KUnit suite named <prefix>_<provider>_<device>; its
# results are the calling script's subtests.
#
# Usage (sourced): per_transport MODULE PREFIX [ports]
#   ports: pass port_base= (a block of fixed ports per run) to the module.
# $KOFI_CASES (debugging): only the cases whose names start with it run
# (the module's only=).
MODDIR=/kofi/modules
. "$(dirname "$0")/rdma_helpers.sh"

per_transport() {
	module=$1
	prefix=$2
	ports=$3
	own=10.0.2.1${KOFI_NODE:-0}
	n=0
	failed=0

	# run LABEL PROV NODE PORT: one run of the suite; prints its KTAP result.
	run() {
		n=$((n + 1))
		results=/sys/kernel/debug/kunit/${prefix}_$1/results
		extra=""
		[ -n "$ports" ] && extra="port_base=$4"
		[ -n "${KOFI_CASES:-}" ] && extra="$extra only=$KOFI_CASES"
		if insmod $MODDIR/$module.ko label="$1" prov="$2" node="$3" $extra &&
			[ -e "$results" ]; then
			grep "^$module " /proc/modules | sed 's/^/kofi-modules: /' >/dev/kmsg
			# Drop the document's header; number its one result as ours.
			sed -e '1,2d' -e "s/^\(not ok\|ok\) 1 /\1 $n /" "$results"
			grep -q '^not ok' "$results" && failed=1
			rmmod $module
		else
			echo "not ok $n ${prefix}_$1"
			failed=1
		fi
	}

	echo "KTAP version 1"
	echo "1..4"
	insmod $MODDIR/kofi.ko && insmod $MODDIR/kofi_sock.ko && insmod $MODDIR/kofi_verbs.ko ||
		{ echo "# loading failed"; return 1; }
	# Where the modules sit, in the kernel log: a kmemleak report comes
	# after they are unloaded, when its backtraces no longer resolve.
	grep '^kofi' /proc/modules | sed 's/^/kofi-modules: /' >/dev/kmsg
	run sock_ipv4 sock 127.0.0.1 7900
	run sock_ipv6 sock ::1 7950
	for type in siw rxe; do
		if link_up ${type}0 $type; then
			run verbs_$type verbs $own $((8000 + 50 * n))
		else
			n=$((n + 1))
			echo "not ok $n ${prefix}_verbs_$type"
			failed=1
		fi
		rdma link delete ${type}0
	done
	rmmod kofi_verbs && rmmod kofi_sock && rmmod kofi && [ $failed = 0 ]
}
