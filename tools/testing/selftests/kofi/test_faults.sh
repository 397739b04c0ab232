#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The fault run: kofi_fault_soak.ko's consumer flow (connect, messages, RMA,
# shutdown, RDM endpoints) over kofi_sock and kofi_verbs (rxe, siw) while every
# Nth allocation made with a kofi module on the stack fails, for each N of
# KOFI_FAULT_INTERVAL (a round fails at its first fault: small intervals
# walk the flow's early allocations, large ones its late ones) (failslab and fail_page_alloc, sleeping allocations included; the
# stack filter spans the kofi modules' code, so the providers' work items
# and the kernel calls they make count too). Every call must answer an
# error or succeed and every object close; KASAN, lockdep and kmemleak judge
# the rest. Then, faults off, the same flow must pass whole: the providers
# were left healthy. KOFI_FAULT_INTERVAL replays a run (default
# "61 251 1021").
MODDIR=/kofi/modules
. "$(dirname "$0")/rdma_helpers.sh"
intervals=${KOFI_FAULT_INTERVAL:-61 251 1021}
rounds=${KOFI_FAULT_ROUNDS:-24}
own=10.0.2.1${KOFI_NODE:-0}
n=0
failed=0

attr() { echo "$2" >/sys/kernel/debug/$1/$3; }

# faults on|off: arms or disarms both attributes over the kofi modules' code.
faults() {
	for f in failslab fail_page_alloc; do
		if [ "$1" = on ]; then
			attr $f "$start" require-start
			attr $f "$end" require-end
			attr $f 32 stacktrace-depth
			attr $f "$2" interval
			attr $f 1000000 times
			attr $f 100 probability
		else
			attr $f 0 probability
		fi
	done
}

injected() {
	total=0
	for f in failslab fail_page_alloc; do
		left=$(cat /sys/kernel/debug/$f/times)
		total=$((total + 1000000 - left))
	done
	echo $total
}

# soak LABEL PROV NODE PORT ROUNDS [must_pass=1]: one load of the soak; its
# result.
soak() {
	n=$((n + 1))
	if insmod $MODDIR/kofi_fault_soak.ko label="$1" prov="$2" node="$3" port_base="$4" \
		rounds="$5" $6; then
		line=$(dmesg | grep "kofi_fault_soak: \(not \)\?ok $1 " | tail -1)
		rmmod kofi_fault_soak
	else
		line="not ok $1 # insmod failed"
	fi
	line=${line#*kofi_fault_soak: }
	case "$line" in
	ok*) echo "ok $n ${line#ok }" ;;
	*) echo "not ok $n ${line#not ok }"; failed=1 ;;
	esac
}

set -- $intervals
echo "KTAP version 1"
echo "1..$((3 * $# + 4))"
[ -d /sys/kernel/debug/failslab ] || { echo "# no fault injection in this kernel"; exit 1; }
insmod $MODDIR/kofi.ko && insmod $MODDIR/kofi_sock.ko && insmod $MODDIR/kofi_verbs.ko ||
	{ echo "# loading failed"; exit 1; }
# Every loadable module in the guest is kofi's (the kernel has the rest
# built in): the module area is the kofi modules' code.
start=0xffffffffa0000000
end=0xffffffffff000000
# Not inside vmalloc (the guest's init rejects its range, scripts/vm-run.sh):
# it reports its own failures with a stack dump, a splat to the run.
echo "# faults: allocations with kofi code in [$start, $end) on the stack, none in vmalloc [$(cat /sys/kernel/debug/failslab/reject-start), $(cat /sys/kernel/debug/failslab/reject-end))"

# faulty LABEL PROV NODE: the soak under each interval's faults (each soak
# takes 50 ports from $port: a round takes the next).
faulty() {
	for i in $intervals; do
		echo "# $1: every ${i}th such allocation fails"
		faults on "$i"
		soak ${1}_every_$i $2 $3 $port "$rounds"
		faults off
		count=$((count + $(injected)))
		port=$((port + 50))
	done
}

port=7600
count=0
faulty sock_ipv4 sock 127.0.0.1
# kofi_verbs on each soft device (one at a time: both would serve the
# same address), then, faults off, the whole flow on the device again.
for type in rxe siw; do
	link_up ${type}0 $type || { echo "# no $type link"; exit 1; }
	faulty verbs_$type verbs $own
	soak verbs_${type}_after verbs $own $port 4 must_pass=1
	port=$((port + 50))
	rdma link delete ${type}0
done
n=$((n + 1))
if [ "$count" -gt 0 ]; then
	echo "ok $n faults_injected # $count allocations failed"
else
	echo "not ok $n faults_injected # none failed: the run tested nothing"
	failed=1
fi
soak sock_ipv4_after sock 127.0.0.1 $port 4 must_pass=1
rmmod kofi_verbs && rmmod kofi_sock && rmmod kofi && [ $failed = 0 ]
