#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make profile`, inside the VM (perf kernel): where the time goes in kofi
# and in the raw baselines, and in kofi_blk and NVMe-oF, side by side. Each
# run is sampled system-wide (perf record -a, cpu-clock: TCG has no PMU) and
# reported per module and per symbol as
# "# profile,<run>,<impl>,<by>,<percent>,<what>" lines the host prints.
. /kofi/tests/ktap_helpers.sh
. /kofi/tests/rdma_helpers.sh
. /kofi/tests/blk_helpers.sh
. /kofi/bench/blk_targets.sh
M=/kofi/modules
DATA=/tmp/perf.data
TRIPS=
# Samples a second per CPU.
RATE=2000

# resolve: names the addresses perf could not (code of a module loaded after
# perf started, such as the benchmark's own): the module whose text holds
# it, from /proc/modules, else "init text" (freed after the module's init).
resolve() {
	while IFS= read -r line; do
		case "$line" in
		*"[k] 0x"*)
			a=${line##*0x}
			where=$(awk -v a="$a" '{ b = substr($6, 3); n = $2 + 0
				if (length(b) == 16 && b <= a) print $1, b }' /proc/modules |
				sort -k2 | tail -1 | cut -d' ' -f1)
			echo "${line%0x*}0x$a (above module ${where:-?}: its text, or init text)"
			;;
		*) echo "$line" ;;
		esac
	done
}

# sample RUN IMPL CMD...: samples the system, with call chains (for
# paths), while CMD runs; false (with the reason as diagnostics) when CMD
# fails.
sample() {
	run=$1 impl=$2
	shift 2
	perf record -q -e cpu-clock -F $RATE -a -g -o $DATA -- "$@" 2>/tmp/perf.err && return
	sed 's/^/# /' /tmp/perf.err
	ktap_not_ok "${run}_$impl"
	return 1
}

# report RUN IMPL: the last sample's profile, per module and per symbol.
report() {
	for by in dso sym; do
		perf report -i $DATA --stdio --no-children --sort $by --percent-limit 0.5 -q 2>/dev/null |
			sed -n 's/^ *\([0-9.]*\)% *\(.*[^ ]\) *$/# profile,'"$run,$impl,$by"',\1,\2/p' |
			head -25 | resolve
	done
	n=$(perf report -i $DATA --stdio --sort dso 2>/dev/null | sed -n 's/^# Samples: \([0-9.]*[KM]*\).*/\1/p')
	echo "# profile,$run,$impl,samples,0,$n"
	ktap_ok "${run}_$impl"
}

# profile RUN IMPL MODULE ARGS...: samples the module's run (its init runs
# the benchmark) and reports before unloading it, so that its own symbols
# are still known; with TRIPS set (a pingpong's round trips), its paths
# per round trip too.
profile() {
	run=$1 impl=$2 mod=$3
	shift 3
	if sample "$run" "$impl" insmod $M/$mod.ko "$@" >/dev/null; then
		report "$run" "$impl"
		[ -z "$TRIPS" ] || paths "$run" "$impl" "$TRIPS" "round trip" 'WorkItem3run' \
			'^fi_(send|inject|recv|cq_sread|cq_read)$|^(kernel|sock)_(send|recv)msg$|^handle_softirqs$'
	fi
	rmmod $mod 2>/dev/null
}

# paths RUN IMPL UNITS UNIT INNER OUTER: the last sample's time per UNIT
# (an I/O, a round trip; UNITS of them), in us of CPU (a sample is 1/RATE s
# of one CPU), in each context it passes through (the innermost frame that
# matches the regular expression INNER, else the outermost that matches
# OUTER) and in what that calls, DEPTH calls deep, as
# "# paths,<run>,<impl>,<unit>,<us per unit>,<context;call;...>" (at least
# 1 us): where kofi and its baseline spend what sets their latency apart.
paths() {
	[ "$3" -gt 0 ] || return
	perf script -i $DATA -F ip,sym 2>/dev/null | awk -v run="$1" -v impl="$2" -v units="$3" \
		-v unit="$4" -v inner="$5" -v outer="$6" -v depth=$DEPTH -v us=$((1000000 / RATE)) '
		function flush(   i, j, k, a) {
			a = 0
			for (i = 1; i <= n && !a && inner != ""; i++)
				if (f[i] ~ inner)
					a = i
			for (i = n; i >= 1 && !a; i--)
				if (f[i] ~ outer)
					a = i
			if (a) {
				k = ""
				for (j = a; j >= 1 && j > a - depth - 1; j--) {
					k = k (k == "" ? "" : ";") f[j]
					c[k]++
				}
			}
			n = 0
		}
		/^$/ { flush(); next }
		{ n++; f[n] = $2 == "" ? "?" : $2 }
		END {
			flush()
			for (k in c)
				if (c[k] * us >= units)
					printf "# paths,%s,%s,%s,%.1f,%s\n", run, impl, unit, c[k] * us / units, k
		}'
}

# profile_fio RUN IMPL DEV FIO_ARGS...: samples a 6 s fio job on DEV, and
# its paths per I/O.
profile_fio() {
	run=$1 impl=$2 dev=$3
	shift 3
	sample "$run" "$impl" fio --name=p --filename="$dev" --direct=1 --ioengine=libaio \
		--thread --time_based --runtime=6 --size=64M --output-format=json "$@" >/tmp/fio.json ||
		return
	report "$run" "$impl"
	paths "$run" "$impl" "$(awk -F: '/"total_ios"/ { s += $2 } END { print s + 0 }' /tmp/fio.json)" \
		I/O 'queue_rq$|io_work$|WorkItem3run' '^handle_softirqs$|^__x64_sys_io_(submit|getevents)$'
}

