# SPDX-License-Identifier: GPL-2.0
# Sourced by bench_guest.sh and ab_guest.sh: reading the figures the
# benchmark modules log.

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
