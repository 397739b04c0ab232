#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make demo`, second part, on two VMs: the pingpong between them over each
# provider present (kofi_sock over TCP; kofi_verbs over rxe on the VMs'
# shared eth0). Node 0 serves, node 1 connects and reports the round trip
# and bandwidth.
. /kofi/tests/ktap_helpers.sh
. /kofi/samples/demo_common.sh
. /kofi/tests/rdma_helpers.sh
MODDIR=/kofi/modules

# client ARGS...: connect until the server listens (refused until then).
client() {
	retry 60 insmod $MODDIR/kofi_pingpong.ko mode=client addr=$KOFI_PEER "$@" &&
		rmmod kofi_pingpong
}

ktap_plan 4
demo_kernel_label
insmod $MODDIR/kofi.ko && insmod $MODDIR/kofi_sock.ko && insmod $MODDIR/kofi_verbs.ko ||
	{ ktap_diag "loading failed"; exit 1; }
ktap_expect_ok "rxe0 on eth0" link_up rxe0 rxe
n=0
for run in sock:65536:20 verbs:65536:20; do
	prov=${run%%:*}
	rest=${run#*:}
	size=${rest%%:*}
	iters=${rest#*:}
	n=$((n + 1))
	if [ "$KOFI_NODE" = 0 ]; then
		ktap_expect_ok "serve pingpong over $prov, $size bytes" insmod $MODDIR/kofi_pingpong.ko \
			prov=$prov mode=server addr=10.0.2.10 port=$((7700 + n)) size=$size iters=$iters \
			timeout_ms=60000
		rmmod kofi_pingpong 2>/dev/null
	else
		ktap_expect_ok "pingpong over $prov across the VMs, $size bytes" client prov=$prov \
			port=$((7700 + n)) size=$size iters=$iters timeout_ms=60000
		dmesg | grep "kofi_pingpong: $prov:" | tail -1 | sed 's/^\[[ 0-9.]*\] /# dmesg: /'
	fi
done
rdma link delete rxe0
ktap_expect_ok "rmmod kofi_verbs kofi_sock kofi" sh -c 'rmmod kofi_verbs && rmmod kofi_sock && rmmod kofi'
ktap_finish
