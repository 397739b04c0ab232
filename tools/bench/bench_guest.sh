#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make bench`, inside the VM (perf kernel): kofi_sock against the raw TCP
# baseline (pingpong round trip and streaming messages, 64 B to 1 MiB),
# RDM endpoints against the MSG endpoints below them (round trip),
# scaling (1, 4 and 16 kofi_sock endpoint pairs streaming at once against as
# many raw TCP connections: aggregate bandwidth and CPU time per byte),
# kofi_verbs against the raw verbs baseline on siw and on rxe (pingpong
# round trip, streaming RMA writes, RMA reads and messages), the cost of one
# call through the core beside a bare baseline, and kofi_blk against
# NVMe-oF (blk_bench.sh).
#
# Every cell runs $ROUNDS rounds, kofi and its baseline back to back in each
# (so a slow spell of the host hits both), each run long enough to hold
# still (100-600 ms) and round trips after a warm-up outside the clock.
# Each run is a KTAP line; figures are
# "# bench,<measure>,<transport>,<impl>,<size>,<value>,<round>" lines the
# host turns into medians, spreads and ratios.
#
# Usage: bench_guest.sh [--no-storage]   (--no-storage: leave out the
# storage table, which takes most of the run)
. /kofi/tests/ktap_helpers.sh
. /kofi/tests/rdma_helpers.sh
. /kofi/bench/bench_helpers.sh
M=/kofi/modules
ROUNDS=5
storage=1
[ "${1:-}" = --no-storage ] && storage=0
SIZES="64 1024 4096 16384 65536 262144 1048576"
VERBS_SIZES="64 4096 65536 1048576"
RDM_SIZES="64 4096 65536 1048576"

# run NAME FIGURE MARK MODULE ARGS...: loads MODULE (whose init is the run),
# and prints FIGURE ("measure,transport,impl,size") with the value of its
# line MARK for this round.
run() {
	name=$1 fig=$2 mark=$3 mod=$4
	shift 4
	port=$((port + 1))
	if insmod $M/$mod.ko "$@" port=$port && rmmod $mod; then
		echo "# bench,$fig,$(figure "$mark"),$round"
		ktap_ok "${name}_r$round"
	else
		ktap_not_ok "${name}_r$round"
	fi
}

# scale NAME IMPL N MARK MODULE ARGS...: a scaling run of N streams (ports
# port.. port+N-1): its aggregate MB/s and the CPU time it took per KiB
# moved (TOTAL bytes), as "scale" figures of size N. The CPU time is the
# module's own count from the start of its clock to the end of the last
# stream's (all CPUs, "cpu busy in the clock"): kofi_bw's set-up and its
# check of what arrived, which the raw baseline does not do, stay out.
scale() {
	name=$1 impl=$2 n=$3 mark=$4 mod=$5
	shift 5
	first=$((port + 1))
	port=$((port + n))
	busy=
	if insmod $M/$mod.ko "$@" port=$first && rmmod $mod; then
		busy=$(figure "${mark%%:*}: cpu busy in the clock")
	fi
	if [ -n "$busy" ]; then
		echo "# bench,bw_mbs,scale,$impl,$n,$(figure "$mark"),$round"
		echo "# bench,cpu_ns_per_kib,scale,$impl,$n,$((busy / (TOTAL / 1024))),$round"
		ktap_ok "${name}_r$round"
	else
		ktap_not_ok "${name}_r$round"
	fi
}
SCALE="1 4 16"
# Bytes each scaling run moves in all: 64 KiB messages, 2048 of them.
TOTAL=$((65536 * 2048))

