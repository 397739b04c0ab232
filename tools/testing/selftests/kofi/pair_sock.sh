#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kofi_sock across two VMs: node 0 serves, node 1 connects. Private data
# both ways (checked by the pingpong), messages of 1 B, 4 KiB and 1 MiB
# over IPv4, 4 KiB over IPv6, every byte checked, and a refused connect.
. "$(dirname "$0")/ktap_helpers.sh"
MODDIR=/kofi/modules

# The runs: port, address family, size, iterations, extra parameters (a
# bandwidth test runs kofi_bw, the others the pingpong).
RUNS="7600:4:1:20: 7601:4:4096:20: 7602:4:1048576:4: 7603:6:4096:20: 7604:4:64:1:reject=1 7606:4:65536:32:test=write 7607:6:65536:32:test=read"

# Node 1 also checks an unreachable connect.
if [ "$KOFI_NODE" = 1 ]; then ktap_plan 9; else ktap_plan 8; fi
insmod $MODDIR/kofi.ko && insmod $MODDIR/kofi_sock.ko || { ktap_diag "loading failed"; exit 1; }
for run in $RUNS; do
	IFS=: read -r port fam size iters extra <<EOF2
$run
EOF2
	name="size_${size}_ipv${fam}${extra:+_${extra%%=*}}"
	mod=kofi_pingpong
	case "$extra" in test=*) mod=kofi_bw; name="rma_${extra#test=}_ipv$fam" ;; esac
	if [ "$KOFI_NODE" = 0 ]; then
		addr=10.0.2.10
		[ "$fam" = 6 ] && addr=fd00::10
		timeout=timeout_ms=120000
		[ $mod = kofi_bw ] && timeout=
		ktap_expect_ok "serve_$name" insmod $MODDIR/$mod.ko mode=server \
			addr=$addr port=$port size=$size iters=$iters $timeout $extra
		rmmod $mod 2>/dev/null
	else
		addr=$KOFI_PEER
		[ "$fam" = 6 ] && addr=$KOFI_PEER6
		# A refusal cannot be told from "not listening yet" by its error:
		# first wait until the port takes a TCP connection (which sends no
		# CONNECT frame, so the kofi listener just drops it).
		if [ "$extra" = reject=1 ]; then
			for i in $(seq 1 90); do
				nc -w 2 "$addr" "$port" </dev/null 2>/dev/null && break
				sleep 1
			done
		fi
		# The server may still be booting or starting its next run: retry.
		ok=1
		for i in $(seq 1 90); do
			timeout=timeout_ms=5000
			[ $mod = kofi_bw ] && timeout=
			if insmod $MODDIR/$mod.ko mode=client addr=$addr port=$port \
				size=$size iters=$iters $timeout $extra 2>/dev/null; then
				ok=0
				break
			fi
			sleep 1
		done
		rmmod $mod 2>/dev/null
		if [ $ok = 0 ]; then ktap_ok "client_$name"; else ktap_not_ok "client_$name"; fi
	fi
done
# An address nobody answers: the connect fails on the EQ, it does not hang.
if [ "$KOFI_NODE" = 1 ]; then
	if insmod $MODDIR/kofi_pingpong.ko mode=client addr=10.0.2.99 port=7605 timeout_ms=60000 2>/dev/null; then
		ktap_not_ok "unreachable_connect_fails_on_eq"
	elif dmesg | grep -Eq 'kofi_pingpong: client: (No route to host|Connection timed out|Host is down|Network is unreachable)'; then
		ktap_ok "unreachable_connect_fails_on_eq"
	else
		dmesg | grep kofi_pingpong | tail -2 | sed 's/^/# /'
		ktap_not_ok "unreachable_connect_fails_on_eq"
	fi
fi
ktap_expect_ok "sock_and_core_unload" sh -c "rmmod kofi_sock && rmmod kofi"
ktap_finish
