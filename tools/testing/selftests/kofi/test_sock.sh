#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kofi_sock as a module: registration, a consumer holding it (rmmod refused),
# pingpong between two endpoints over IPv4 and IPv6 and through RDM
# endpoints, streaming bandwidth (one pair and four at once), clean unload.
. "$(dirname "$0")/ktap_helpers.sh"
MODDIR=/kofi/modules

ktap_plan 17
insmod $MODDIR/kofi.ko || { ktap_diag "insmod kofi.ko failed"; exit 1; }
ktap_expect_ok "sock_registers" insmod $MODDIR/kofi_sock.ko
ktap_expect_ok "consumer_opens_sock_objects" insmod $MODDIR/kofi_sample_consumer.ko prov=sock
ktap_expect_fail "sock_in_use_not_removable" rmmod kofi_sock
rmmod kofi_sample_consumer
ktap_expect_ok "pingpong_ipv4_4k" insmod $MODDIR/kofi_pingpong.ko mode=both size=4096 iters=50
rmmod kofi_pingpong
ktap_expect_ok "pingpong_ipv6_64k" insmod $MODDIR/kofi_pingpong.ko mode=both addr=::1 port=7501 size=65536 iters=20
rmmod kofi_pingpong
if dmesg | grep -q 'kofi_pingpong: sock: 20 round trips of 65536 bytes'; then ktap_ok "pingpong_reported"; else ktap_not_ok "pingpong_reported"; fi
# The same through RDM endpoints (the core's layer over kofi_sock), with
# the benchmark's warm-up and verification outside the clock.
ktap_expect_ok "pingpong_rdm_4k" insmod $MODDIR/kofi_pingpong.ko ep_type=rdm port=7530 size=4096 \
	iters=40 warmup=4 verify_in_clock=N
rmmod kofi_pingpong
if dmesg | grep -q 'kofi_pingpong: sock rdm: 40 round trips of 4096 bytes'; then
	ktap_ok "pingpong_rdm_reported"
else
	ktap_not_ok "pingpong_rdm_reported"
fi
# Streaming bandwidth: messages, RMA writes and reads, all completing.
n=0
for t in msg write read; do
	n=$((n + 1))
	ktap_expect_ok "bandwidth_$t" insmod $MODDIR/kofi_bw.ko test=$t size=65536 iters=64 window=8 port=$((7510 + n))
	rmmod kofi_bw
done
# Four pairs streaming at once (make bench's scaling table), every byte
# checked on each; and the raw baseline's four connections beside them.
ktap_expect_ok "bandwidth_4_pairs" insmod $MODDIR/kofi_bw.ko test=msg size=65536 iters=32 \
	window=8 pairs=4 port=7520
rmmod kofi_bw
if dmesg | grep -q 'kofi_bw: sock msg 65536 bytes x 32 x 4 pairs: '; then
	ktap_ok "bandwidth_4_pairs_reported"
else
	ktap_not_ok "bandwidth_4_pairs_reported"
fi
ktap_expect_ok "raw_tcp_4_streams" insmod $MODDIR/kofi_raw_tcp.ko test=bw size=65536 iters=32 \
	streams=4 port=7540
rmmod kofi_raw_tcp
# A consumer written in Rust, through the same exported ABI.
if insmod $MODDIR/kofi_rust_pingpong.ko && rmmod kofi_rust_pingpong &&
	dmesg | grep -q 'kofi_rust_pingpong: 50 round trips of 4096 bytes through kofi from Rust'; then
	ktap_ok "rust_consumer_pingpong"
else
	ktap_not_ok "rust_consumer_pingpong"
fi
ktap_expect_ok "sock_unloads" rmmod kofi_sock
ktap_expect_ok "core_unloads" rmmod kofi
ktap_finish
