#!/usr/bin/env bash
# `make demo`: set up, build the kernel and the modules, boot a VM, load kofi
# (and the providers there are), run the samples and show what they did; boot
# one for kofi_blk (a block device over each provider, ext4 on it); then boot
# two VMs and run the pingpong between them over each provider.
set -euo pipefail
. "$(dirname "$0")/lib/env.sh"
cd "$KOFI_ROOT"

echo "=== set-up"
scripts/setup.sh | grep -v 'already installed' || true
echo "=== kernel"
KDIR=${KDIR:-$(scripts/build-kernel.sh debug)}
echo "=== modules"
mkdir -p "$KOFI_ROOT/build"
make -C "$KDIR" M="$KOFI_ROOT" LLVM=1 -j"$KOFI_JOBS" modules >"$KOFI_ROOT/build/demo-build.log" 2>&1 ||
	{ cat "$KOFI_ROOT/build/demo-build.log"; exit 1; }
grep -vE '^make(\[[0-9]+\])?: (Entering|Leaving)' "$KOFI_ROOT/build/demo-build.log" || true
# Two CPUs per guest, as make check and make bench have (KOFI_VM_CPUS=1 for one).
export KOFI_VM_CPUS=${KOFI_VM_CPUS:-2}
rc=0
# stage NAME VMS SHOWN-NODE TIMEOUT GUEST-SCRIPT: boots VMS guests running
# the script, shows what node SHOWN-NODE did and the runner's verdict.
stage() {
	name=$1 vms=$2 node=$3 timeout=$4 guest=$5 out=$KOFI_ROOT/build/$1
	stage_rc=0
	scripts/vm-run.sh --kernel "$KDIR/arch/x86/boot/bzImage" --vms "$vms" --out "$out" \
		--timeout "$timeout" -- "/kofi/samples/$guest" >"$out.verdict" 2>&1 || stage_rc=$?
	echo "--- what node $node did:"
	grep -vE '^(KTAP|1\.\.|KOFI-GUEST-DONE)' "$out/vm$node/results.ktap" | tr -d '\r'
	echo "--- verdict:"
	cat "$out.verdict"
	echo "(console log: $out/vm$node/console.log)"
	[ $rc != 0 ] || rc=$stage_rc
}

echo "=== VM: load kofi, run the sample consumer, unload"
stage demo 1 0 600 demo_guest.sh
echo "=== VM: a block device over kofi (kofi_blk and kofi_blkt) on each provider"
stage demo-blk 1 0 900 demo_blk.sh
echo "=== two VMs: the pingpong between them over each provider (node 1 the client)"
stage demo-pair 2 1 600 demo_pair.sh
exit $rc
