#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Two VMs, one segment: each node reaches the other over IPv4 and IPv6 and
# receives a TCP stream from it (the path the providers' cross-host tests use).
. "$(dirname "$0")/ktap_helpers.sh"

# wait_for DESC SECONDS CMD...: retry CMD until it succeeds (the peer may
# still be booting).
wait_for() {
	desc=$1 secs=$2
	shift 2
	i=0
	while [ $i -lt "$secs" ]; do
		"$@" >/dev/null 2>&1 && { ktap_ok "$desc"; return 0; }
		sleep 1
		i=$((i + 1))
	done
	ktap_diag "$*: still failing after ${secs}s"
	ktap_not_ok "$desc"
}

ktap_plan 4
wait_for "ping_peer_ipv4" 90 ping -c 1 -W 1 "$KOFI_PEER"
wait_for "ping_peer_ipv6" 30 ping -c 1 -W 1 "$KOFI_PEER6"

# Each node listens on port 7000 and sends its name to the peer's port 7000.
nc -l -p 7000 >/tmp/from_peer &
listener=$!
wait_for "tcp_to_peer" 30 sh -c "echo node$KOFI_NODE | nc $KOFI_PEER 7000"
i=0
while [ $i -lt 30 ] && ! grep -q node /tmp/from_peer; do sleep 1; i=$((i + 1)); done
kill $listener 2>/dev/null
if grep -qx "node$((1 - KOFI_NODE))" /tmp/from_peer; then
	ktap_ok "tcp_from_peer"
else
	ktap_diag "got: $(cat /tmp/from_peer)"
	ktap_not_ok "tcp_from_peer"
fi
ktap_finish
