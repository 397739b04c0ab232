#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Sourced by blk_bench.sh and profile_guest.sh (inside the VM, after
# ktap_helpers.sh, rdma_helpers.sh and blk_helpers.sh): the RAM disk
# /dev/ram0 exported by the kernel's nvmet (reached with nvme connect) and by
# kofi_blkt (reached as /dev/kofiblk0), so both sides of the comparison use
# the same disk.
CFG=/sys/kernel/config/nvmet
NQN=nqn.2026-11.org.kofi:bench
# The host's identity, given whole: without a hostid nvme-fabrics pairs this
# NQN with its default host's random id, which it refuses ("found same hostid
# but different hostnqn").
HOSTID=6b6f6669-0000-4000-8000-000000000001
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:$HOSTID
own=10.0.2.10

# nvmet_port ID TRTYPE ADDR PORT: an nvmet port offering the subsystem.
nvmet_port() {
	id=$1 trtype=$2 addr=$3 port=$4
	mkdir -p $CFG/ports/$id &&
		echo "$trtype" >$CFG/ports/$id/addr_trtype &&
		echo ipv4 >$CFG/ports/$id/addr_adrfam &&
		echo "$addr" >$CFG/ports/$id/addr_traddr &&
		echo "$port" >$CFG/ports/$id/addr_trsvcid &&
		ln -s $CFG/subsystems/$NQN $CFG/ports/$id/subsystems/$NQN
}
nvmet_port_remove() {
	rm $CFG/ports/$1/subsystems/$NQN && rmdir $CFG/ports/$1
}

# nvme_dev: the namespace's block device once nvme connect made it.
nvme_dev() {
	for d in /sys/block/nvme*n1; do
		[ -e "$d" ] && { echo /dev/${d##*/}; return 0; }
	done
	return 1
}
nvme_on() {
	nvme connect -t "$1" -a "$2" -s "$3" -n $NQN --hostnqn=$HOSTNQN --hostid=$HOSTID >/dev/null 2>&1 &&
		retry 10 nvme_dev >/dev/null
}
nvme_off() {
	nvme disconnect -n $NQN >/dev/null 2>&1
}

# kofi: ram0 exported by kofi_blkt, reached as /dev/kofiblk0.
kofi_on() {
	blk_export disk0 "$1" "$2" "$3" && blk_add disk0 "$1" "$2" "$3" queues=2 depth=32
}
kofi_off() {
	blk_remove
	echo disk0 >$BLKT/remove_export
}

# blk_targets_setup: kofi_blkt and kofi_blk loaded, and nvmet_setup.
blk_targets_setup() {
	insmod /kofi/modules/kofi_blkt.ko && insmod /kofi/modules/kofi_blk.ko || return 1
	nvmet_setup
}

# nvmet_setup: nvmet's subsystem with /dev/ram0 as its namespace, the disk
# filled once (so reads read pages that exist), with direct writes: through
# the page cache, the writeback of the 64 MiB came about 30 s later, inside
# whichever cell ran then (4 % of a profiled kofi_blk run went to brd's
# page allocations for it).
nvmet_setup() {
	mkdir -p /sys/kernel/config 2>/dev/null
	mount -t configfs none /sys/kernel/config 2>/dev/null
	mkdir -p /etc/nvme && echo $HOSTNQN >/etc/nvme/hostnqn && echo $HOSTID >/etc/nvme/hostid
	mkdir $CFG/subsystems/$NQN &&
		echo 1 >$CFG/subsystems/$NQN/attr_allow_any_host &&
		mkdir $CFG/subsystems/$NQN/namespaces/1 &&
		echo /dev/ram0 >$CFG/subsystems/$NQN/namespaces/1/device_path &&
		echo 1 >$CFG/subsystems/$NQN/namespaces/1/enable || { ktap_diag "nvmet set-up failed"; return 1; }
	dd if=/dev/zero of=/dev/ram0 bs=1M count=64 oflag=direct 2>/dev/null
}

# fio_args WORKLOAD: the fio options of a storage table's workload.
fio_args() {
	case $1 in
	randread_qd1) echo "--rw=randread --bs=4k --iodepth=1" ;;
	randwrite_qd1) echo "--rw=randwrite --bs=4k --iodepth=1" ;;
	randread_qd32) echo "--rw=randread --bs=4k --iodepth=32" ;;
	randwrite_qd32) echo "--rw=randwrite --bs=4k --iodepth=32" ;;
	read_128k) echo "--rw=read --bs=128k --iodepth=8" ;;
	write_128k) echo "--rw=write --bs=128k --iodepth=8" ;;
	esac
}
