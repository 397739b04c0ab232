#!/usr/bin/env bash
# `make check`: kofi's whole test suite. Sets the machine up, runs host-side
# tests, checks style, builds the modules (with clippy, no warnings allowed),
# boots the debug kernel and runs every suite there. Ends with the line
# `N passed, N failed, N skipped` and exits non-zero on any failure.
#
#   KOFI_TEST_FILTER=substring  runs only the guest suites whose name matches.
set -uo pipefail
. "$(dirname "$0")/lib/env.sh"
cd "$KOFI_ROOT"

pass=0 fail=0 skip=0
# Each step's wall-clock time, printed as it ends and listed at the end: CI
# has 90 minutes (README), and this shows where they go.
times=() step_name="" step_start=$SECONDS
step_end() {
	[ -n "$step_name" ] || return 0
	times+=("$(printf '%5d s  %s' $((SECONDS - step_start)) "$step_name")")
	step_name=""
}
step() {
	step_end
	echo; echo "=== $*"
	step_name=$* step_start=$SECONDS
}
record() { # record NAME RC
	if [ "$2" = 0 ]; then pass=$((pass + 1)); echo "check: ok   $1"
	else fail=$((fail + 1)); echo "check: FAIL $1"; fi
}
finish() {
	step_end
	echo
	echo "=== time per step ($((SECONDS / 60)) min in all)"
	printf '%s\n' "${times[@]}"
	echo
	echo "$pass passed, $fail failed, $skip skipped"
	[ "$fail" = 0 ]
	exit
}

step "set-up"
scripts/setup.sh || { record setup 1; finish; }

step "host-side tests (cargo test)"
out=$(cargo test --workspace --release 2>&1)
rc=$?
echo "$out" | grep -E '^test |test result:|error' || true
while read -r p f ig; do
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + ig))
done < <(echo "$out" | sed -nE 's/^test result: [A-Za-z]+\. ([0-9]+) passed; ([0-9]+) failed; ([0-9]+) ignored.*/\1 \2 \3/p')
[ $rc = 0 ] || { echo "$out" | tail -30; record "cargo test exit status" 1; }

step "fuzz: the sock wire header parser (${KOFI_FUZZ_SECONDS:-30} s)"
out=$(cd providers/sock && RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir fuzz parse_header -- \
	-max_total_time="${KOFI_FUZZ_SECONDS:-30}" 2>&1)
rc=$?
echo "$out" | grep -E '^Done|ERROR|panicked|SUMMARY' || echo "$out" | tail -20
record "cargo fuzz parse_header" $rc

step "style: rustfmt"
mapfile -t rs < <(git ls-files --cached --others --exclude-standard '*.rs')
out=$(rustfmt --check --config-path "$KOFI_ROOT/.rustfmt.toml" --edition 2021 "${rs[@]}" 2>&1)
rc=$?
[ $rc = 0 ] || echo "$out" | head -40
record "rustfmt --check (${#rs[@]} files)" $rc

step "kernel"
if [ -z "${KDIR:-}" ]; then
	KDIR=$(scripts/build-kernel.sh debug) || { record "kernel build" 1; finish; }
fi
echo "KDIR=$KDIR"

# build_modules KDIR TREE WHAT: kofi in TREE built against KDIR with clippy,
# any warning an error.
build_modules() {
	local out rc
	out=$(make -C "$1" M="$2" LLVM=1 CLIPPY=1 KRUSTFLAGS=-Dwarnings KCFLAGS=-Werror \
		-j"$KOFI_JOBS" modules 2>&1)
	rc=$?
	echo "$out" | grep -vE '^make(\[[0-9]+\])?: (Entering|Leaving)' | tail -40
	if [ $rc = 0 ] && echo "$out" | grep -q 'warning:'; then rc=1; echo "check: the build warned"; fi
	record "$3" $rc
	return $rc
}

step "modules (clippy, warnings are errors)"
make -C "$KDIR" M="$KOFI_ROOT" LLVM=1 clean >/dev/null 2>&1
build_modules "$KDIR" "$KOFI_ROOT" "modules build with CLIPPY=1, no warnings" || finish

# dkms_run KDIR [LABEL]: scripts/dkms-test.sh against the kernel tree KDIR,
# each of its checks counted.
dkms_run() {
	local out line n=0
	step "DKMS: dkms.conf against the ${2:+$2 }kernel tree"
	out=$(scripts/dkms-test.sh "$1" 2>&1)
	echo "$out" | grep -v '^ok - '
	while read -r line; do
		case "$line" in
		"ok - "*) record "${2:+$2: }dkms: ${line#ok - }" 0; n=$((n + 1)) ;;
		"not ok - "*) record "${2:+$2: }dkms: ${line#not ok - }" 1; n=$((n + 1)) ;;
		esac
	done <<<"$out"
	[ $n -gt 0 ] || record "${2:+$2: }dkms: the test ran" 1
}
dkms_run "$KDIR"

