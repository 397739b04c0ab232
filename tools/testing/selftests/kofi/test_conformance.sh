#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The conformance suite (kofi_conformance.ko) once per provider and device:
# kofi_sock over IPv4 and IPv6 loopback, kofi_verbs over siw and over rxe on
# eth0. Each run is a KUnit suite named conformance_<provider>_<device>; its
# results are this script's subtests.
MODDIR=/kofi/modules

own=10.0.2.1${KOFI_NODE:-0}

link_active() {
	i=0
	while [ $i -lt 20 ]; do
		rdma link show "$1/1" 2>/dev/null | grep -q 'state ACTIVE' && return 0
		sleep 0.5
		i=$((i + 1))
	done
	return 1
}

# run LABEL PROV NODE PORT: one run of the suite; prints its KTAP result.
n=0
failed=0
run() {
	n=$((n + 1))
	results=/sys/kernel/debug/kunit/conformance_$1/results
	if insmod $MODDIR/kofi_conformance.ko label="$1" prov="$2" node="$3" port_base="$4" &&
		[ -e "$results" ]; then
		# Drop the document's header; number its one result as ours.
		sed -e '1,2d' -e "s/^\(not ok\|ok\) 1 /\1 $n /" "$results"
		grep -q '^not ok' "$results" && failed=1
		rmmod kofi_conformance
	else
		echo "not ok $n conformance_$1"
		failed=1
	fi
}

echo "KTAP version 1"
echo "1..4"
insmod $MODDIR/kofi.ko && insmod $MODDIR/kofi_sock.ko && insmod $MODDIR/kofi_verbs.ko ||
	{ echo "# loading failed"; exit 1; }
run sock_ipv4 sock 127.0.0.1 7900
run sock_ipv6 sock ::1 7950
for type in siw rxe; do
	if rdma link add ${type}0 type $type netdev eth0 && link_active ${type}0; then
		run verbs_$type verbs $own $((8000 + 50 * n))
	else
		n=$((n + 1))
		echo "not ok $n conformance_verbs_$type"
		failed=1
	fi
	rdma link delete ${type}0
done
rmmod kofi_verbs && rmmod kofi_sock && rmmod kofi && [ $failed = 0 ]
