#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make profile`, inside the VM (perf kernel): where the time goes in kofi
# and in the raw baselines, side by side. Each run is sampled system-wide
# (perf record -a, cpu-clock: TCG has no PMU) and reported per module and
# per symbol as "# profile,<run>,<impl>,<by>,<percent>,<what>" lines the
# host prints.
. /kofi/tests/ktap_helpers.sh
. /kofi/tests/rdma_helpers.sh
M=/kofi/modules
DATA=/tmp/perf.data

# profile RUN IMPL CMD...: samples CMD and prints its profile.
profile() {
	run=$1 impl=$2
	shift 2
	if ! perf record -q -e cpu-clock -F 2000 -a -o $DATA -- "$@" >/dev/null 2>/tmp/perf.err; then
		sed 's/^/# /' /tmp/perf.err
		ktap_not_ok "${run}_$impl"
		return
	fi
	for by in dso sym; do
		perf report -i $DATA --stdio --no-children --sort $by --percent-limit 2 -q 2>/dev/null |
			sed -n 's/^ *\([0-9.]*\)% *\(.*[^ ]\) *$/# profile,'"$run,$impl,$by"',\1,\2/p' | head -15
	done
	ktap_ok "${run}_$impl"
}

ktap_plan 8
echo 0 > /proc/sys/kernel/kptr_restrict 2>/dev/null
insmod $M/kofi.ko && insmod $M/kofi_sock.ko && insmod $M/kofi_verbs.ko || exit 1
# Round trips of 4 KiB over TCP, then a stream of 64 KiB messages.
profile tcp_pingpong_4k raw sh -c "insmod $M/kofi_raw_tcp.ko test=pingpong size=4096 iters=1500 port=7901 && rmmod kofi_raw_tcp"
profile tcp_pingpong_4k kofi sh -c "insmod $M/kofi_pingpong.ko size=4096 iters=1500 port=7902 && rmmod kofi_pingpong"
profile tcp_stream_64k raw sh -c "insmod $M/kofi_raw_tcp.ko test=bw size=65536 iters=1000 port=7903 && rmmod kofi_raw_tcp"
profile tcp_stream_64k kofi sh -c "insmod $M/kofi_bw.ko test=msg size=65536 iters=1000 window=16 port=7904 && rmmod kofi_bw"
# Round trips of 4 KiB over siw, then 64 KiB RMA writes.
link_up siw0 siw || exit 1
own=10.0.2.10
profile siw_pingpong_4k raw sh -c "insmod $M/kofi_raw_verbs.ko test=pingpong addr=$own size=4096 iters=400 port=7905 && rmmod kofi_raw_verbs"
profile siw_pingpong_4k kofi sh -c "insmod $M/kofi_pingpong.ko prov=verbs addr=$own size=4096 iters=400 port=7906 && rmmod kofi_pingpong"
profile siw_write_64k raw sh -c "insmod $M/kofi_raw_verbs.ko test=write addr=$own size=65536 iters=256 window=16 port=7907 && rmmod kofi_raw_verbs"
profile siw_write_64k kofi sh -c "insmod $M/kofi_bw.ko prov=verbs test=write addr=$own size=65536 iters=256 window=16 port=7908 && rmmod kofi_bw"
rdma link delete siw0
rmmod kofi_verbs; rmmod kofi_sock; rmmod kofi
ktap_finish
