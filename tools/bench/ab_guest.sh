#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make bench-ab`, inside the VM (perf kernel): the tree's kofi against an
# earlier revision's (B_*.ko: its kofi, kofi_sock and samples), in turns in
# one VM, each round running the raw TCP baseline and then kofi, the order
# of the two revisions alternating from round to round. A change's gain is
# then read from runs that share the VM, the host's load and the baseline,
# not from two VM runs, whose round trips move by more than most changes.
# Figures: "# ab,<measure>,<rev>,<impl>,<size>,<value>,<round>" lines
# (measure rtt_ns: kofi_sock round trip, rdm_rtt_ns: the RDM layer's over
# kofi_sock; bw_mbs: kofi_sock streaming messages; call_ns: one call
# through the core to the test provider, impl fi_cq_read or fi_getname
# (kofi) and their bare baselines (raw); rev after or before).
# With TRANSPORT siw or rxe it compares kofi_verbs instead, against raw
# verbs on that soft device: round trips (rtt_ns; rdm_rtt_ns: the RDM
# layer's over kofi_verbs), RMA write and read streams (write_mbs,
# read_mbs) and message streams (msgbw_mbs; msgbw4_mbs: 1 MiB messages four
# at a time, kofi alone).
#
# Usage: ab_guest.sh [ROUNDS [TRANSPORT]]
. /kofi/tests/ktap_helpers.sh
. /kofi/tests/rdma_helpers.sh
. /kofi/bench/bench_helpers.sh
M=/kofi/modules
ROUNDS=${1:-10}
TRANSPORT=${2:-}
SIZES=${KOFI_AB_SIZES:-64 4096 65536}
port=7900

# run FIGURE MARK FILE ARGS...: loads FILE (a module whose init is the
# run), unloads it and prints FIGURE ("measure,rev,impl,size") with the
# value of its line MARK; false when the run failed.
run() {
	fig=$1 mark=$2 file=$3
	shift 3
	port=$((port + 1))
	insmod "$file" "$@" port=$port || return 1
	rmmod "$(basename "$file" .ko | sed 's/^B_//')" || return 1
	echo "# ab,$fig,$(figure "$mark"),$round"
}

# prefix REV: sets $P, the prefix of REV's module files (after: the
# tree's, before: B_*.ko).
prefix() {
	if [ "$1" = after ]; then P=$M/; else P=$M/B_; fi
}

# revision REV: loads REV's kofi, kofi_sock and test provider; sets $P.
revision() {
	prefix "$1"
	insmod ${P}kofi.ko && insmod ${P}kofi_sock.ko && insmod ${P}kofi_test_provider.ko
}

