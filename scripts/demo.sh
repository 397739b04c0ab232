#!/usr/bin/env bash
# `make demo`: set up, build the kernel and the modules, boot a VM, load kofi
# (and the providers there are), run the samples and show what they did; then
# boot two VMs and run the pingpong between them over each provider.
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
echo "=== VM: load kofi, run the sample consumer, unload"
rc=0
scripts/vm-run.sh --kernel "$KDIR/arch/x86/boot/bzImage" --out "$KOFI_ROOT/build/demo" \
	--timeout 600 -- /kofi/samples/demo_guest.sh >"$KOFI_ROOT/build/demo.verdict" 2>&1 || rc=$?
echo "--- what the guest did:"
grep -vE '^(KTAP|1\.\.|KOFI-GUEST-DONE)' "$KOFI_ROOT/build/demo/vm0/results.ktap" | tr -d '\r'
echo "--- verdict:"
cat "$KOFI_ROOT/build/demo.verdict"
echo "(console log: $KOFI_ROOT/build/demo/vm0/console.log)"

echo "=== two VMs: the pingpong between them over each provider"
rc2=0
scripts/vm-run.sh --kernel "$KDIR/arch/x86/boot/bzImage" --vms 2 --out "$KOFI_ROOT/build/demo-pair" \
	--timeout 600 -- /kofi/samples/demo_pair.sh >"$KOFI_ROOT/build/demo-pair.verdict" 2>&1 || rc2=$?
echo "--- what node 1 (the client) did:"
grep -vE '^(KTAP|1\.\.|KOFI-GUEST-DONE)' "$KOFI_ROOT/build/demo-pair/vm1/results.ktap" | tr -d '\r'
echo "--- verdict:"
cat "$KOFI_ROOT/build/demo-pair.verdict"
[ $rc = 0 ] && rc=$rc2
exit $rc
