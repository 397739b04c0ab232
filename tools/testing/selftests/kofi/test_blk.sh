#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kofi_blk and kofi_blkt in one VM, per provider and device: kofi_sock over
# IPv4 and IPv6 loopback, kofi_verbs over siw and rxe on eth0. /dev/ram0
# (brd) is exported and reached as /dev/kofiblk0 with two queues: fio with
# crc32c verification (random 4 KiB to 1 MiB at depth 32, sequential), the
# bytes checked on the backing device, ext4 made, filled, read back and
# checked, the target's module reloaded and the network device under both
# ends (lo, or eth0 for siw and rxe) taken down and up in the middle of a fio
# run (on siw and rxe, the RDMA device deleted and added again too).
# Then, once: bad configuration refused with its errno, the initiator held
# while a filesystem is mounted, the target gone for good (fio fails soon
# after the reconnect timeout), the device removed under I/O, and a hostile
# peer on either side (kofi_blk_hostile.ko).
. "$(dirname "$0")/ktap_helpers.sh"
. "$(dirname "$0")/rdma_helpers.sh"
. "$(dirname "$0")/blk_helpers.sh"

own=10.0.2.1${KOFI_NODE:-0}
ktap_plan 63
insmod $MODDIR/kofi.ko && insmod $MODDIR/kofi_sock.ko && insmod $MODDIR/kofi_verbs.ko &&
	insmod $MODDIR/kofi_blkt.ko && insmod $MODDIR/kofi_blk.ko ||
	{ ktap_diag "loading failed"; exit 1; }

# transport LABEL PROV ADDR PORT NETDEV [RDMA-TYPE]: the checks of one
# transport (10 tests, 11 on an RDMA device).
transport() {
	l=$1 p=$2 a=$3 o=$4 dev=$5 type=$6
	ktap_expect_ok "${l}_export" blk_export disk0 $p $a $o
	ktap_expect_ok "${l}_device_added" blk_add disk0 $p $a $o queues=2 depth=32 \
		reconnect_timeout=20
	ktap_expect_ok "${l}_size_is_backing_size" blk_same_size kofiblk0 ram0
	ktap_expect_ok "${l}_fio_random_verify" blk_fio rand --rw=randwrite --bsrange=4k-1m \
		--size=16M --iodepth=32 --numjobs=2 --offset_increment=48M
	ktap_expect_ok "${l}_fio_sequential_verify" blk_fio seq --rw=write --bs=128k --size=16M --iodepth=8
	ktap_expect_ok "${l}_bytes_reach_backing_device" blk_bytes_reach_backing
	ktap_expect_ok "${l}_ext4" blk_ext4
	ktap_expect_ok "${l}_target_restart_resumes" blk_target_restart $p $a $o
	ktap_expect_ok "${l}_network_down_resumes" blk_net_bounce $dev
	[ -z "$type" ] ||
		ktap_expect_ok "${l}_link_delete_resumes" blk_link_bounce ${type}0 $type
	ktap_expect_ok "${l}_device_removed" blk_remove
	echo disk0 >$BLKT/remove_export
}

transport sock_ipv4 sock 127.0.0.1 4420 lo
transport sock_ipv6 sock ::1 4421 lo
for type in siw rxe; do
	if link_up ${type}0 $type; then
		transport verbs_$type verbs $own 4422 eth0 $type
	else
		for t in export device_added size_is_backing_size fio_random_verify \
			fio_sequential_verify bytes_reach_backing_device ext4 \
			target_restart_resumes network_down_resumes link_delete_resumes \
			device_removed; do
			ktap_not_ok "verbs_${type}_$t"
		done
	fi
	rdma link delete ${type}0
done

# Bad configuration: each refused with the errno that says why.
blk_export disk0 sock 127.0.0.1 4430
expect_errno() {
	want=$1
	shift
	out=$("$@" 2>&1) && { echo "accepted"; return 1; }
	case "$out" in *"$want"*) return 0 ;; esac
	echo "$out"
	return 1
}
add() { echo "$*" >$BLK/add_device; }
ktap_expect_ok "refuses_unknown_provider" expect_errno "No data available" \
	add export=disk0 provider=nosuch addr=127.0.0.1 port=4430
ktap_expect_ok "refuses_bad_address" expect_errno "No data available" \
	add export=disk0 provider=sock addr=127.0.0.300 port=4430
ktap_expect_ok "refuses_missing_export" expect_errno "No such file or directory" \
	add export=nosuch provider=sock addr=127.0.0.1 port=4430
ktap_expect_ok "refuses_nothing_listening" expect_errno "Connection refused" \
	add export=disk0 provider=sock addr=127.0.0.1 port=4439
ktap_expect_ok "refuses_missing_key" expect_errno "Invalid argument" \
	add export=disk0 provider=sock addr=127.0.0.1
ktap_expect_ok "refuses_unknown_key" expect_errno "Invalid argument" \
	add export=disk0 provider=sock addr=127.0.0.1 port=4430 colour=blue
