# SPDX-License-Identifier: GPL-2.0
# Sourced by bench_guest.sh and ab_guest.sh: reading the figures the
# benchmark modules log, and the run lengths both use.

# The figure ("<n> ns" or "<n.nn> MB/s") at the end of the last line with $1.
figure() {
	dmesg | grep "$1" | tail -1 |
		sed -n 's/.* \([0-9][0-9]*\) ns$/\1/p; s/.* \([0-9][0-9]*\.[0-9][0-9]\) MB\/s$/\1/p'
}

# call_cost FILE: loads the call-cost module FILE (its init measures) and
# sets CQ_NS and NAME_NS (fi_cq_read and fi_getname through the core) and
# BARE_CQ_NS and BARE_NAME_NS (their bare baselines) from the lines it
# logged; false when it failed.
call_cost() {
	insmod "$1" && rmmod kofi_call_cost || return 1
	l=$(dmesg | grep 'kofi_call_cost: fi_cq_read' | tail -1)
	b=$(dmesg | grep 'kofi_call_cost: baseline' | tail -1)
	CQ_NS=$(echo "$l" | sed 's/.*fi_cq_read \([0-9]*\) ns.*/\1/')
	NAME_NS=$(echo "$l" | sed 's/.*fi_getname \([0-9]*\) ns.*/\1/')
	BARE_CQ_NS=$(echo "$b" | sed 's/.*empty_read \([0-9]*\) ns.*/\1/')
	BARE_NAME_NS=$(echo "$b" | sed 's/.*getname \([0-9]*\) ns.*/\1/')
}

# verbs_params TYPE SIZE: sets pp and warm (pingpong iterations, warm-up),
# ops (stream operations; rxe under TCG moves a few MB/s, so its streams
# carry less) and win (operations in flight) for a kofi_verbs run of SIZE
# bytes on soft device TYPE (siw or rxe).
verbs_params() {
	if [ "$2" -le 4096 ]; then pp=600; elif [ "$2" -le 65536 ]; then pp=120; else pp=24; fi
	warm=$((pp / 10))
	if [ "$1" = siw ]; then ops=$((134217728 / $2)); else ops=$((16777216 / $2)); fi
	[ $ops -gt 8000 ] && ops=8000
	# kofi_bw registers size x window for its writes: within one MR's page
	# list (siw: 256 pages); the baseline gets the same.
	win=16
	[ "$2" -ge 1048576 ] && win=1
	return 0
}
