#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kofi_sock across two VMs: node 0 serves, node 1 runs the pingpong client
# against it, over IPv4 and then IPv6.
. "$(dirname "$0")/ktap_helpers.sh"
MODDIR=/kofi/modules

ktap_plan 4
insmod $MODDIR/kofi.ko && insmod $MODDIR/kofi_sock.ko || { ktap_diag "loading failed"; exit 1; }
if [ "$KOFI_NODE" = 0 ]; then
	me4=10.0.2.10 me6=fd00::10
	ktap_expect_ok "serve_ipv4" insmod $MODDIR/kofi_pingpong.ko mode=server addr=$me4 port=7600 size=65536 iters=20 timeout_ms=120000
	rmmod kofi_pingpong
	ktap_expect_ok "serve_ipv6" insmod $MODDIR/kofi_pingpong.ko mode=server addr=$me6 port=7601 size=4096 iters=20 timeout_ms=120000
	rmmod kofi_pingpong
else
	# The server may still be booting: retry the first connect.
	ok=1
	for i in $(seq 1 60); do
		if insmod $MODDIR/kofi_pingpong.ko mode=client addr=$KOFI_PEER port=7600 size=65536 iters=20 timeout_ms=2000 2>/dev/null; then
			ok=0
			break
		fi
		sleep 1
	done
	rmmod kofi_pingpong 2>/dev/null
	if [ $ok = 0 ]; then ktap_ok "client_ipv4"; else ktap_not_ok "client_ipv4"; fi
	ok=1
	for i in $(seq 1 30); do
		if insmod $MODDIR/kofi_pingpong.ko mode=client addr=$KOFI_PEER6 port=7601 size=4096 iters=20 timeout_ms=2000 2>/dev/null; then
			ok=0
			break
		fi
		sleep 1
	done
	rmmod kofi_pingpong 2>/dev/null
	if [ $ok = 0 ]; then ktap_ok "client_ipv6"; else ktap_not_ok "client_ipv6"; fi
fi
ktap_expect_ok "sock_unloads" rmmod kofi_sock
ktap_expect_ok "core_unloads" rmmod kofi
ktap_finish
