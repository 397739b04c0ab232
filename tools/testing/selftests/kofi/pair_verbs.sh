#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kofi_verbs across two VMs, on siw and on rxe over their eth0 segment:
# node 0 serves, node 1 connects. The pingpong (private data both ways,
# every byte checked) at 4 KiB and 1 MiB, and streaming RMA writes.
. "$(dirname "$0")/ktap_helpers.sh"
. "$(dirname "$0")/rdma_helpers.sh"
MODDIR=/kofi/modules

# The client retries until the server listens (a connect to a port nobody
# listens on is refused at once).
client() {
	mod=$1
	shift
	retry 60 insmod $MODDIR/$mod.ko prov=verbs mode=client addr=$KOFI_PEER "$@" && rmmod $mod
}

ktap_plan 8
insmod $MODDIR/kofi.ko && insmod $MODDIR/kofi_verbs.ko || { ktap_diag "loading failed"; exit 1; }
port=7800
for type in siw rxe; do
	ktap_expect_ok "${type}_link_up" link_up ${type}0 $type
	for run in kofi_pingpong:4096:20 kofi_pingpong:1048576:4 kofi_bw:65536:32; do
		IFS=: read -r mod size iters <<EOF2
$run
EOF2
		port=$((port + 1))
		extra=timeout_ms=60000
		[ $mod = kofi_bw ] && extra=test=write
		name="${type}_${mod#kofi_}_$size"
		if [ "$KOFI_NODE" = 0 ]; then
			ktap_expect_ok "${name}_serve" insmod $MODDIR/$mod.ko prov=verbs mode=server \
				addr=10.0.2.10 port=$port size=$size iters=$iters $extra
			rmmod $mod 2>/dev/null
		else
			ktap_expect_ok "${name}_connect" client $mod port=$port size=$size iters=$iters $extra
		fi
	done
	rdma link delete ${type}0
done
ktap_expect_ok "verbs_unloads" rmmod kofi_verbs
ktap_finish
