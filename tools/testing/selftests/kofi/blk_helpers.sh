#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kofi_blk's shell tests: the target's and the initiator's control files, and
# the checks a storage user would make (fio with crc32c verification, the
# bytes on the backing device, ext4 made, filled, checked). Its waits use
# ktap_helpers.sh's every and retry: source that first.
MODDIR=/kofi/modules
BLKT=/sys/kernel/kofi_blkt
BLK=/sys/kernel/kofi_blk

# export NAME PROV ADDR PORT [PATH]: exports PATH (/dev/ram0) as NAME.
blk_export() {
	echo "name=$1 path=${5:-/dev/ram0} provider=$2 addr=$3 port=$4" >$BLKT/add_export
}

# blk_add EXPORT PROV ADDR PORT [key=value...]: adds a device; waits for it.
blk_add() {
	e=$1 p=$2 a=$3 o=$4
	shift 4
	echo "export=$e provider=$p addr=$a port=$o $*" >$BLK/add_device || return 1
	every 0.1 50 test -b /dev/kofiblk0
}

blk_remove() {
	echo kofiblk0 >$BLK/remove_device
}

# blk_same_size DEV BACKING: the device's size is the backing device's.
blk_same_size() {
	[ "$(cat /sys/block/$1/size)" = "$(cat /sys/block/$2/size)" ] &&
		[ "$(cat /sys/block/$1/size)" -gt 0 ]
}

# blk_fio NAME [fio options...]: a job on /dev/kofiblk0 verified with crc32c;
# fails on any I/O or verification error.
blk_fio() {
	n=$1
	shift
	fio --name="$n" --filename=/dev/kofiblk0 --direct=1 --ioengine=libaio \
		--verify=crc32c --verify_fatal=1 --do_verify=1 --thread \
		--output-format=terse --terse-version=3 "$@" >/tmp/fio.$n 2>&1 ||
		{ cat /tmp/fio.$n; return 1; }
	# Terse v3, a line per job: field 5 is the job's error code.
	grep -q '^3;' /tmp/fio.$n && ! grep '^3;' /tmp/fio.$n | cut -d';' -f5 | grep -qv '^0$' ||
		{ cat /tmp/fio.$n; return 1; }
}

# blk_bytes_reach_backing: a pattern written through /dev/kofiblk0 is on
# /dev/ram0, and what is written on /dev/ram0 reads back through kofiblk0.
blk_bytes_reach_backing() {
	dd if=/dev/urandom of=/tmp/pattern bs=64k count=32 2>/dev/null &&
		dd if=/tmp/pattern of=/dev/kofiblk0 bs=64k seek=100 oflag=direct 2>/dev/null &&
		dd if=/dev/ram0 of=/tmp/back bs=64k skip=100 count=32 iflag=direct 2>/dev/null &&
		cmp /tmp/pattern /tmp/back &&
		dd if=/dev/urandom of=/tmp/pattern bs=4k count=33 2>/dev/null &&
		dd if=/tmp/pattern of=/dev/ram0 bs=4k seek=7 oflag=direct 2>/dev/null &&
		dd if=/dev/kofiblk0 of=/tmp/back bs=4k skip=7 count=33 iflag=direct 2>/dev/null &&
		cmp /tmp/pattern /tmp/back
}

# blk_ext4: mkfs.ext4 on kofiblk0, a tree of files written, read back after
# a remount, and e2fsck -fn clean.
blk_ext4() {
	mkdir -p /mnt/kofiblk /tmp/tree &&
		mkfs.ext4 -F -q /dev/kofiblk0 >/dev/null 2>&1 &&
		mount -t ext4 /dev/kofiblk0 /mnt/kofiblk || return 1
	i=0
	while [ $i -lt 8 ]; do
		mkdir -p /mnt/kofiblk/d$i /tmp/tree/d$i
		dd if=/dev/urandom of=/tmp/tree/d$i/f bs=1k count=$((i * 97 + 3)) 2>/dev/null
		cp /tmp/tree/d$i/f /mnt/kofiblk/d$i/f
		i=$((i + 1))
	done
	cp /kofi/modules/kofi.ko /tmp/tree/ && cp /kofi/modules/kofi.ko /mnt/kofiblk/
	umount /mnt/kofiblk && mount -t ext4 /dev/kofiblk0 /mnt/kofiblk || return 1
	ok=0
	for f in kofi.ko d0/f d1/f d2/f d3/f d4/f d5/f d6/f d7/f; do
		cmp /tmp/tree/$f /mnt/kofiblk/$f || ok=1
	done
	umount /mnt/kofiblk || return 1
	[ $ok = 0 ] && e2fsck -fn /dev/kofiblk0
}

