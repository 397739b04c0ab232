#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kofi_verbs on the soft RDMA devices siw and rxe, on each node's eth0 (the
# loopback netdev carries no RDMA CM address): a consumer holding the
# provider (rmmod refused), pingpong with private data and every byte
# checked, streaming messages and RMA writes and reads, and the device
# deleted under traffic (the consumer gets errors; nothing hangs or leaks).
# Then rxe across the two VMs: node 0 serves, node 1 connects.
. "$(dirname "$0")/ktap_helpers.sh"
MODDIR=/kofi/modules
own=10.0.2.1$KOFI_NODE

link_active() {
	i=0
	while [ $i -lt 20 ]; do
		rdma link show "$1/1" 2>/dev/null | grep -q 'state ACTIVE' && return 0
		sleep 0.5
		i=$((i + 1))
	done
	return 1
}

link_up() {
	rdma link add "$1" type "$2" netdev eth0 && link_active "$1"
}

# pingpong NAME ARGS...: a pingpong over verbs that must report its rounds.
pingpong() {
	name=$1
	shift
	ktap_expect_ok "$name" insmod $MODDIR/kofi_pingpong.ko prov=verbs timeout_ms=20000 "$@"
	rmmod kofi_pingpong 2>/dev/null
}

ktap_plan 25
insmod $MODDIR/kofi.ko && insmod $MODDIR/kofi_verbs.ko || { ktap_diag "loading failed"; exit 1; }
port=7700
for type in siw rxe; do
	dev=${type}0
	ktap_expect_ok "${type}_link_up" link_up $dev $type
	ktap_expect_ok "${type}_consumer_opens_verbs_objects" insmod $MODDIR/kofi_sample_consumer.ko prov=verbs
	ktap_expect_fail "${type}_verbs_in_use_not_removable" rmmod kofi_verbs
	rmmod kofi_sample_consumer
	for size in 1 4096 1048576; do
		port=$((port + 1))
		iters=20
		[ $size = 1048576 ] && iters=4
		pingpong "${type}_pingpong_$size" mode=both addr=$own port=$port size=$size iters=$iters
	done
	for t in msg write read; do
		port=$((port + 1))
		ktap_expect_ok "${type}_bandwidth_$t" insmod $MODDIR/kofi_bw.ko prov=verbs test=$t \
			addr=$own port=$port size=65536 iters=64 window=8
		rmmod kofi_bw 2>/dev/null
	done
	# The device goes away under a stream of writes: the consumer gets an
	# error, in bounded time.
	port=$((port + 1))
	insmod $MODDIR/kofi_bw.ko prov=verbs test=write addr=$own port=$port size=65536 \
		iters=1000000 window=8 2>/dev/null &
	bw=$!
	sleep 3
	ktap_expect_ok "${type}_link_delete_under_traffic" rdma link delete $dev
	if wait $bw; then
		ktap_not_ok "${type}_traffic_fails_on_removal"
	else
		ktap_ok "${type}_traffic_fails_on_removal"
	fi
	rmmod kofi_bw 2>/dev/null
done

# Across the VMs on rxe.
link_up rxe0 rxe
if [ "$KOFI_NODE" = 0 ]; then
	pingpong "rxe_across_vms_serve_4096" mode=server addr=$own port=7800 size=4096 iters=20
else
	ok=1
	for i in $(seq 1 60); do
		if insmod $MODDIR/kofi_pingpong.ko prov=verbs mode=client addr=$KOFI_PEER port=7800 \
			size=4096 iters=20 timeout_ms=20000 2>/dev/null; then
			ok=0
			rmmod kofi_pingpong
			break
		fi
		sleep 1
	done
	if [ $ok = 0 ]; then ktap_ok "rxe_across_vms_connect_4096"; else ktap_not_ok "rxe_across_vms_connect_4096"; fi
fi
rdma link delete rxe0
ktap_expect_ok "verbs_unloads" rmmod kofi_verbs
ktap_expect_ok "core_unloads" rmmod kofi
ktap_finish
