#!/bin/sh
# Guest side of scripts/record-fixtures.sh: misbehave as asked, then run the
# normal suites so the fixture also holds passing results.
case "$1" in
kunit_fail) insmod /kofi/modules/kofi_failing_suite.ko
	echo "KTAP version 1"
	echo "1..1"
	sed 's/^/    /' /sys/kernel/debug/kunit/kofi_fixture_failing/results
	if grep -q '^not ok' /sys/kernel/debug/kunit/kofi_fixture_failing/results; then
		echo "not ok 1 kofi_fixture_failing"
	else
		echo "ok 1 kofi_fixture_failing"
	fi
	rmmod kofi_failing_suite
	exit 0 ;;
hang) /kofi/tests/run_tests.sh; sleep 100000 ;;
*) insmod /kofi/modules/kofi_fault.ko mode="$1" ;;
esac
exec /kofi/tests/run_tests.sh
