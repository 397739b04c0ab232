#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make bench`, inside the VM (perf kernel): kofi_sock against the raw TCP
# baseline (pingpong round trip and streaming messages, 64 B to 1 MiB),
# kofi_verbs against the raw verbs baseline on siw and on rxe (pingpong
# round trip and streaming RMA writes), the cost of one call through the
# core, and kofi_blk against NVMe-oF (blk_bench.sh). Each run is a KTAP line; figures are
# "# bench,<measure>,<transport>,<impl>,<size>,<value>" lines the host collects.
. /kofi/tests/ktap_helpers.sh
. /kofi/tests/rdma_helpers.sh
M=/kofi/modules
SIZES="64 1024 4096 16384 65536 262144 1048576"
VERBS_SIZES="64 4096 65536 1048576"

last() { dmesg | grep "$1" | tail -1; }

set -- $SIZES
n_tcp=$#
set -- $VERBS_SIZES
ktap_plan $((2 + 4 * n_tcp + 2 * (1 + 4 * $#)))
insmod $M/kofi.ko && insmod $M/kofi_sock.ko && insmod $M/kofi_verbs.ko &&
	insmod $M/kofi_test_provider.ko || exit 1

if insmod $M/kofi_call_cost.ko && rmmod kofi_call_cost; then
	l=$(last 'kofi_call_cost:')
	echo "# bench,call_ns,core,fi_cq_read,0,$(echo "$l" | sed 's/.*fi_cq_read \([0-9]*\) ns.*/\1/')"
	echo "# bench,call_ns,core,fi_getname,0,$(echo "$l" | sed 's/.*fi_getname \([0-9]*\) ns.*/\1/')"
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
		echo "# bench,rtt_ns,tcp,raw,$size,$(last 'kofi_raw_tcp: pingpong' | sed 's/.*: \([0-9]*\) ns$/\1/')"
		ktap_ok "raw_pingpong_$size"
	else ktap_not_ok "raw_pingpong_$size"; fi
	if insmod $M/kofi_pingpong.ko size=$size iters=$pp port=$((port + 1)) && rmmod kofi_pingpong; then
		echo "# bench,rtt_ns,tcp,kofi,$size,$(last 'kofi_pingpong: sock' | sed 's/.*MB\/s, \([0-9]*\) ns$/\1/')"
		ktap_ok "kofi_pingpong_$size"
	else ktap_not_ok "kofi_pingpong_$size"; fi
	if insmod $M/kofi_raw_tcp.ko test=bw size=$size iters=$bw port=$((port + 2)) && rmmod kofi_raw_tcp; then
		echo "# bench,bw_mbs,tcp,raw,$size,$(last 'kofi_raw_tcp: bw' | sed 's/.*: \([0-9]*\) MB\/s$/\1/')"
		ktap_ok "raw_bw_$size"
	else ktap_not_ok "raw_bw_$size"; fi
	if insmod $M/kofi_bw.ko test=msg size=$size iters=$bw window=16 port=$((port + 3)) && rmmod kofi_bw; then
		echo "# bench,bw_mbs,tcp,kofi,$size,$(last 'kofi_bw: sock msg' | sed 's/.*: \([0-9]*\) MB\/s$/\1/')"
		ktap_ok "kofi_bw_$size"
	else ktap_not_ok "kofi_bw_$size"; fi
done
# kofi_verbs against raw verbs, on each soft device on eth0. Streams carry
# 8 MiB (rxe under TCG moves a few MB/s).
own=10.0.2.10
for type in siw rxe; do
	ktap_expect_ok "${type}_link_up" link_up ${type}0 $type
	for size in $VERBS_SIZES; do
		if [ $size -le 4096 ]; then pp=200; elif [ $size -le 65536 ]; then pp=40; else pp=8; fi
		bw=$((8388608 / size)); [ $bw -gt 2000 ] && bw=2000
		# kofi_bw registers size x window for its writes: within one MR's
		# page list (siw: 256 pages); the baseline gets the same window.
		win=16; [ $size -ge 1048576 ] && win=1
		port=$((port + 4))
		if insmod $M/kofi_raw_verbs.ko test=pingpong addr=$own size=$size iters=$pp port=$port &&
			rmmod kofi_raw_verbs; then
			echo "# bench,rtt_ns,$type,raw,$size,$(last 'kofi_raw_verbs: pingpong' | sed 's/.*: \([0-9]*\) ns$/\1/')"
			ktap_ok "${type}_raw_pingpong_$size"
		else ktap_not_ok "${type}_raw_pingpong_$size"; fi
		if insmod $M/kofi_pingpong.ko prov=verbs addr=$own size=$size iters=$pp port=$((port + 1)) &&
			rmmod kofi_pingpong; then
			echo "# bench,rtt_ns,$type,kofi,$size,$(last 'kofi_pingpong: verbs' | sed 's/.*MB\/s, \([0-9]*\) ns$/\1/')"
			ktap_ok "${type}_kofi_pingpong_$size"
		else ktap_not_ok "${type}_kofi_pingpong_$size"; fi
		if insmod $M/kofi_raw_verbs.ko test=write addr=$own size=$size iters=$bw window=$win \
			port=$((port + 2)) &&
			rmmod kofi_raw_verbs; then
			echo "# bench,bw_mbs,$type,raw,$size,$(last 'kofi_raw_verbs: write' | sed 's/.*: \([0-9]*\) MB\/s$/\1/')"
			ktap_ok "${type}_raw_write_$size"
		else ktap_not_ok "${type}_raw_write_$size"; fi
		if insmod $M/kofi_bw.ko prov=verbs test=write addr=$own size=$size iters=$bw window=$win \
			port=$((port + 3)) && rmmod kofi_bw; then
			echo "# bench,bw_mbs,$type,kofi,$size,$(last 'kofi_bw: verbs write' | sed 's/.*: \([0-9]*\) MB\/s$/\1/')"
			ktap_ok "${type}_kofi_write_$size"
		else ktap_not_ok "${type}_kofi_write_$size"; fi
	done
	rdma link delete ${type}0
done
# The storage table: kofi_blk against NVMe-oF (blk_bench.sh), a subtest.
if sh /kofi/bench/blk_bench.sh >/tmp/blk_bench.ktap 2>&1; then blk=ok; else blk=fail; fi
sed 's/^/    /' /tmp/blk_bench.ktap
if [ $blk = ok ]; then ktap_ok "storage"; else ktap_not_ok "storage"; fi
rmmod kofi_test_provider; rmmod kofi_verbs; rmmod kofi_sock; rmmod kofi
ktap_finish
