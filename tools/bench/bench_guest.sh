#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make bench`, inside the VM (perf kernel): kofi_sock against the raw TCP
# baseline, pingpong round trip and streaming bandwidth, 64 B to 1 MiB, and
# the cost of one call through the core. Each run is a KTAP line; figures
# are "# bench,<measure>,<impl>,<size>,<value>" lines the host collects.
. /kofi/tests/ktap_helpers.sh
M=/kofi/modules
SIZES="64 1024 4096 16384 65536 262144 1048576"

last() { dmesg | grep "$1" | tail -1; }

set -- $SIZES
ktap_plan $((1 + 4 * $#))
insmod $M/kofi.ko && insmod $M/kofi_sock.ko && insmod $M/kofi_test_provider.ko || exit 1

if insmod $M/kofi_call_cost.ko && rmmod kofi_call_cost; then
	l=$(last 'kofi_call_cost:')
	echo "# bench,call_ns,fi_cq_read,0,$(echo "$l" | sed 's/.*fi_cq_read \([0-9]*\) ns.*/\1/')"
	echo "# bench,call_ns,fi_getname,0,$(echo "$l" | sed 's/.*fi_getname \([0-9]*\) ns.*/\1/')"
	ktap_ok "call_cost"
else
	ktap_not_ok "call_cost"
fi

port=7900
for size in $SIZES; do
	if [ $size -le 16384 ]; then pp=300; elif [ $size -le 262144 ]; then pp=60; else pp=20; fi
	bw=$((33554432 / size)); [ $bw -gt 4000 ] && bw=4000
	port=$((port + 4))
	if insmod $M/kofi_raw_tcp.ko test=pingpong size=$size iters=$pp port=$port && rmmod kofi_raw_tcp; then
		echo "# bench,rtt_ns,raw,$size,$(last 'kofi_raw_tcp: pingpong' | sed 's/.*: \([0-9]*\) ns$/\1/')"
		ktap_ok "raw_pingpong_$size"
	else ktap_not_ok "raw_pingpong_$size"; fi
	if insmod $M/kofi_pingpong.ko size=$size iters=$pp port=$((port + 1)) && rmmod kofi_pingpong; then
		echo "# bench,rtt_ns,kofi,$size,$(last 'kofi_pingpong: sock' | sed 's/.*MB\/s, \([0-9]*\) ns$/\1/')"
		ktap_ok "kofi_pingpong_$size"
	else ktap_not_ok "kofi_pingpong_$size"; fi
	if insmod $M/kofi_raw_tcp.ko test=bw size=$size iters=$bw port=$((port + 2)) && rmmod kofi_raw_tcp; then
		echo "# bench,bw_mbs,raw,$size,$(last 'kofi_raw_tcp: bw' | sed 's/.*: \([0-9]*\) MB\/s$/\1/')"
		ktap_ok "raw_bw_$size"
	else ktap_not_ok "raw_bw_$size"; fi
	if insmod $M/kofi_bw.ko test=msg size=$size iters=$bw window=16 port=$((port + 3)) && rmmod kofi_bw; then
		echo "# bench,bw_mbs,kofi,$size,$(last 'kofi_bw: sock msg' | sed 's/.*: \([0-9]*\) MB\/s$/\1/')"
		ktap_ok "kofi_bw_$size"
	else ktap_not_ok "kofi_bw_$size"; fi
done
rmmod kofi_test_provider; rmmod kofi_sock; rmmod kofi
ktap_finish
