#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Soft RDMA devices for kofi_verbs' shell tests: a siw or rxe link on eth0
# (rdma_cm resolves no address on lo), up and ACTIVE.

# link_active NAME: the link reports state ACTIVE (the port may take a moment).
link_active() {
	i=0
	while [ $i -lt 20 ]; do
		rdma link show "$1/1" 2>/dev/null | grep -q 'state ACTIVE' && return 0
		sleep 0.5
		i=$((i + 1))
	done
	return 1
}

# link_up NAME TYPE: adds the link on eth0 and waits for it.
link_up() {
	rdma link add "$1" type "$2" netdev eth0 && link_active "$1"
}
