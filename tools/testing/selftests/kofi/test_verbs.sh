#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kofi_verbs as a module, on siw and on rxe on eth0: a consumer holding the
# provider (rmmod refused), bad peers (raw verbs sending malformed messages,
# answers about a rendezvous message never announced, or a close that took
# more than kofi sent: kofi disconnects each), the pingpong sample (private
# data, every byte checked), streaming messages and RMA writes and reads,
# and the device deleted under traffic, under a listener, and under a
# consumer holding a connection request (the consumer gets errors in bounded
# time; nothing hangs or leaks, and the provider unloads after).
. "$(dirname "$0")/ktap_helpers.sh"
. "$(dirname "$0")/rdma_helpers.sh"
MODDIR=/kofi/modules
own=10.0.2.1${KOFI_NODE:-0}

# bad_peer KIND PORT: a raw verbs client sends a malformed message to a
# kofi_pingpong server; it succeeds when kofi disconnects it.
bad_peer() {
	for i in 1 2 3 4 5; do
		if insmod $MODDIR/kofi_raw_verbs.ko test=garbage_$1 addr=$own port=$2 size=64; then
			rmmod kofi_raw_verbs
			return 0
		fi
		sleep 1
	done
	return 1
}

# verbs_endpoints: kofi_verbs' open endpoints, as debugfs counts them.
verbs_endpoints() {
	awk '$1 == "verbs" { print $7; found = 1 } END { if (!found) print 0 }' \
		/sys/kernel/debug/kofi/providers
}

ktap_plan 44
insmod $MODDIR/kofi.ko && insmod $MODDIR/kofi_verbs.ko || { ktap_diag "loading failed"; exit 1; }
port=7700
for type in siw rxe; do
	dev=${type}0
	ktap_expect_ok "${type}_link_up" link_up $dev $type
	ktap_expect_ok "${type}_consumer_opens_verbs_objects" insmod $MODDIR/kofi_sample_consumer.ko prov=verbs
	ktap_expect_fail "${type}_verbs_in_use_not_removable" rmmod kofi_verbs
	rmmod kofi_sample_consumer
	for kind in short op cts wfin close; do
		port=$((port + 1))
		insmod $MODDIR/kofi_pingpong.ko prov=verbs mode=server addr=$own port=$port size=64 \
			iters=1 timeout_ms=8000 2>/dev/null &
		srv=$!
		ktap_expect_ok "${type}_bad_peer_${kind}_disconnected" bad_peer $kind $port
		wait $srv
		rmmod kofi_pingpong 2>/dev/null
	done
	for size in 1 4096 1048576; do
		port=$((port + 1))
		iters=20
		[ $size = 1048576 ] && iters=4
		ktap_expect_ok "${type}_pingpong_$size" insmod $MODDIR/kofi_pingpong.ko prov=verbs \
			mode=both addr=$own port=$port size=$size iters=$iters timeout_ms=20000
		rmmod kofi_pingpong 2>/dev/null
	done
	for t in msg write read; do
		port=$((port + 1))
		ktap_expect_ok "${type}_bandwidth_$t" insmod $MODDIR/kofi_bw.ko prov=verbs test=$t \
			addr=$own port=$port size=65536 iters=64 window=8
		rmmod kofi_bw 2>/dev/null
	done
	# The device goes away under a stream of writes: once both endpoints
	# are up (debugfs counts them), the link goes, and the stream must fail
	# with a connection's error (the client's first), not any error.
	port=$((port + 1))
	dmesg -c >/dev/null
	insmod $MODDIR/kofi_bw.ko prov=verbs test=write addr=$own port=$port size=65536 \
		iters=1000000 window=8 2>/dev/null &
	bw=$!
	i=0
	while [ $i -lt 60 ] && [ "$(verbs_endpoints)" -lt 2 ]; do
		sleep 0.5
		i=$((i + 1))
	done
	sleep 1
	ktap_expect_ok "${type}_link_delete_under_traffic" rdma link delete $dev
	if wait $bw; then
		ktap_not_ok "${type}_traffic_fails_on_removal"
	else
		err=$(dmesg | sed -n 's/.*kofi_bw: client: .*(\(-[0-9]*\))$/\1/p' | head -1)
		case "$err" in
		-5|-103|-104|-107|-108|-125) ktap_ok "${type}_traffic_fails_on_removal" ;;
		*)
			ktap_diag "the stream failed with '$err', not a connection's error"
			ktap_not_ok "${type}_traffic_fails_on_removal"
			;;
		esac
	fi
	rmmod kofi_bw 2>/dev/null
	# A server listening on the device's address does not hold its removal.
	ktap_expect_ok "${type}_link_up_again" link_up $dev $type
	port=$((port + 1))
	insmod $MODDIR/kofi_pingpong.ko prov=verbs mode=server addr=$own port=$port size=64 \
		iters=1 timeout_ms=8000 2>/dev/null &
	srv=$!
	sleep 2
	ktap_expect_ok "${type}_link_delete_with_listener" timeout 10 rdma link delete $dev
	wait $srv
	rmmod kofi_pingpong 2>/dev/null
	# Nor does a consumer holding a connection request unanswered (rdma_cm
	# waits for every id on the device): answered after, the request
	# fails with -ENODEV, and the listener heard of the removal.
	ktap_expect_ok "${type}_link_up_for_held_request" link_up $dev $type
	port=$((port + 1))
	ktap_expect_ok "${type}_request_held" insmod $MODDIR/kofi_held_request.ko \
		addr=$own port=$port
	ktap_expect_ok "${type}_link_delete_with_request_held" timeout 20 rdma link delete $dev
	dmesg -c >/dev/null
	rmmod kofi_held_request 2>/dev/null
	held=$(dmesg | sed -n 's/.*kofi_held_request: endpoint \(-*[0-9]*\), listener \(-*[0-9]*\)$/\1 \2/p')
	if [ "$held" = "-19 -19" ]; then
		ktap_ok "${type}_held_request_answers_enodev"
	else
		ktap_diag "endpoint on the held request, listener's error: '$held' (want -19 -19)"
		ktap_not_ok "${type}_held_request_answers_enodev"
	fi
done
ktap_expect_ok "verbs_unloads" rmmod kofi_verbs
ktap_expect_ok "core_unloads" rmmod kofi
ktap_finish