# profile_blk RUN TRANSPORT PROV ADDR FIO_ARGS...: kofi_blk (over PROV at
# ADDR) against NVMe-oF over TRANSPORT on the same RAM disk, the same job.
profile_blk() {
	run=$1 t=$2 prov=$3 addr=$4
	shift 4
	if kofi_on "$prov" "$addr" 4470; then
		profile_fio "$run" kofi /dev/kofiblk0 "$@"
	else
		ktap_not_ok "${run}_kofi # kofi_blk did not connect"
	fi
	kofi_off
	if nvmet_port 3 "$t" "$addr" 4471 && nvme_on "$t" "$addr" 4471; then
		profile_fio "$run" nvme "$(nvme_dev)" "$@"
	else
		ktap_not_ok "${run}_nvme # nvme connect failed"
	fi
	nvme_off
	nvmet_port_remove 3
}

# Usage: profile_guest.sh DEPTH [RUN...]: the paths DEPTH calls deep below
# their context; the runs (each sampled for kofi and for its baseline), if
# any are named, those to make (rdm_pingpong_1m, the RDM layer against the
# kofi_sock MSG endpoints below it, tcp_stream_1m and tcp_scale_16, 16 pairs
# streaming at once, blk_tcp_read_128k and blk_tcp_write_128k, only when
# named).
RUNS="blk_tcp_randread_qd1 blk_tcp_randwrite_qd1 tcp_pingpong_4k tcp_stream_64k
siw_pingpong_4k siw_write_64k blk_siw_randread_qd32 blk_siw_randwrite_qd32 blk_siw_write_128k"
DEPTH=${1:-4}
[ $# -le 1 ] || { shift; RUNS="$*"; }
wanted() {
	case " $(echo $RUNS) " in *" $1 "*) return 0 ;; esac
	return 1
}
ktap_plan $(($(echo $RUNS | wc -w) * 2))
echo 0 > /proc/sys/kernel/kptr_restrict 2>/dev/null
insmod $M/kofi.ko && insmod $M/kofi_sock.ko && insmod $M/kofi_verbs.ko || exit 1
blk_targets_setup || exit 1
! wanted blk_tcp_randread_qd1 ||
	profile_blk blk_tcp_randread_qd1 tcp sock 127.0.0.1 --rw=randread --bs=4k --iodepth=1
! wanted blk_tcp_randwrite_qd1 ||
	profile_blk blk_tcp_randwrite_qd1 tcp sock 127.0.0.1 --rw=randwrite --bs=4k --iodepth=1
! wanted blk_tcp_read_128k ||
	profile_blk blk_tcp_read_128k tcp sock 127.0.0.1 --rw=read --bs=128k --iodepth=8
! wanted blk_tcp_write_128k ||
	profile_blk blk_tcp_write_128k tcp sock 127.0.0.1 --rw=write --bs=128k --iodepth=8
if wanted tcp_pingpong_4k; then
	TRIPS=10000
	profile tcp_pingpong_4k raw kofi_raw_tcp test=pingpong size=4096 iters=$TRIPS port=7901
	profile tcp_pingpong_4k kofi kofi_pingpong size=4096 iters=$TRIPS verify_in_clock=N port=7902
	TRIPS=
fi
if wanted rdm_pingpong_1m; then
	profile rdm_pingpong_1m msg kofi_pingpong size=1048576 iters=300 verify_in_clock=N port=7909
	profile rdm_pingpong_1m kofi kofi_pingpong ep_type=rdm size=1048576 iters=300 verify_in_clock=N \
		port=7910
fi
if wanted tcp_stream_64k; then
	profile tcp_stream_64k raw kofi_raw_tcp test=bw size=65536 iters=8000 port=7903
	profile tcp_stream_64k kofi kofi_bw test=msg size=65536 iters=8000 window=16 port=7904
fi
if wanted tcp_stream_1m; then
	profile tcp_stream_1m raw kofi_raw_tcp test=bw size=1048576 iters=600 port=7911
	profile tcp_stream_1m kofi kofi_bw test=msg size=1048576 iters=600 window=16 port=7912
fi
if wanted tcp_scale_16; then
	profile tcp_scale_16 raw kofi_raw_tcp test=bw size=65536 iters=256 streams=16 port=7920
	profile tcp_scale_16 kofi kofi_bw test=msg size=65536 iters=256 window=16 pairs=16 port=7940
fi
link_up siw0 siw || exit 1
own=10.0.2.10
if wanted siw_pingpong_4k; then
	TRIPS=3000
	profile siw_pingpong_4k raw kofi_raw_verbs test=pingpong addr=$own size=4096 iters=$TRIPS port=7905
	profile siw_pingpong_4k kofi kofi_pingpong prov=verbs addr=$own size=4096 iters=$TRIPS \
		verify_in_clock=N port=7906
	TRIPS=
fi
if wanted siw_write_64k; then
	profile siw_write_64k raw kofi_raw_verbs test=write addr=$own size=65536 iters=2048 window=16 port=7907
	profile siw_write_64k kofi kofi_bw prov=verbs test=write addr=$own size=65536 iters=2048 window=16 port=7908
fi
! wanted blk_siw_randread_qd32 ||
	profile_blk blk_siw_randread_qd32 rdma verbs $own --rw=randread --bs=4k --iodepth=32
! wanted blk_siw_randwrite_qd32 ||
	profile_blk blk_siw_randwrite_qd32 rdma verbs $own --rw=randwrite --bs=4k --iodepth=32
! wanted blk_siw_write_128k ||
	profile_blk blk_siw_write_128k rdma verbs $own --rw=write --bs=128k --iodepth=8
rdma link delete siw0
rmmod kofi_blk; rmmod kofi_blkt
rmmod kofi_verbs; rmmod kofi_sock; rmmod kofi
ktap_finish