# blk_target_restart PROV ADDR PORT: the target's module unloaded and
# loaded again (the export with it) in the middle of a verified fio run,
# which must finish clean.
blk_target_restart() {
	before=$(blk_writes)
	blk_fio restart --rw=randwrite --bs=64k --size=16M --iodepth=8 &
	fio_pid=$!
	blk_writing "$before" || return 1
	rmmod kofi_blkt || return 1
	sleep 2
	insmod $MODDIR/kofi_blkt.ko && blk_export disk0 "$1" "$2" "$3" || return 1
	wait $fio_pid
}

# blk_link_bounce DEV TYPE: the RDMA device under both ends deleted and
# added again in the middle of a verified fio run, which must finish clean:
# the initiator holds its requests and reconnects, the target listens again
# (and says so).
blk_link_bounce() {
	heard=$(dmesg | grep -c 'kofi_blkt: disk0: listening again')
	before=$(blk_writes)
	blk_fio bounce --rw=randwrite --bs=64k --size=16M --iodepth=8 &
	fio_pid=$!
	blk_writing "$before" || return 1
	rdma link delete "$1" || return 1
	sleep 2
	link_up "$1" "$2" || return 1
	wait $fio_pid || return 1
	[ "$(dmesg | grep -c 'kofi_blkt: disk0: listening again')" -gt "$heard" ] ||
		{ echo "the target did not listen again"; return 1; }
}

# blk_net_bounce NETDEV: the network device under both ends taken down for
# 3 s and brought up again in the middle of a verified fio run, which must
# finish clean: the initiator holds its requests (or TCP retransmits) until
# the path is back.
blk_net_bounce() {
	before=$(blk_writes)
	blk_fio netdown --rw=randwrite --bs=64k --size=16M --iodepth=8 &
	fio_pid=$!
	blk_writing "$before" || return 1
	ip link set "$1" down || return 1
	sleep 3
	ip link set "$1" up || return 1
	wait $fio_pid
}

# blk_io_fails_in_time LIMIT [COMMAND...]: fio writes to kofiblk0; once it
# writes, COMMAND (if any) takes the target away for good: the run ends with
# I/O errors (not a hang) within LIMIT s of its start, and the device is
# declared dead.
blk_io_fails_in_time() {
	limit=$1
	shift
	start=$(date +%s)
	before=$(blk_writes)
	fio --name=gone --filename=/dev/kofiblk0 --direct=1 --ioengine=libaio --thread \
		--rw=randwrite --bs=4k --size=64M --iodepth=4 --time_based \
		--runtime=$((limit * 2)) >/tmp/fio.gone 2>&1 &
	fio_pid=$!
	blk_writing "$before" || return 1
	[ $# = 0 ] || "$@" || return 1
	wait $fio_pid && { echo "fio did not fail"; return 1; }
	took=$(($(date +%s) - start))
	grep -q 'Input/output error' /tmp/fio.gone || { cat /tmp/fio.gone; return 1; }
	[ $took -lt "$limit" ] || { echo "fio took $took s"; return 1; }
	# Declared dead as its held requests fail, within a few milliseconds.
	retry 2 grep -q 'state=dead' $BLK/devices || { cat $BLK/devices; return 1; }
}

# blk_target_gone: the target unloaded for good during fio: the run ends
# with I/O errors (not a hang) soon after the reconnect timeout (5 s).
blk_target_gone() {
	blk_io_fails_in_time 60 rmmod kofi_blkt
}

# blk_writes: writes completed on kofiblk0 so far.
blk_writes() {
	awk '{ print $5 }' /sys/block/kofiblk0/stat
}

# blk_writing COUNT: more than COUNT writes completed on kofiblk0 (within 60 s).
blk_writing() {
	every 0.1 600 more_writes_than "$1"
}
more_writes_than() { [ "$(blk_writes)" -gt "$1" ]; }

# blk_remove_busy: the device removed while fio writes to it: fio ends with
# errors, the device goes.
blk_remove_busy() {
	before=$(blk_writes)
	fio --name=busy --filename=/dev/kofiblk0 --direct=1 --ioengine=libaio --thread \
		--rw=randwrite --bs=16k --size=64M --iodepth=16 --time_based --runtime=60 \
		>/tmp/fio.busy 2>&1 &
	fio_pid=$!
	blk_writing "$before" || { echo "fio wrote nothing"; return 1; }
	blk_remove || return 1
	wait $fio_pid && { cat /tmp/fio.busy; echo "fio did not fail"; return 1; }
	[ ! -e /sys/block/kofiblk0 ] || { echo "kofiblk0 still there"; return 1; }
}
