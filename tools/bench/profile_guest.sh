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

# profile RUN IMPL MODULE ARGS...: samples the module's run (its init runs
# the benchmark) and prints the profile before unloading it, so that its own
# symbols are still known.
profile() {
	run=$1 impl=$2 mod=$3
	shift 3
	if ! perf record -q -e cpu-clock -F 2000 -a -o $DATA -- insmod $M/$mod.ko "$@" \
		>/dev/null 2>/tmp/perf.err; then
		sed 's/^/# /' /tmp/perf.err
		rmmod $mod 2>/dev/null
		ktap_not_ok "${run}_$impl"
		return
	fi
	for by in dso sym; do
		perf report -i $DATA --stdio --no-children --sort $by --percent-limit 1.5 -q 2>/dev/null |
			sed -n 's/^ *\([0-9.]*\)% *\(.*[^ ]\) *$/# profile,'"$run,$impl,$by"',\1,\2/p' |
			head -15 | resolve
	done
	n=$(perf report -i $DATA --stdio --sort dso 2>/dev/null | sed -n 's/^# Samples: \([0-9.]*[KM]*\).*/\1/p')
	echo "# profile,$run,$impl,samples,0,$n"
	rmmod $mod
	ktap_ok "${run}_$impl"
}

ktap_plan 8
echo 0 > /proc/sys/kernel/kptr_restrict 2>/dev/null
insmod $M/kofi.ko && insmod $M/kofi_sock.ko && insmod $M/kofi_verbs.ko || exit 1
# Round trips of 4 KiB over TCP, then a stream of 64 KiB messages.
profile tcp_pingpong_4k raw kofi_raw_tcp test=pingpong size=4096 iters=10000 port=7901
profile tcp_pingpong_4k kofi kofi_pingpong size=4096 iters=10000 port=7902
profile tcp_stream_64k raw kofi_raw_tcp test=bw size=65536 iters=8000 port=7903
profile tcp_stream_64k kofi kofi_bw test=msg size=65536 iters=8000 window=16 port=7904
# Round trips of 4 KiB over siw, then 64 KiB RMA writes.
link_up siw0 siw || exit 1
own=10.0.2.10
profile siw_pingpong_4k raw kofi_raw_verbs test=pingpong addr=$own size=4096 iters=3000 port=7905
profile siw_pingpong_4k kofi kofi_pingpong prov=verbs addr=$own size=4096 iters=3000 port=7906
profile siw_write_64k raw kofi_raw_verbs test=write addr=$own size=65536 iters=2048 window=16 port=7907
profile siw_write_64k kofi kofi_bw prov=verbs test=write addr=$own size=65536 iters=2048 window=16 port=7908
rdma link delete siw0
rmmod kofi_verbs; rmmod kofi_sock; rmmod kofi
ktap_finish
