#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make demo`, the block device: a RAM disk (/dev/ram0) exported by kofi_blkt
# and reached through kofi_blk as /dev/kofiblk0, over each provider: kofi_sock
# on loopback TCP, kofi_verbs on siw and on rxe (on eth0). On each, fio's
# sequential throughput in MiB/s, then ext4 made on the device, a tree of
# files written, read back after a remount and compared, and e2fsck clean.
# The device is added and removed through kofi_blk's sysfs files, as a user
# would (Documentation/kofi/blk.rst).
. /kofi/tests/ktap_helpers.sh
. /kofi/samples/demo_common.sh
. /kofi/tests/rdma_helpers.sh
. /kofi/tests/blk_helpers.sh

# throughput RW: "N MiB/s" of 5 s of 128 KiB direct sequential RW on kofiblk0.
throughput() {
	fio --name="$1" --filename=/dev/kofiblk0 --direct=1 --ioengine=libaio --thread \
		--rw="$1" --bs=128k --iodepth=8 --size=64M --time_based --runtime=5 \
		--output-format=terse --terse-version=3 2>/dev/null | tail -1 |
		awk -F';' -v rw="$1" '
			$5 != 0 || NF < 90 { exit 1 }
			{ printf "%.1f MiB/s\n", (rw == "read" ? $7 : $48) / 1024 }'
}

# over LABEL PROV ADDR PORT: the device over one transport (6 tests).
over() {
	l=$1 p=$2 a=$3 o=$4
	ktap_expect_ok "export /dev/ram0 as disk0 over $l" blk_export disk0 "$p" "$a" "$o"
	ktap_expect_ok "add /dev/kofiblk0 from disk0 over $l" blk_add disk0 "$p" "$a" "$o" queues=2 depth=32
	ktap_diag "$BLK/devices: $(cat $BLK/devices)"
	for rw in write read; do
		if bw=$(throughput $rw); then
			ktap_ok "128 KiB sequential ${rw}s over $l: $bw"
		else
			ktap_not_ok "128 KiB sequential ${rw}s over $l"
		fi
	done
	ktap_expect_ok "ext4 on kofiblk0 over $l: files written, read back, e2fsck clean" blk_ext4
	ktap_expect_ok "remove kofiblk0" blk_remove
	echo disk0 >$BLKT/remove_export
}

ktap_plan 20
demo_kernel_label
ktap_expect_ok "insmod kofi kofi_sock kofi_verbs kofi_blkt kofi_blk" sh -c \
	"insmod $MODDIR/kofi.ko && insmod $MODDIR/kofi_sock.ko && insmod $MODDIR/kofi_verbs.ko &&
	 insmod $MODDIR/kofi_blkt.ko && insmod $MODDIR/kofi_blk.ko"
over "kofi_sock (TCP on 127.0.0.1)" sock 127.0.0.1 4420
for type in siw rxe; do
	if link_up ${type}0 $type; then
		over "kofi_verbs on ${type}0" verbs 10.0.2.10 4422
	else
		i=0
		while [ $i -lt 6 ]; do
			ktap_not_ok "kofi_verbs on ${type}0: rdma link add failed"
			i=$((i + 1))
		done
	fi
	rdma link delete ${type}0 2>/dev/null
done
dmesg | grep -E 'kofi_blkt?: ' | tail -8 | sed 's/^\[[ 0-9.]*\] /# dmesg: /'
ktap_expect_ok "rmmod kofi_blk kofi_blkt kofi_verbs kofi_sock kofi" sh -c \
	'rmmod kofi_blk && rmmod kofi_blkt && rmmod kofi_verbs && rmmod kofi_sock && rmmod kofi'
ktap_finish
