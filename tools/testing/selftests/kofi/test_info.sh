#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kofi_info (tools/kofi_info) against the real core over its generic netlink
# family: the providers and their versions, the infos fi_getinfo gives for
# each filter, every attribute with -v, the open objects of a real consumer
# (kofi_blkt exporting /dev/ram0), kofi_verbs on siw, and the errors a user
# gets (no core, bad arguments, an unknown provider).
. "$(dirname "$0")/ktap_helpers.sh"
. "$(dirname "$0")/rdma_helpers.sh"
. "$(dirname "$0")/blk_helpers.sh"

# info_run ARGS...: runs kofi_info; its output in $out, errors in $err, status in $rc.
info_run() {
	out=$(kofi_info "$@" 2>/tmp/kofi_info.err)
	rc=$?
	err=$(cat /tmp/kofi_info.err)
}

# check DESC: ok when the command before it succeeded, else the last run's
# output as diagnostics.
check() {
	ok=$?
	desc=$1
	if [ $ok = 0 ]; then
		ktap_ok "$desc"
	else
		ktap_diag "kofi_info: status $rc; stdout:"
		echo "$out" | sed 's/^/#   /'
		ktap_diag "stderr: $err"
		ktap_not_ok "$desc"
	fi
}

# has TEXT...: the last output has every TEXT.
has() {
	for t in "$@"; do
		echo "$out" | grep -q -- "$t" || { ktap_diag "no '$t'"; return 1; }
	done
}

# only_types TYPE: every info printed is of TYPE, and there is one.
only_types() {
	echo "$out" | grep -q "type: $1\$" &&
		! echo "$out" | grep 'type: ' | grep -qv "type: $1\$"
}

ktap_plan 18

info_run -l
[ $rc = 1 ] && echo "$err" | grep -q 'kofi.ko loaded'
check "no_core_says_so"

insmod $MODDIR/kofi.ko && insmod $MODDIR/kofi_sock.ko ||
	{ ktap_diag "loading failed"; exit 1; }

info_run -e FI_EP_BOGUS
[ $rc = 2 ] && echo "$err" | grep -q "FI_EP_BOGUS"
check "bad_ep_type_is_a_usage_error"
info_run -c 'FI_MSG|FI_NOPE'
[ $rc = 2 ] && echo "$err" | grep -q "FI_NOPE"
check "bad_caps_is_a_usage_error"
info_run --frobnicate
[ $rc = 2 ] && echo "$err" | grep -q "frobnicate"
check "unknown_option_is_a_usage_error"

info_run -l
want=$(awk '$1 == "sock" { print $2 }' /sys/kernel/debug/kofi/providers)
[ $rc = 0 ] && [ -n "$want" ] &&
	echo "$out" | grep -q '^sock:$' && echo "$out" | grep -q "^    version: $want\$"
check "lists_sock_with_its_version"

info_run
[ $rc = 0 ] &&
	echo "$out" | grep -q '^provider: sock$' &&
	echo "$out" | grep -q 'type: FI_EP_MSG$' && echo "$out" | grep -q 'type: FI_EP_RDM$' &&
	echo "$out" | grep -q 'protocol: FI_PROTO_SOCK_TCP$'
check "infos_of_both_endpoint_types"
all=$(echo "$out" | grep -c '^provider: ')

info_run -p sock -e FI_EP_RDM
[ $rc = 0 ] && only_types FI_EP_RDM
check "ep_type_filter"
info_run -c FI_TAGGED
[ $rc = 0 ] && echo "$out" | grep -q 'type: FI_EP_MSG$' && echo "$out" | grep -q 'type: FI_EP_RDM$'
check "tagged_caps_on_both_endpoint_types"
info_run --ep_type=msg --caps=FI_MSG,FI_RMA
[ $rc = 0 ] && only_types FI_EP_MSG
check "msg_filter_long_options"

info_run -v
[ $rc = 0 ] &&
	[ "$(echo "$out" | grep -c '^---$')" = "$all" ] &&
	has fi_tx_attr: fi_rx_attr: fi_ep_attr: fi_domain_attr: fi_fabric_attr: \
		inject_size: max_msg_size: mr_key_size: threading: 'prov_name: sock' \
		'addr_format: FI_SOCKADDR_IN6'
check "verbose_every_attribute"

info_run -v -n 127.0.0.1 -P 7777 -e FI_EP_MSG
[ $rc = 0 ] &&
	echo "$out" | grep -q 'dest_addr: fi_sockaddr_in://127.0.0.1:7777$'
check "node_and_port_reach_fi_getinfo"

# Requests the family's policy refuses: a node longer than any address.
info_run -n "$(printf '%0300d' 0)"
[ $rc = 1 ] && echo "$err" | grep -q -- '-22'
check "overlong_node_refused"

info_run -p nosuch
[ $rc = 1 ] && echo "$err" | grep -q -- '-61' &&
	echo "$err" | grep -q "no provider 'nosuch'"
check "unknown_provider_refused"

# A real consumer's objects: kofi_blkt listening for initiators.
insmod $MODDIR/kofi_blkt.ko || { ktap_diag "insmod kofi_blkt failed"; exit 1; }
blk_export disk0 sock 127.0.0.1 4430
info_run -o
[ $rc = 0 ] &&
	echo "$out" | grep -q 'FI_CLASS_FABRIC: [1-9]' &&
	echo "$out" | grep -q 'FI_CLASS_PEP: 1$' &&
	echo "$out" | grep -q 'FI_CLASS_EQ: [1-9]' &&
	! echo "$out" | grep -q 'module_refs: 0$'
check "objects_of_a_consumer"
echo disk0 >$BLKT/remove_export
info_run -o
[ $rc = 0 ] &&
	echo "$out" | grep -q 'open_objects: none'
check "objects_gone_with_the_consumer"
rmmod kofi_blkt

info_run --record /tmp/kofi_info.rec -v
first=$out
info_run --replay /tmp/kofi_info.rec -v
[ $rc = 0 ] && [ -n "$out" ] && [ "$out" = "$first" ]
check "replay_prints_what_the_kernel_said"

if link_up siw0 siw && insmod $MODDIR/kofi_verbs.ko; then
	info_run -p verbs -e FI_EP_MSG
	[ $rc = 0 ] && echo "$out" | grep -q '^provider: verbs$' &&
		echo "$out" | grep -q 'domain: siw0$' && only_types FI_EP_MSG &&
		echo "$out" | grep -q 'protocol: FI_PROTO_IWARP$'
	check "verbs_on_siw"
	rmmod kofi_verbs
else
	ktap_not_ok "verbs_on_siw"
fi
rdma link delete siw0 2>/dev/null

rmmod kofi_sock
info_run -l
[ $rc = 0 ] && ! echo "$out" | grep -q '^sock:'
check "unloaded_provider_not_listed"
rmmod kofi
ktap_finish
