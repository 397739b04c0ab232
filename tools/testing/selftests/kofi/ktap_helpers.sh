#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# KTAP output for kofi's shell selftests (busybox sh). Source it, call
# ktap_plan N, then one ktap_* per test, then ktap_finish.

KTAP_N=0
KTAP_FAILED=0

ktap_plan() {
	echo "KTAP version 1"
	echo "1..$1"
}

ktap_ok() {
	KTAP_N=$((KTAP_N + 1))
	echo "ok $KTAP_N $1"
}

ktap_not_ok() {
	KTAP_N=$((KTAP_N + 1))
	KTAP_FAILED=$((KTAP_FAILED + 1))
	echo "not ok $KTAP_N $1"
}

ktap_skip() {
	KTAP_N=$((KTAP_N + 1))
	echo "ok $KTAP_N $1 # SKIP $2"
}

ktap_diag() {
	echo "# $*"
}

# ktap_expect_ok DESC CMD...: the command must succeed.
ktap_expect_ok() {
	desc=$1
	shift
	if out=$("$@" 2>&1); then
		ktap_ok "$desc"
	else
		ktap_diag "$*: failed: $out"
		ktap_not_ok "$desc"
	fi
}

# ktap_expect_fail DESC CMD...: the command must fail.
ktap_expect_fail() {
	desc=$1
	shift
	if out=$("$@" 2>&1); then
		ktap_diag "$*: succeeded but should have failed"
		ktap_not_ok "$desc"
	else
		ktap_ok "$desc"
	fi
}

ktap_finish() {
	[ "$KTAP_FAILED" -eq 0 ]
}

# every SECONDS N CMD...: runs CMD until it succeeds, at most N times
# SECONDS apart.
every() {
	pause=$1 tries=$2
	shift 2
	i=0
	while [ $i -lt "$tries" ]; do
		"$@" 2>/dev/null && return 0
		sleep "$pause"
		i=$((i + 1))
	done
	return 1
}

# retry N CMD...: runs CMD until it succeeds, at most N times a second apart
# (a peer VM may still be booting or starting its next run).
retry() {
	every 1 "$@"
}
