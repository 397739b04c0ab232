#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs every kofi test suite in the guest and writes one KTAP document to
# stdout: each KUnit test module (*_kunit.ko) and each kselftest-style script
# (test_*.sh) is a subtest, its own KTAP indented beneath it. In a run of two
# VMs ($KOFI_VMS = 2) it runs the pair_*.sh scripts instead, on both nodes.
#
# Usage: run_tests.sh [FILTER]   (FILTER: substrings of the names of the
#                                 suites to run, separated by |)

MODDIR=/kofi/modules
TESTDIR=$(dirname "$0")
filter=${1:-}

suites=""
if [ "${KOFI_VMS:-1}" -gt 1 ]; then
	scripts="$TESTDIR/pair_*.sh"
else
	scripts="$TESTDIR/test_*.sh"
	for ko in "$MODDIR"/*_kunit.ko; do
		[ -e "$ko" ] || continue
		suites="$suites kunit:$(basename "$ko" .ko)"
	done
fi
for t in $scripts; do
	[ -e "$t" ] || continue
	suites="$suites $(basename "$t" .sh)"
done
selected=""
for s in $suites; do
	oldifs=$IFS
	IFS='|'
	for f in ${filter:-""}; do
		case "$s" in *"$f"*) selected="$selected $s"; break ;; esac
	done
	IFS=$oldifs
done

# Runs a KUnit test module: its suites run while insmod loads it; their
# results stay in debugfs until it is unloaded. The core and the test
# provider fixtures are loaded first (there is no modules.dep in the guest).
# Each suite's results file is a KTAP document of one subtest; they are
# printed as the subtests of this module's own document.
run_kunit_module() {
	mod=$1
	before=$(ls /sys/kernel/debug/kunit 2>/dev/null)
	if ! insmod "$MODDIR/kofi.ko"; then
		echo "# insmod kofi.ko failed"
		return 1
	fi
	fixtures=""
	for f in "$MODDIR"/kofi_*_provider.ko "$MODDIR"/kofi_sock.ko; do
		[ -e "$f" ] || continue
		if ! insmod "$f"; then
			echo "# insmod $(basename "$f") failed"
			return 1
		fi
		fixtures="$(basename "$f" .ko) $fixtures"
	done
	if ! insmod "$MODDIR/$mod.ko"; then
		echo "# insmod $mod.ko failed"
		for f in $fixtures; do rmmod "$f"; done
		rmmod kofi
		return 1
	fi
	suites=""
	for s in $(ls /sys/kernel/debug/kunit); do
		case " $(echo $before) " in *" $s "*) continue ;; esac
		suites="$suites $s"
	done
	set -- $suites
	echo "KTAP version 1"
	echo "1..$#"
	n=0
	for s in "$@"; do
		n=$((n + 1))
		# Drop the file's own header and renumber its one result.
		sed -e '1,2d' -e "s/^\(not ok\|ok\) 1 /\1 $n /" "/sys/kernel/debug/kunit/$s/results"
	done
	rmmod "$mod" || return 1
	for f in $fixtures; do rmmod "$f" || return 1; done
	rmmod kofi || return 1
	[ "$n" -gt 0 ] || { echo "# $mod registered no KUnit suite"; return 1; }
}

set -- $selected
echo "KTAP version 1"
echo "1..$#"
i=0
for s in "$@"; do
	i=$((i + 1))
	start=$(date +%s)
	case "$s" in
	kunit:*) out=$(run_kunit_module "${s#kunit:}" 2>&1); rc=$? ;;
	*) out=$(sh "$TESTDIR/$s.sh" 2>&1); rc=$? ;;
	esac
	echo "$out" | sed 's/^/    /'
	# What each suite costs, for keeping make check inside its time.
	echo "    # $s took $(($(date +%s) - start)) s"
	if [ $rc -eq 0 ] && ! echo "$out" | grep -q '^ *not ok'; then
		echo "ok $i $s"
	else
		echo "not ok $i $s"
	fi
done
