#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# FI_EP_RDM across two VMs (kofi_rdm_echo): node 0 opens four endpoints and
# echoes, node 1 opens four and sends from each to each, through their AVs;
# every byte and every source (FI_SOURCE) checked on both sides. Over
# kofi_sock (IPv4 and IPv6) and kofi_verbs (siw and rxe on eth0).
. "$(dirname "$0")/ktap_helpers.sh"
. "$(dirname "$0")/rdma_helpers.sh"
MODDIR=/kofi/modules
own4=10.0.2.1$KOFI_NODE
own6=fd00::1$KOFI_NODE

# echo_run NAME PROV SERVER_ADDR OWN_ADDR PORT
echo_run() {
	name=$1
	common="prov=$2 port=$5 eps=4 iters=10"
	if [ "$KOFI_NODE" = 0 ]; then
		ktap_expect_ok "${name}_serve" insmod $MODDIR/kofi_rdm_echo.ko mode=server \
			addr=$3 timeout_ms=120000 $common
	else
		ktap_expect_ok "${name}_send" retry 90 insmod $MODDIR/kofi_rdm_echo.ko \
			mode=client addr=$3 local=$4 $common
	fi
	rmmod kofi_rdm_echo 2>/dev/null
}

ktap_plan 7
insmod $MODDIR/kofi.ko && insmod $MODDIR/kofi_sock.ko && insmod $MODDIR/kofi_verbs.ko ||
	{ ktap_diag "loading failed"; exit 1; }
echo_run sock_ipv4 sock 10.0.2.10 $own4 7700
echo_run sock_ipv6 sock fd00::10 $own6 7720
port=7740
for type in siw rxe; do
	ktap_expect_ok "${type}_link_up" link_up ${type}0 $type
	echo_run verbs_$type verbs 10.0.2.10 $own4 $port
	rdma link delete ${type}0
	port=$((port + 20))
done
ktap_expect_ok "providers_and_core_unload" \
	sh -c "rmmod kofi_verbs && rmmod kofi_sock && rmmod kofi"
ktap_finish
