#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make demo`, inside the VM: load the core and the providers there are, let
# the sample consumer discover them, open objects and move a message, show
# what kofi_info shows of them, unload everything. Each step is a KTAP line so the
# runner can judge the run; the `#` lines show the kernel's own words.
. /kofi/tests/ktap_helpers.sh
. /kofi/samples/demo_common.sh
MODDIR=/kofi/modules

show() { # the kernel log lines about kofi since the last call
	dmesg | grep -E 'kofi(_[a-z_]+)?: ' | tail -n +$((shown + 1)) | sed 's/^\[[ 0-9.]*\] /# dmesg: /'
	shown=$(dmesg | grep -cE 'kofi(_[a-z_]+)?: ')
}
shown=0

# The real providers, when built; until then the test provider (a fixture
# that delivers an endpoint's messages to itself) stands in.
providers=""
for p in kofi_sock kofi_verbs; do
	[ -e $MODDIR/$p.ko ] && providers="$providers $p"
done
[ -n "$providers" ] || providers=kofi_test_provider
prov=test
case "$providers" in *kofi_sock*) prov=sock ;; esac

set -- $providers
pingpong=0
[ "$prov" = sock ] && pingpong=4
# kofi_verbs runs the same pingpong and RDM echo on siw and on rxe, on eth0.
verbs=0
case "$providers" in *kofi_verbs*) verbs=8 ;; esac
ktap_plan $((4 + 2 * $# + pingpong + verbs))
demo_kernel_label
ktap_expect_ok "insmod kofi.ko" insmod $MODDIR/kofi.ko
show
for p in "$@"; do
	ktap_expect_ok "insmod $p.ko" insmod $MODDIR/$p.ko
done
show
if [ "$prov" = sock ]; then
	# Two endpoints over loopback TCP, 4 KiB then 1 MiB messages, verified.
	ktap_expect_ok "pingpong over kofi_sock, 4 KiB" \
		insmod $MODDIR/kofi_pingpong.ko prov=sock size=4096 iters=100
	rmmod kofi_pingpong
	ktap_expect_ok "pingpong over kofi_sock, 1 MiB" \
		insmod $MODDIR/kofi_pingpong.ko prov=sock size=1048576 iters=10 port=7501
	rmmod kofi_pingpong
	# The same through a consumer written in Rust.
	ktap_expect_ok "pingpong from a Rust consumer" insmod $MODDIR/kofi_rust_pingpong.ko
	rmmod kofi_rust_pingpong
	# Reliable datagrams: 4 endpoints echo to 4 others through AVs.
	ktap_expect_ok "RDM echo over kofi_sock, 4 x 4 endpoints" \
		insmod $MODDIR/kofi_rdm_echo.ko prov=sock port=7700
	rmmod kofi_rdm_echo
	show
	if [ $verbs != 0 ]; then
		. /kofi/tests/rdma_helpers.sh
		for type in siw rxe; do
			ktap_expect_ok "rdma link add ${type}0 on eth0" link_up ${type}0 $type
			ktap_expect_ok "pingpong over kofi_verbs on ${type}0, 4 KiB" \
				insmod $MODDIR/kofi_pingpong.ko prov=verbs addr=10.0.2.10 port=7601 \
				size=4096 iters=100
			rmmod kofi_pingpong
			ktap_expect_ok "pingpong over kofi_verbs on ${type}0, 1 MiB" \
				insmod $MODDIR/kofi_pingpong.ko prov=verbs addr=10.0.2.10 port=7602 \
				size=1048576 iters=10
			rmmod kofi_pingpong
			ktap_expect_ok "RDM echo over kofi_verbs on ${type}0, 4 x 4 endpoints" \
				insmod $MODDIR/kofi_rdm_echo.ko prov=verbs addr=10.0.2.10 port=7720
			rmmod kofi_rdm_echo
			rdma link delete ${type}0
		done
		show
	fi
	ktap_expect_ok "insmod kofi_sample_consumer.ko prov=sock" \
		insmod $MODDIR/kofi_sample_consumer.ko prov=sock
else
	ktap_expect_ok "insmod kofi_sample_consumer.ko prov=$prov loopback=1" \
		insmod $MODDIR/kofi_sample_consumer.ko prov=$prov loopback=1
fi
show
# What a user sees of it from user space, as libfabric's fi_info shows it.
ktap_diag "kofi_info -o (the providers and the objects the consumer holds open):"
kofi_info -o | sed 's/^/#   /'
ktap_diag "kofi_info -p $prov -e FI_EP_MSG:"
kofi_info -p $prov -e FI_EP_MSG | sed 's/^/#   /'
ktap_expect_ok "rmmod kofi_sample_consumer" rmmod kofi_sample_consumer
for p in "$@"; do
	ktap_expect_ok "rmmod $p" rmmod $p
done
ktap_expect_ok "rmmod kofi" rmmod kofi
show
ktap_finish
