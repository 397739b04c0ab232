#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Records kofi_info's answers from the kernel for the host tests
# (scripts/record-fixtures.sh kofi_info): for each case, the netlink
# datagrams (--record) and what kofi_info printed from them live, between
# "=== NAME.rec" and "=== NAME.out" lines on stdout.
. "$(dirname "$0")/rdma_helpers.sh"
. "$(dirname "$0")/blk_helpers.sh"

case_() { # case_ NAME ARGS...
	name=$1
	shift
	kofi_info --record /tmp/$name.rec "$@" >/tmp/$name.out 2>/tmp/$name.err
	status=$?
	echo "=== $name.args"
	echo "$*"
	echo "=== $name.status"
	echo $status
	echo "=== $name.rec"
	cat /tmp/$name.rec
	echo "=== $name.out"
	cat /tmp/$name.out /tmp/$name.err
}

insmod $MODDIR/kofi.ko && insmod $MODDIR/kofi_sock.ko && insmod $MODDIR/kofi_blkt.ko
link_up siw0 siw && insmod $MODDIR/kofi_verbs.ko
blk_export disk0 sock 127.0.0.1 4430
case_ objects -o
case_ list -l
case_ infos
case_ infos_verbose -v
case_ tagged -c FI_TAGGED -v
case_ node -n 10.0.2.10 -P 7471 -e msg -v
case_ nosuch -p nosuch
echo "=== end"