# The guests get two CPUs, so races between softirq, work items and
# consumer threads can happen in the tests (KOFI_VM_CPUS=1 for one).
export KOFI_VM_CPUS=${KOFI_VM_CPUS:-2}

# guest_run LABEL VMS [KDIR MODULES-TREE FILTER]: boot VMS VMs of the debug
# kernel (of KDIR, with the modules built in MODULES-TREE), run the suites
# (those FILTER names), add their totals. A guest gets 30 minutes
# (KOFI_VM_TIMEOUT): the one-VM suites take 16 to 19 under TCG; a hang is
# still caught.
# filter_names_a_suite VMS FILTER: whether FILTER (substrings separated by
# |, as run_tests.sh takes it) names a suite of a run of VMS guests.
filter_names_a_suite() {
	local d=tools/testing/selftests/kofi names f
	if [ "$1" -gt 1 ]; then
		names=$(cd "$d" && ls pair_*.sh)
	else
		names=$(cd "$d" && ls test_*.sh; ls -- *_kunit.c | sed 's/^/kunit:/; s/\.c$//')
	fi
	local IFS='|'
	for f in $2; do
		grep -qF -- "$f" <<<"$names" && return 0
	done
	return 1
}

guest_run() {
	local label=$1 vms=$2 kdir=${3:-$KDIR} tree=${4:-$KOFI_ROOT} filter=${5:-${KOFI_TEST_FILTER:-}}
	local out line rc p f s
	step "guest suites, $label (debug kernel: KASAN, lockdep, kmemleak)"
	if [ -n "$filter" ] && ! filter_names_a_suite "$vms" "$filter"; then
		echo "(no suite of this stage matches '$filter')"
		return
	fi
	out=$(scripts/vm-run.sh --kernel "$kdir/arch/x86/boot/bzImage" --vms "$vms" \
		--modules-root "$tree" \
		--out "$KOFI_ROOT/build/check-$label" --timeout "${KOFI_VM_TIMEOUT:-1800}" \
		-- /kofi/tests/run_tests.sh "$filter")
	rc=$?
	echo "$out"
	line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -1)
	if [ -n "$line" ]; then
		read -r p _ f _ s _ <<<"${line//,/}"
		pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + ${s:-0}))
		[ $rc = 0 ] || [ "$f" != 0 ] || record "$label: vm-run exit status" 1
	else
		record "$label: guest run produced a summary" 1
	fi
	echo "logs: $KOFI_ROOT/build/check-$label/vm*/{console.log,results.ktap}"
}
guest_run one-vm 1
guest_run two-vms 2

# The newest kernel Debian ships (KOFI_KERNEL=7.3): the same tree built
# against it with the same strictness, through dkms too, and every one-VM
# suite again (KOFI_TEST_FILTER_73, else KOFI_TEST_FILTER, picks among
# them). The two-VM pairs run on 7.3 only with KOFI_CHECK_PAIRS_73=1: they
# use the same kernel interfaces as the one-VM suites, over a virtual NIC,
# and their 10 to 12 minutes took a cold machine's run past CI's 90 (README).
# KOFI_CHECK_KERNELS=6.12 leaves 7.3 out.
if [[ " ${KOFI_CHECK_KERNELS:-6.12 7.3} " == *" 7.3 "* ]]; then
	step "kernel 7.3"
	if KDIR73=$(KOFI_KERNEL=7.3 scripts/build-kernel.sh debug); then
		echo "KDIR=$KDIR73"
		step "modules on 7.3 (clippy, warnings are errors)"
		src73=$KOFI_ROOT/build/src-7.3
		kofi_copy_tree "$src73"
		if build_modules "$KDIR73" "$src73" "7.3: modules build with CLIPPY=1, no warnings"; then
			dkms_run "$KDIR73" 7.3
			filter73=${KOFI_TEST_FILTER_73:-${KOFI_TEST_FILTER:-}}
			guest_run one-vm-7.3 1 "$KDIR73" "$src73" "$filter73"
			[ "${KOFI_CHECK_PAIRS_73:-0}" = 0 ] ||
				guest_run two-vms-7.3 2 "$KDIR73" "$src73" "$filter73"
		fi
	else
		record "7.3: kernel build" 1
	fi
fi
finish