# verbs_rounds: the kofi_verbs comparison (TRANSPORT siw or rxe), with
# the run lengths of `make bench`'s verbs rows (verbs_params), at the sizes
# of KOFI_AB_SIZES when it is set (those of the bench's verbs rows if not).
verbs_rounds() {
	own=10.0.2.10
	set -- ${KOFI_AB_SIZES:-4096 65536 1048576}
	ktap_plan $((ROUNDS * 2 * $#))
	link_up ${TRANSPORT}0 "$TRANSPORT" || { ktap_not_ok "${TRANSPORT}_link_up"; return 1; }
	for round in $(seq "$ROUNDS"); do
		if [ $((round % 2)) = 1 ]; then order="after before"; else order="before after"; fi
		for rev in $order; do
			prefix $rev
			insmod ${P}kofi.ko && insmod ${P}kofi_verbs.ko || return 1
			for size in "$@"; do
				verbs_params "$TRANSPORT" $size
				if run rtt_ns,$rev,raw,$size 'kofi_raw_verbs: pingpong' $M/kofi_raw_verbs.ko \
					test=pingpong addr=$own size=$size iters=$pp warmup=$warm &&
					run rtt_ns,$rev,kofi,$size 'kofi_pingpong: verbs:' ${P}kofi_pingpong.ko \
						prov=verbs addr=$own size=$size iters=$pp warmup=$warm verify_in_clock=N &&
					run rdm_rtt_ns,$rev,kofi,$size 'kofi_pingpong: verbs rdm:' ${P}kofi_pingpong.ko \
						prov=verbs ep_type=rdm addr=$own size=$size iters=$pp warmup=$warm \
						verify_in_clock=N &&
					run write_mbs,$rev,raw,$size 'kofi_raw_verbs: write' $M/kofi_raw_verbs.ko \
						test=write addr=$own size=$size iters=$ops window=$win &&
					run write_mbs,$rev,kofi,$size 'kofi_bw: verbs write' ${P}kofi_bw.ko \
						prov=verbs test=write addr=$own size=$size iters=$ops window=$win &&
					run read_mbs,$rev,raw,$size 'kofi_raw_verbs: read' $M/kofi_raw_verbs.ko \
						test=read addr=$own size=$size iters=$ops window=$win &&
					run read_mbs,$rev,kofi,$size 'kofi_bw: verbs read' ${P}kofi_bw.ko \
						prov=verbs test=read addr=$own size=$size iters=$ops window=$win &&
					run msgbw_mbs,$rev,raw,$size 'kofi_raw_verbs: send' $M/kofi_raw_verbs.ko \
						test=send addr=$own size=$size iters=$ops window=$win &&
					run msgbw_mbs,$rev,kofi,$size 'kofi_bw: verbs msg' ${P}kofi_bw.ko \
						prov=verbs test=msg addr=$own size=$size iters=$ops window=$win &&
					# Several large messages in flight (rendezvous reads
					# at once): kofi alone, as raw verbs registers its
					# whole window as one region, which siw caps at 1 MiB.
					{ [ $size -lt 1048576 ] ||
						run msgbw4_mbs,$rev,kofi,$size 'kofi_bw: verbs msg' ${P}kofi_bw.ko \
							prov=verbs test=msg addr=$own size=$size iters=$ops window=4; }; then
					ktap_ok "${rev}_${TRANSPORT}_${size}_r$round"
				else
					ktap_not_ok "${rev}_${TRANSPORT}_${size}_r$round"
				fi
			done
			rmmod kofi_verbs && rmmod kofi || return 1
		done
	done
	rdma link delete ${TRANSPORT}0
}

if [ -n "$TRANSPORT" ]; then
	verbs_rounds || exit 1
	ktap_finish
	exit
fi

set -- $SIZES
ktap_plan $((ROUNDS * 2 * ($# + 1)))
for round in $(seq "$ROUNDS"); do
	if [ $((round % 2)) = 1 ]; then order="after before"; else order="before after"; fi
	for rev in $order; do
		revision $rev || exit 1
		if call_cost ${P}kofi_call_cost.ko; then
			echo "# ab,call_ns,$rev,kofi,0,$CQ_NS,$round"
			echo "# ab,call_ns,$rev,raw,0,$BARE_CQ_NS,$round"
			echo "# ab,call_ns,$rev,kofi,1,$NAME_NS,$round"
			echo "# ab,call_ns,$rev,raw,1,$BARE_NAME_NS,$round"
			ktap_ok "${rev}_call_cost_r$round"
		else
			ktap_not_ok "${rev}_call_cost_r$round"
		fi
		for size in $SIZES; do
			if [ "$size" -le 4096 ]; then pp=3000; else pp=600; fi
			warm=$((pp / 10)) n=$((268435456 / size))
			[ $n -gt 40000 ] && n=40000
			if run rtt_ns,$rev,raw,$size 'kofi_raw_tcp: pingpong' $M/kofi_raw_tcp.ko \
				test=pingpong size=$size iters=$pp warmup=$warm &&
				run rtt_ns,$rev,kofi,$size 'kofi_pingpong: sock:' ${P}kofi_pingpong.ko \
					size=$size iters=$pp warmup=$warm verify_in_clock=N &&
				run rdm_rtt_ns,$rev,kofi,$size 'kofi_pingpong: sock rdm:' ${P}kofi_pingpong.ko \
					ep_type=rdm size=$size iters=$pp warmup=$warm verify_in_clock=N &&
				run bw_mbs,$rev,raw,$size 'kofi_raw_tcp: bw' $M/kofi_raw_tcp.ko \
					test=bw size=$size iters=$n &&
				run bw_mbs,$rev,kofi,$size 'kofi_bw: sock msg' ${P}kofi_bw.ko \
					test=msg size=$size iters=$n window=16; then
				ktap_ok "${rev}_${size}_r$round"
			else
				ktap_not_ok "${rev}_${size}_r$round"
			fi
		done
		rmmod kofi_test_provider && rmmod kofi_sock && rmmod kofi || exit 1
	done
done
ktap_finish