ktap_expect_ok "refuses_too_deep" expect_errno "Numerical result out of range" \
	add export=disk0 provider=sock addr=127.0.0.1 port=4430 depth=1000
ktap_expect_ok "target_refuses_missing_device" expect_errno "No such file or directory" \
	blk_export disk1 sock 127.0.0.1 4431 /dev/nosuch
ktap_expect_ok "target_refuses_same_name" expect_errno "File exists" \
	blk_export disk0 sock 127.0.0.1 4432

# In use: a mounted filesystem holds kofi_blk; the target is not held.
blk_add disk0 sock 127.0.0.1 4430 reconnect_timeout=5
mkfs.ext4 -F -q /dev/kofiblk0 >/dev/null 2>&1 && mount -t ext4 /dev/kofiblk0 /mnt/kofiblk
ktap_expect_fail "initiator_in_use_not_removable" rmmod kofi_blk
umount /mnt/kofiblk
ktap_expect_ok "target_gone_fails_io_in_time" blk_target_gone
ktap_expect_ok "dead_device_removed" blk_remove

insmod $MODDIR/kofi_blkt.ko && blk_export disk0 sock 127.0.0.1 4433
blk_add disk0 sock 127.0.0.1 4433
ktap_expect_ok "device_removed_under_io" blk_remove_busy
echo disk0 >$BLKT/remove_export

# A hostile initiator: bad handshakes and commands get their documented
# answers from kofi_blkt, broken connections end (kofi_blk_hostile checks).
blk_export disk0 sock 127.0.0.1 4470
hostile_initiator() {
	insmod $MODDIR/kofi_blk_hostile.ko mode=initiator port=4470 && rmmod kofi_blk_hostile
}
ktap_expect_ok "target_answers_hostile_initiator" hostile_initiator
echo disk0 >$BLKT/remove_export

# A hostile target: each kind of wrong answer ends in EIO in bounded time.
hostile_target() {
	insmod $MODDIR/kofi_blk_hostile.ko mode=target answer=$1 port=$2 || return 1
	start=$(date +%s)
	ok=0
	# The disk's first read (its partition scan) meets the wrong answers too.
	blk_add disk0 sock 127.0.0.1 $2 queues=1 depth=4 reconnect_timeout=3 ||
		{ echo "not added"; ok=1; }
	if [ $ok = 0 ]; then
		dd if=/dev/kofiblk0 of=/dev/null bs=4k count=1 iflag=direct 2>/dev/null &&
			{ echo "the read succeeded"; ok=1; }
		took=$(($(date +%s) - start))
		[ $took -lt 60 ] || { echo "took $took s"; ok=1; }
		blk_remove || { echo "not removed"; ok=1; }
	fi
	rmmod kofi_blk_hostile || { echo "hostile module stays"; ok=1; }
	return $ok
}
port=4471
for a in badtag short stalegen status shortdata; do
	ktap_expect_ok "initiator_survives_$a" hostile_target $a $port
	port=$((port + 1))
done
# A target that answers every command twice: the first answer ends the
# command (an inline write's once its send, from the request's pages, has
# completed too, whichever comes first), the second ends the connection; an
# inline write ends either way, in bounded time.
lost_count() { dmesg | grep -c 'kofi_blk: queue 0: connection lost'; }
lost_more_than() { [ "$(lost_count)" -gt "$1" ]; }
# The disk's first reads (its partition scan) are over: live, no loss in 1 s.
lost_settled() {
	n=$(lost_count)
	sleep 1
	[ "$(lost_count)" = "$n" ] && grep -q 'state=live' $BLK/devices
}
hostile_target_twice() {
	insmod $MODDIR/kofi_blk_hostile.ko mode=target answer=twice port=$1 || return 1
	ok=0
	blk_add disk0 sock 127.0.0.1 $1 queues=1 depth=4 reconnect_timeout=3 ||
		{ echo "not added"; ok=1; }
	if [ $ok = 0 ]; then
		every 0 20 lost_settled || { echo "the scan's reconnections go on"; ok=1; }
		lost=$(lost_count)
		start=$(date +%s)
		head -c 4096 /dev/urandom >/tmp/twice.blk
		dd if=/tmp/twice.blk of=/dev/kofiblk0 bs=4k count=1 oflag=direct 2>/dev/null
		took=$(($(date +%s) - start))
		[ $took -lt 60 ] || { echo "took $took s"; ok=1; }
		every 0.1 50 lost_more_than "$lost" ||
			{ echo "the second answer did not end the connection"; ok=1; }
		blk_remove || { echo "not removed"; ok=1; }
	fi
	rmmod kofi_blk_hostile || { echo "hostile module stays"; ok=1; }
	return $ok
}
ktap_expect_ok "initiator_survives_twice" hostile_target_twice $port
ktap_expect_ok "initiator_unloads" rmmod kofi_blk
ktap_expect_ok "target_unloads" rmmod kofi_blkt
rmmod kofi_verbs && rmmod kofi_sock && rmmod kofi
ktap_finish
