#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make bench`'s storage table, inside the VM (perf kernel): fio on the RAM
# disk /dev/ram0 alone (the limit), on kofi_blk over kofi_sock against
# nvme-tcp, and on kofi_blk over kofi_verbs against nvme-rdma on rxe and on
# siw; the NVMe-oF target is the kernel's nvmet exporting the same RAM disk.
# Each cell runs RUNS times; every run is a line
# "# blk,<workload>,<transport>,<impl>,<metric>,<value>" the host collects
# (medians and spreads are the host's).
. /kofi/tests/ktap_helpers.sh
. /kofi/tests/rdma_helpers.sh
. /kofi/tests/blk_helpers.sh
. /kofi/bench/blk_targets.sh
RUNS=${KOFI_BLK_RUNS:-3}
SECONDS_PER_RUN=${KOFI_BLK_SECONDS:-4}

# The workloads (KOFI_BLK_WORKLOADS: a subset; their fio options in
# blk_targets.sh) and the metrics read from fio's terse line.
WORKLOADS=${KOFI_BLK_WORKLOADS:-"randread_qd1 randwrite_qd1 randread_qd32 randwrite_qd32 read_128k write_128k"}

# run DEV TRANSPORT IMPL: every workload RUNS times on DEV.
run() {
	dev=$1 t=$2 impl=$3
	for w in $WORKLOADS; do
		r=0
		ok=1
		while [ $r -lt "$RUNS" ]; do
			r=$((r + 1))
			# shellcheck disable=SC2046
			line=$(fio --name=$w --filename="$dev" --direct=1 --ioengine=libaio --thread \
				--time_based --runtime="$SECONDS_PER_RUN" --ramp_time=1 --size=64M \
				--lat_percentiles=1 --clat_percentiles=0 \
				--output-format=terse --terse-version=3 $(fio_args $w) 2>/dev/null | tail -1)
			# Terse v3: 5 error; read 7 bw KiB/s, 8 IOPS, 30 p99 ("99.000000%=us"),
			# 40 lat mean (us); write 48, 49, 71, 81. The percentiles are of the
			# total latency (lat_percentiles), as the mean is: completion latency
			# alone (fio's default) leaves out what io_submit spent, and
			# nvme-tcp on loopback completes most of a request inside it.
			echo "$line" | awk -F';' -v w=$w -v t=$t -v i=$impl '
				$5 != 0 || NF < 90 { exit 1 }
				{
					rd = (w ~ /read/)
					bw = rd ? $7 : $48; iops = rd ? $8 : $49
					p99 = rd ? $30 : $71; sub(/.*=/, "", p99)
					lat = rd ? $40 : $81
					if (w ~ /qd1/) {
						printf "# blk,%s,%s,%s,lat_us,%.1f\n", w, t, i, lat
						printf "# blk,%s,%s,%s,p99_us,%d\n", w, t, i, p99
					} else if (w ~ /qd32/) {
						printf "# blk,%s,%s,%s,iops,%d\n", w, t, i, iops
					} else {
						printf "# blk,%s,%s,%s,mbs,%.1f\n", w, t, i, bw / 1024
					}
				}' || ok=0
		done
		if [ $ok = 1 ]; then ktap_ok "${t}_${impl}_$w"; else ktap_not_ok "${t}_${impl}_$w"; fi
	done
}

# unreachable TRANSPORT IMPL WHAT: the cell's device could not be set up; each
# of its workloads fails with the reason.
unreachable() {
	for w in $WORKLOADS; do
		ktap_not_ok "${1}_${2}_$w # $3"
	done
}

set -- $WORKLOADS
ktap_plan $((7 * $# + 2))
blk_targets_setup || exit 1

run /dev/ram0 local ram

if kofi_on sock 127.0.0.1 4460; then run /dev/kofiblk0 tcp kofi; else unreachable tcp kofi "kofi_blk did not connect"; fi
kofi_off
if nvmet_port 1 tcp 127.0.0.1 4461 && nvme_on tcp 127.0.0.1 4461; then
	run "$(nvme_dev)" tcp nvme
else
	unreachable tcp nvme "nvme connect failed"
fi
nvme_off
nvmet_port_remove 1

for type in rxe siw; do
	ktap_expect_ok "${type}_link_up" link_up ${type}0 $type
	if kofi_on verbs $own 4462; then run /dev/kofiblk0 $type kofi; else unreachable $type kofi "kofi_blk did not connect"; fi
	kofi_off
	if nvmet_port 2 rdma $own 4463 && nvme_on rdma $own 4463; then
		run "$(nvme_dev)" $type nvme
	else
		unreachable $type nvme "nvme connect failed"
	fi
	nvme_off
	nvmet_port_remove 2
	rdma link delete ${type}0
done
rmmod kofi_blk
rmmod kofi_blkt
ktap_finish