set -- $SIZES
n_tcp=$#
set -- $SCALE
n_scale=$#
set -- $RDM_SIZES
n_rdm=$#
set -- $VERBS_SIZES
ktap_plan $((ROUNDS * (1 + 4 * n_tcp + 2 * n_rdm + 2 * n_scale + 2 * 8 * $#) + 2 + storage))
insmod $M/kofi.ko && insmod $M/kofi_sock.ko && insmod $M/kofi_verbs.ko &&
	insmod $M/kofi_test_provider.ko || exit 1

for round in $(seq $ROUNDS); do
	if call_cost $M/kofi_call_cost.ko; then
		echo "# bench,call_ns,core,fi_cq_read,0,$CQ_NS,$round"
		echo "# bench,call_ns,core,fi_getname,0,$NAME_NS,$round"
		echo "# bench,call_ns,baseline,fi_cq_read,0,$BARE_CQ_NS,$round"
		echo "# bench,call_ns,baseline,fi_getname,0,$BARE_NAME_NS,$round"
		ktap_ok "call_cost_r$round"
	else
		ktap_not_ok "call_cost_r$round"
	fi
done

port=7900
for round in $(seq $ROUNDS); do
	for size in $SIZES; do
		if [ $size -le 16384 ]; then pp=1500; elif [ $size -le 262144 ]; then pp=300; else pp=100; fi
		warm=$((pp / 10))
		bw=$((134217728 / size)); [ $bw -gt 20000 ] && bw=20000
		run raw_pingpong_$size rtt_ns,tcp,raw,$size 'kofi_raw_tcp: pingpong' kofi_raw_tcp \
			test=pingpong size=$size iters=$pp warmup=$warm
		run kofi_pingpong_$size rtt_ns,tcp,kofi,$size 'kofi_pingpong: sock:' kofi_pingpong \
			size=$size iters=$pp warmup=$warm verify_in_clock=N
		run raw_bw_$size bw_mbs,tcp,raw,$size 'kofi_raw_tcp: bw' kofi_raw_tcp \
			test=bw size=$size iters=$bw
		run kofi_bw_$size bw_mbs,tcp,kofi,$size 'kofi_bw: sock msg' kofi_bw \
			test=msg size=$size iters=$bw window=16
	done
	# RDM endpoints (the core's layer) against the MSG endpoints below
	# them, back to back: the MSG pingpong is this table's baseline.
	for size in $RDM_SIZES; do
		if [ $size -le 16384 ]; then pp=1500; elif [ $size -le 262144 ]; then pp=300; else pp=100; fi
		warm=$((pp / 10))
		run msg_under_rdm_$size rtt_ns,rdm,raw,$size 'kofi_pingpong: sock:' kofi_pingpong \
			size=$size iters=$pp warmup=$warm verify_in_clock=N
		run rdm_pingpong_$size rtt_ns,rdm,kofi,$size 'kofi_pingpong: sock rdm:' kofi_pingpong \
			ep_type=rdm size=$size iters=$pp warmup=$warm verify_in_clock=N
		port=$((port + 1))
	done
	# Scaling: N pairs of kofi_sock endpoints against N raw TCP
	# connections, the same bytes in all, back to back.
	for n in $SCALE; do
		each=$((TOTAL / 65536 / n))
		scale scale_raw_$n raw $n 'kofi_raw_tcp: bw' kofi_raw_tcp \
			test=bw size=65536 iters=$each streams=$n
		scale scale_kofi_$n kofi $n 'kofi_bw: sock msg' kofi_bw \
			test=msg size=65536 iters=$each window=16 pairs=$n
	done
done
# kofi_verbs against raw verbs, on each soft device on eth0 (run lengths:
# verbs_params).
own=10.0.2.10
for type in siw rxe; do
	ktap_expect_ok "${type}_link_up" link_up ${type}0 $type
	for round in $(seq $ROUNDS); do
		for size in $VERBS_SIZES; do
			verbs_params $type $size
			run ${type}_raw_pingpong_$size rtt_ns,$type,raw,$size 'kofi_raw_verbs: pingpong' \
				kofi_raw_verbs test=pingpong addr=$own size=$size iters=$pp warmup=$warm
			run ${type}_kofi_pingpong_$size rtt_ns,$type,kofi,$size 'kofi_pingpong: verbs' \
				kofi_pingpong prov=verbs addr=$own size=$size iters=$pp warmup=$warm \
				verify_in_clock=N
			run ${type}_raw_write_$size bw_mbs,$type,raw,$size 'kofi_raw_verbs: write' \
				kofi_raw_verbs test=write addr=$own size=$size iters=$ops window=$win
			run ${type}_kofi_write_$size bw_mbs,$type,kofi,$size 'kofi_bw: verbs write' \
				kofi_bw prov=verbs test=write addr=$own size=$size iters=$ops window=$win
			run ${type}_raw_read_$size readbw_mbs,$type,raw,$size 'kofi_raw_verbs: read' \
				kofi_raw_verbs test=read addr=$own size=$size iters=$ops window=$win
			run ${type}_kofi_read_$size readbw_mbs,$type,kofi,$size 'kofi_bw: verbs read' \
				kofi_bw prov=verbs test=read addr=$own size=$size iters=$ops window=$win
			run ${type}_raw_send_$size msgbw_mbs,$type,raw,$size 'kofi_raw_verbs: send' \
				kofi_raw_verbs test=send addr=$own size=$size iters=$ops window=$win
			run ${type}_kofi_msg_$size msgbw_mbs,$type,kofi,$size 'kofi_bw: verbs msg' \
				kofi_bw prov=verbs test=msg addr=$own size=$size iters=$ops window=$win
		done
	done
	rdma link delete ${type}0
done
# The storage table: kofi_blk against NVMe-oF (blk_bench.sh), a subtest.
if [ $storage = 1 ]; then
	if sh /kofi/bench/blk_bench.sh >/tmp/blk_bench.ktap 2>&1; then blk=ok; else blk=fail; fi
	sed 's/^/    /' /tmp/blk_bench.ktap
	if [ $blk = ok ]; then ktap_ok "storage"; else ktap_not_ok "storage"; fi
fi
rmmod kofi_test_provider; rmmod kofi_verbs; rmmod kofi_sock; rmmod kofi
ktap_finish
