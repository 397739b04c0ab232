#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kofi_blk across two VMs: node 0 exports its /dev/ram0 with kofi_blkt,
# node 1 reaches it as /dev/kofiblk0, over kofi_sock (IPv4 and IPv6) and
# kofi_verbs on siw and rxe. Node 1 runs fio with crc32c verification
# and ext4 (made, filled, compared, e2fsck clean), checking every byte,
# while node 0 unloads and reloads kofi_blkt under it (node 1 must have
# reconnected), and on siw once more while node 0 deletes its RDMA link and
# adds it again; node 0 checks its side: the export served connections (and
# listened again after its link came back) and they all ended.
. "$(dirname "$0")/ktap_helpers.sh"
. "$(dirname "$0")/rdma_helpers.sh"
. "$(dirname "$0")/blk_helpers.sh"

# conns: the export's connected queues.
conns() { cut -d' ' -f6 $BLKT/exports; }

# connected: the initiator connected to the export (within 120 s).
connected() {
	retry 120 queues_connected
}
queues_connected() { [ "$(conns)" != 0 ]; }
queues_gone() { [ "$(conns)" = 0 ]; }

# listened_again N: kofi_blkt logged more than N times that it listens again.
listened_again() {
	[ "$(dmesg | grep -c 'kofi_blkt: disk0: listening again')" -gt "$1" ]
}

# restart_when_served PROV ADDR PORT: 5 s after the initiator connected
# (within 120 s), kofi_blkt unloaded and loaded again, the export with it.
restart_when_served() {
	connected || return 1
	sleep 5
	rmmod kofi_blkt || return 1
	sleep 2
	insmod $MODDIR/kofi_blkt.ko && blk_export disk0 "$1" "$2" "$3"
}

# link_bounce_when_served DEV TYPE: 5 s after the initiator connected
# (within 120 s), this node's RDMA link deleted and added again 2 s later;
# kofi_blkt listens again (within 30 s).
link_bounce_when_served() {
	connected || return 1
	heard=$(dmesg | grep -c 'kofi_blkt: disk0: listening again')
	sleep 5
	rdma link delete "$1" || return 1
	sleep 2
	link_up "$1" "$2" || return 1
	retry 30 listened_again "$heard"
}

# reconnects: the initiator's reconnections so far (its log).
reconnects() { dmesg | grep -c 'kofiblk0: reconnected'; }

# outage SECONDS: 8 s after the initiator connected (within 120 s; it
# starts writing at once: brd counts no I/O to watch), this node's link
# goes down for SECONDS, then up again.
outage() {
	connected || return 1
	sleep 8
	# IPv6 would drop the link's addresses with it: the suites after this
	# one reach this node at fd00::10.
	echo 1 >/proc/sys/net/ipv6/conf/eth0/keep_addr_on_down || return 1
	ip link set eth0 down || return 1
	sleep "$1"
	ip link set eth0 up || return 1
	# Usable again once duplicate address detection is over (within 10 s).
	i=0
	while ip -6 addr show dev eth0 | grep -q tentative; do
		[ $i -lt 100 ] || return 1
		sleep 0.1
		i=$((i + 1))
	done
}

# served: the initiator connected (within 120 s) and went again (within
# 600 s, the length of node 1's checks).
served() {
	connected || return 1
	retry 600 queues_gone
}

if [ "$KOFI_NODE" = 0 ]; then ktap_plan 20; else ktap_plan 33; fi
insmod $MODDIR/kofi.ko && insmod $MODDIR/kofi_sock.ko && insmod $MODDIR/kofi_verbs.ko || {
	ktap_diag "loading failed"
	exit 1
}
if [ "$KOFI_NODE" = 0 ]; then insmod $MODDIR/kofi_blkt.ko; else insmod $MODDIR/kofi_blk.ko; fi

# transport LABEL PROV ADDR PEER-ADDR PORT [RDMA-TYPE]: node 0 restarts the
# target under node 1's checks, or with RDMA-TYPE deletes its link and adds
# it again.
transport() {
	l=$1 p=$2 port=$5
	if [ "$KOFI_NODE" = 0 ]; then
		ktap_expect_ok "${l}_export" blk_export disk0 $p $3 $port
		if [ -n "$6" ]; then
			ktap_expect_ok "${l}_link_bounced" link_bounce_when_served ${6}0 $6
		else
			ktap_expect_ok "${l}_target_restarted" restart_when_served $p $3 $port
		fi
		ktap_expect_ok "${l}_served" served
		echo disk0 >$BLKT/remove_export
	else
		# A stalled RMA (blk.rst, Open) costs io_timeout; a request rides
		# out several within reconnect_timeout. The load is light enough
		# that no good request takes 15 s. Node 0 restarts the target (or
		# bounces its link) during the checks: they must pass through it.
		before=$(reconnects)
		ktap_expect_ok "${l}_device_added" retry 90 blk_add disk0 $p $4 $port queues=2 \
			depth=8 io_timeout=15 reconnect_timeout=90
		ktap_expect_ok "${l}_fio_random_verify" blk_fio rand --rw=randwrite --bsrange=4k-256k \
			--size=8M --iodepth=4 --numjobs=2 --offset_increment=48M
		ktap_expect_ok "${l}_ext4" blk_ext4
		ktap_expect_ok "${l}_reconnected" [ "$(reconnects)" -gt "$before" ]
		ktap_expect_ok "${l}_device_removed" blk_remove
	fi
}

transport sock_ipv4 sock 10.0.2.10 "$KOFI_PEER" 4450
transport sock_ipv6 sock fd00::10 "$KOFI_PEER6" 4451
link_up siw0 siw || ktap_diag "siw0 did not come up"
transport verbs_siw verbs 10.0.2.10 "$KOFI_PEER" 4453
transport verbs_siw_link verbs 10.0.2.10 "$KOFI_PEER" 4455 siw
rdma link delete siw0
link_up rxe0 rxe || ktap_diag "rxe0 did not come up"
transport verbs_rxe verbs 10.0.2.10 "$KOFI_PEER" 4452
transport verbs_rxe_link verbs 10.0.2.10 "$KOFI_PEER" 4456 rxe
rdma link delete rxe0

# The target's link down for longer than the initiator waits (io_timeout,
# then reconnect_timeout): node 1's writes fail with EIO in bounded time, not
# a hang, and the dead device goes; node 0's link comes back after.
if [ "$KOFI_NODE" = 0 ]; then
	ktap_expect_ok "outage_export" blk_export disk0 sock 10.0.2.10 4454
	ktap_expect_ok "outage_link_down_75s" outage 75
	echo disk0 >$BLKT/remove_export
else
	ktap_expect_ok "outage_device_added" retry 90 blk_add disk0 sock "$KOFI_PEER" 4454 \
		queues=2 depth=8 io_timeout=10 reconnect_timeout=20
	ktap_expect_ok "outage_fails_io_in_time" blk_io_fails_in_time 90
	ktap_expect_ok "outage_device_removed" blk_remove
fi
if [ "$KOFI_NODE" = 0 ]; then rmmod kofi_blkt; else rmmod kofi_blk; fi
rmmod kofi_verbs && rmmod kofi_sock && rmmod kofi
ktap_finish
