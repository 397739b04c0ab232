#!/usr/bin/env bash
# Record the VM logs that the runner's host-side tests use as fixtures
# (scripts/vmlog/tests/fixtures/), from real runs of the debug kernel:
#   pass        the normal suites
#   ktap_fail   a KUnit case fails
#   hung        the guest never finishes (killed by the timeout)
#   warning     a module WARNs
#   leak        a module leaks memory (kmemleak)
#   oops        a module hits BUG() (the guest panics)
# The faulty modules are built from scripts/vmlog/fault-modules/ into build/.
# `record-fixtures.sh kofi_info` records kofi_info's answers instead
# (tools/kofi_info/tests/fixtures/): the netlink datagrams of each case and
# what the tool printed from them in the guest.
set -euo pipefail
. "$(dirname "$0")/lib/env.sh"
cd "$KOFI_ROOT"

KDIR=${KDIR:-$(scripts/build-kernel.sh debug)}
fixtures=scripts/vmlog/tests/fixtures
faults=build/fault-modules
rm -rf "$faults"
mkdir -p "$faults"
cp scripts/vmlog/fault-modules/* "$faults/"
make -C "$KDIR" M="$KOFI_ROOT/$faults" LLVM=1 modules >/dev/null
make -C "$KDIR" M="$KOFI_ROOT" LLVM=1 modules >/dev/null

record() { # record NAME TIMEOUT GUEST-COMMAND...
	local name=$1 timeout=$2
	shift 2
	scripts/vm-run.sh --out "build/fixture-$name" --timeout "$timeout" \
		--extra-modules "$faults" -- "$@" >/dev/null || true
	rm -rf "${fixtures:?}/$name"
	mkdir -p "$fixtures/$name"
	cp "build/fixture-$name/vm0/console.log" "build/fixture-$name/vm0/results.ktap" "$fixtures/$name/"
	[ ! -e "build/fixture-$name/vm0/timed-out" ] || touch "$fixtures/$name/timed-out"
	echo "recorded $fixtures/$name"
}

if [ "${1:-}" = kofi_info ]; then
	out=tools/kofi_info/tests/fixtures
	scripts/vm-run.sh --out build/fixture-kofi_info --timeout 600 \
		-- /kofi/tests/kofi_info_record.sh >/dev/null || true
	ktap=build/fixture-kofi_info/vm0/results.ktap
	grep -q '^=== end' "$ktap" || die "record-fixtures: the kofi_info recording did not finish ($ktap)"
	rm -rf "$out"
	mkdir -p "$out"
	# Split the guest's stdout (CRLF from the serial port) at its "=== FILE" lines.
	tr -d '\r' <"$ktap" |
		awk -v dir="$out" '/^=== end/ { exit } /^=== / { f = dir "/" $2; next } f { print > f }'
	echo "recorded $out"
	exit 0
fi

record pass 600 /kofi/tests/run_tests.sh
record ktap_fail 600 /kofi/tests/fixture_guest.sh kunit_fail
record hung 60 /kofi/tests/fixture_guest.sh hang
record warning 600 /kofi/tests/fixture_guest.sh warn
record leak 600 /kofi/tests/fixture_guest.sh leak
record oops 600 /kofi/tests/fixture_guest.sh oops
