#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make bench-ab KOFI_AB_STORAGE=1`, inside the VM (perf kernel): kofi_blk
# of the tree against an earlier revision's (B_*.ko: its kofi, kofi_sock,
# kofi_verbs, kofi_blkt and kofi_blk), loaded in turns, and NVMe-oF on the
# same RAM disk in every round as the baseline; the order of the two
# revisions alternates from round to round. TRANSPORT tcp (kofi_sock
# against nvme-tcp, on loopback), siw or rxe (kofi_verbs against
# nvme-rdma, on a soft RDMA link over eth0). Each fio run also counts, per
# I/O, the context switches (/proc/stat) and the TCP segments sent
# (/proc/net/snmp; siw's too, none of rxe's), which say where a change
# acted when the latency moves less than the VM's noise.
# Figures: "# abblk,<workload>,<impl>,<metric>,<value>,<round>" lines
# (impl after, before or nvme; metric lat_us at depth 1, iops at depth 32,
# mbs for 128 KiB, ctxt and segs per I/O).
#
# Usage: ab_blk_guest.sh [ROUNDS [TRANSPORT]]
. /kofi/tests/ktap_helpers.sh
. /kofi/tests/rdma_helpers.sh
. /kofi/tests/blk_helpers.sh
. /kofi/bench/blk_targets.sh
M=/kofi/modules
ROUNDS=${1:-5}
TRANSPORT=${2:-tcp}
case $TRANSPORT in
tcp) prov=sock addr=127.0.0.1 trtype=tcp ;;
siw | rxe) prov=verbs addr=$own trtype=rdma ;;
*) echo "unknown transport $TRANSPORT" >&2; exit 1 ;;
esac
WORKLOADS="randread_qd1 randwrite_qd1 randread_qd32 randwrite_qd32 read_128k write_128k"

# counters: sets CTXT and SEGS, the context switches and TCP segments sent
# so far.
counters() {
	CTXT=$(awk '$1 == "ctxt" { print $2 }' /proc/stat)
	SEGS=$(awk '$1 == "Tcp:" && $2 ~ /^[0-9]/ { print $12 }' /proc/net/snmp)
}

# measure DEV IMPL: each workload once on DEV, its figures as IMPL's.
measure() {
	dev=$1 impl=$2 ok=1
	for w in $WORKLOADS; do
		counters
		ctxt0=$CTXT segs0=$SEGS
		# shellcheck disable=SC2046
		line=$(fio --name=$w --filename="$dev" --direct=1 --ioengine=libaio --thread \
			--time_based --runtime=3 --ramp_time=1 --size=64M \
			--output-format=terse --terse-version=3 $(fio_args $w) 2>/dev/null | tail -1)
		counters
		# Terse v3: 5 error; read 7 KiB/s, 8 IOPS, 40 lat mean (us); write
		# 48, 49, 81.
		# The counters span the ramp too: per I/O at the run's IOPS over
		# its 4 s.
		echo "$line" | awk -F';' -v w=$w -v i=$impl -v r=$round \
			-v ctxt=$((CTXT - ctxt0)) -v segs=$((SEGS - segs0)) '
			$5 != 0 || NF < 90 { exit 1 }
			{
				rd = (w ~ /read/)
				bw = rd ? $7 : $48; iops = rd ? $8 : $49; lat = rd ? $40 : $81
				n = iops * 4
				if (n <= 0) exit 1
				if (w ~ /qd1/) printf "# abblk,%s,%s,lat_us,%.1f,%d\n", w, i, lat, r
				else if (w ~ /qd32/) printf "# abblk,%s,%s,iops,%d,%d\n", w, i, iops, r
				else printf "# abblk,%s,%s,mbs,%.1f,%d\n", w, i, bw / 1024, r
				printf "# abblk,%s,%s,ctxt,%.2f,%d\n", w, i, ctxt / n, r
				printf "# abblk,%s,%s,segs,%.2f,%d\n", w, i, segs / n, r
			}' || ok=0
	done
	[ $ok = 1 ]
}

# kofi_rev REV: REV's stack (after: the tree's, before: B_*.ko) loaded,
# ram0 exported over the transport's provider and reached as /dev/kofiblk0,
# measured, and unloaded again.
kofi_rev() {
	if [ "$1" = after ]; then P=$M/; else P=$M/B_; fi
	insmod ${P}kofi.ko && insmod ${P}kofi_$prov.ko && insmod ${P}kofi_blkt.ko &&
		insmod ${P}kofi_blk.ko || return 1
	rc=0
	if kofi_on $prov $addr 4460; then measure /dev/kofiblk0 "$1" || rc=1; else rc=1; fi
	kofi_off
	rmmod kofi_blk && rmmod kofi_blkt && rmmod kofi_$prov && rmmod kofi || return 1
	return $rc
}

ktap_plan $((ROUNDS * 3))
if [ $prov = verbs ]; then
	link_up ${TRANSPORT}0 $TRANSPORT || { ktap_diag "no $TRANSPORT link"; exit 1; }
fi
nvmet_setup || exit 1
nvmet_port 1 $trtype $addr 4461 || exit 1
for round in $(seq "$ROUNDS"); do
	if [ $((round % 2)) = 1 ]; then order="after before"; else order="before after"; fi
	for rev in $order; do
		if kofi_rev $rev; then ktap_ok "${rev}_r$round"; else ktap_not_ok "${rev}_r$round"; fi
	done
	if nvme_on $trtype $addr 4461 && measure "$(nvme_dev)" nvme; then
		ktap_ok "nvme_r$round"
	else
		ktap_not_ok "nvme_r$round"
	fi
	nvme_off
done
nvmet_port_remove 1
ktap_finish
