#!/usr/bin/env bash
# Boot kofi's kernel in QEMU (TCG), run a guest script, judge the run.
#
#   scripts/vm-run.sh [options] -- <guest command> [args]
#
#   --kernel F     bzImage (default: the cached debug kernel's)
#   --out DIR      where logs go (default: $KOFI_ROOT/build/vm)
#   --timeout S    wall-clock limit per VM in seconds (default 600)
#   --vms N        boot N VMs (1 or 2) on one virtual network
#   --mem M        guest memory (default 1G)
#   --extra-modules DIR   also pack DIR's .ko files (and *.sh, under /kofi/tests)
#   --modules-root DIR    take the built .ko files from DIR, a copy of the tree
#                         built against another kernel (default: the tree)
#   --with-perf    also pack the host's perf (with its libraries) as /usr/bin/perf
#
# KOFI_VM_CPUS (default 1) sets each guest's CPUs: make check asks for 2
# (races must be able to happen in the tests); the benchmarks' figures are
# for one. KOFI_VM_APPEND adds to the guest kernel's command line (for the
# benchmarks, idle=poll: a halted vCPU wakes slowly under TCG, and round
# trips then measure mostly that; Documentation/kofi/bench.rst).
#
# Each VM writes DIR/vmI/console.log (kernel console, first serial port) and
# DIR/vmI/results.ktap (the guest command's stdout, second serial port). The
# guest sees $KOFI_NODE (its index), $KOFI_VMS, and eth0 up as 10.0.2.(10+I)/24
# and fd00::(10+I)/64, MTU 1500 alone and 9000 with two (KOFI_VM_MTU sets
# it) (RDMA devices need a real netdev: rdma_cm cannot use lo); with two VMs, on one segment, the peer's address in $KOFI_PEER and
# $KOFI_PEER6. Modules built in the tree are under /kofi/modules, the
# selftest scripts under /kofi/tests.
#
# Prints each test case and ends with `N passed, N failed, N skipped`; exits
# non-zero on a failed case, a kernel splat, or a guest that did not finish.
set -euo pipefail
. "$(dirname "$0")/lib/env.sh"

kernel= out="$KOFI_ROOT/build/vm" timeout_s=600 vms=1 mem=1G extra= modroot=$KOFI_ROOT perf=
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--vms) vms=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--extra-modules) extra=$(cd "$2" && pwd); shift 2 ;;
	--modules-root) modroot=$(cd "$2" && pwd); shift 2 ;;
	--with-perf) perf=1; shift ;;
	--) shift; break ;;
	*) die "vm-run: unknown option $1" ;;
	esac
done
[ $# -gt 0 ] || die "vm-run: no guest command (see the usage at the top of $0)"
[ -n "$kernel" ] || kernel="$(kofi_kdir_for debug)/arch/x86/boot/bzImage"
[ -f "$kernel" ] || die "vm-run: no kernel at $kernel (scripts/build-kernel.sh builds it)"
case "$vms" in 1|2) ;; *) die "vm-run: --vms takes 1 or 2" ;; esac

rm -rf "$out"
mkdir -p "$out"
root="$out/initramfs"
mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,etc,lib,lib64,usr/bin,kofi/modules,kofi/tests}

cp /bin/busybox "$root/bin/busybox"
# pack_bin BIN NAME: a host binary as /usr/bin/NAME, with the libraries ldd names.
pack_bin() {
	cp "$1" "$root/usr/bin/$2"
	ldd "$1" | grep -o '/[^ ]*' | while read -r lib; do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
}
# Debian's rdma tool.
if rdma_bin=$(command -v rdma 2>/dev/null || ls /sbin/rdma /usr/sbin/rdma 2>/dev/null | head -1); then
	pack_bin "$rdma_bin" rdma
fi
# kofi_info (tools/kofi_info), built here, run there.
(cd "$KOFI_ROOT" && cargo build --release --quiet -p kofi_info) ||
	die "vm-run: building kofi_info failed"
pack_bin "$KOFI_ROOT/target/release/kofi_info" kofi_info
# kofi_blk's users: fio, ext4's tools, and nvme-cli for the NVMe-oF comparison.
for tool in fio mkfs.ext4 e2fsck nvme; do
	tool_bin=$(PATH=$PATH:/usr/sbin:/sbin command -v $tool) ||
		die "vm-run: $tool missing (scripts/setup.sh installs it)"
	pack_bin "$tool_bin" $tool
done
if [ -n "$perf" ]; then
	perf_bin=$(command -v perf) || die "vm-run: --with-perf: no perf (apt install linux-perf)"
	pack_bin "$perf_bin" perf
fi
find "$modroot" -path "$modroot/build" -prune -o -name '*.ko' -print |
	xargs -r cp -t "$root/kofi/modules"
cp "$KOFI_ROOT"/tools/testing/selftests/kofi/*.sh "$root/kofi/tests/"
mkdir -p "$root/kofi/samples" "$root/kofi/bench"
cp "$KOFI_ROOT"/samples/*.sh "$root/kofi/samples/"
cp "$KOFI_ROOT"/tools/bench/*.sh "$root/kofi/bench/"
if [ -n "$extra" ]; then
	find "$extra" -name '*.ko' -print | xargs -r cp -t "$root/kofi/modules"
	find "$extra" -maxdepth 1 -name '*.sh' -print | xargs -r cp -t "$root/kofi/tests"
fi

# The judge of the run's logs; the guest gets its splat markers.
vmlog=("$KOFI_ROOT/target/release/kofi-vmlog")
# Built every time (a no-op when current): a stale binary would lack flags.
cargo build -q --release --manifest-path "$KOFI_ROOT/Cargo.toml" -p kofi-vmlog || exit 2
"${vmlog[@]}" --markers >"$root/kofi/splat-markers" || exit 2

# Two VMs talk over jumbo frames, as storage networks do: under TCG a frame
# costs about the same whatever its size, and at 9000 bytes their link
# carries a sixth of the frames (rxe's path MTU becomes 4096). A lone VM
# keeps Ethernet's 1500 (rxe: 1024), so the suites see both.
if [ "$vms" -gt 1 ]; then mtu=${KOFI_VM_MTU:-9000}; else mtu=${KOFI_VM_MTU:-1500}; fi

# What a guest whose boot splatted prints instead of running.
skipped_line="kofi-guest: the kernel splatted while booting; the run is skipped"

# The guest command line, quoted for the init script, and the settings the
# host passes on (the fault run's replay key and length, the cases a
# per-transport suite is narrowed to, the sizes an A/B compares).
guest_cmd=$(printf '%q ' "$@")
guest_env=""
for v in KOFI_FAULT_INTERVAL KOFI_FAULT_ROUNDS KOFI_CASES KOFI_AB_SIZES; do
	eval "val=\${$v:-}"
	[ -z "$val" ] || guest_env="${guest_env}export $v=$(printf '%q' "$val")
"
done
cat >"$root/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug
export PATH=/bin:/sbin:/usr/bin
export KOFI_NODE=\${kofi_node:-0} KOFI_VMS=\${kofi_vms:-1}
${guest_env}ip link set lo up
ip link set eth0 mtu $mtu up
ip addr add 10.0.2.\$((10 + KOFI_NODE))/24 dev eth0
ip -6 addr add fd00::\$((10 + KOFI_NODE))/64 dev eth0
if [ "\$KOFI_VMS" -gt 1 ]; then
	export KOFI_PEER=10.0.2.\$((11 - KOFI_NODE)) KOFI_PEER6=fd00::\$((11 - KOFI_NODE))
fi
# Fault injection (debug kernel): armed but idle. A test fails chosen
# allocations of its own task with /proc/self/fail-nth (or the task's
# fail_nth), or a fault run sets a probability; failures are silent (no
# stack dump, which would read as a splat) and sleeping allocations count.
# None fails inside vmalloc, which reports its own failures with a stack
# dump (kvmalloc's first try, kmalloc, fails quietly); fail-nth skips what
# the stack filter rejects.
set -- \$(grep -A1 ' __vmalloc_node_range_noprof\$' /proc/kallsyms | cut -d' ' -f1)
for f in failslab fail_page_alloc; do
	d=/sys/kernel/debug/\$f
	[ -d \$d ] || continue
	echo 0 >\$d/probability
	echo 0 >\$d/verbose
	echo N >\$d/ignore-gfp-wait
	echo 0x\$1 >\$d/reject-start
	echo 0x\$2 >\$d/reject-end
done
# The hung-task detector (debug kernel) looks every 30 s, not every timeout
# (240 s): a hang fails the run about four minutes after it begins.
f=/proc/sys/kernel/hung_task_check_interval_secs
[ -e \$f ] && echo 30 >\$f
# A kernel that splatted while booting (see boot_vms's caller) runs
# nothing: it is booted again at once, not after a whole run.
if dmesg | grep -qF -f /kofi/splat-markers; then
	echo "$skipped_line" >/dev/console
	echo KOFI-GUEST-DONE >/dev/ttyS1
	reboot -f
fi
echo "kofi-guest: running $guest_cmd" >/dev/console
cd /kofi
$guest_cmd >/dev/ttyS1 2>/dev/console
echo "kofi-guest: command exited with \$?" >/dev/console
# kmemleak reports objects unreferenced for 5 s or more: let the last test's
# objects age, then scan twice (the first scan can miss in-flight pointers).
if [ -e /sys/kernel/debug/kmemleak ]; then
	sleep 6
	echo scan >/sys/kernel/debug/kmemleak
	echo scan >/sys/kernel/debug/kmemleak
	cat /sys/kernel/debug/kmemleak >/dev/console
fi
echo KOFI-GUEST-DONE >/dev/ttyS1
reboot -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet) >"$out/initramfs.cpio"

# boot_vms: boot every VM once, wait for all.
boot_vms() {
	pids=()
	for i in $(seq 0 $((vms - 1))); do
		dir="$out/vm$i"
		mkdir -p "$dir"
		# QEMU socket netdev over UDP on the host's loopback: two VMs form
		# one Ethernet segment; a lone VM's frames go nowhere.
		base=$((20000 + ($$ % 20000)))
		net=(-netdev "socket,id=n0,udp=127.0.0.1:$((base + 1 - i)),localaddr=127.0.0.1:$((base + i))"
		     -device "virtio-net-pci,netdev=n0,mac=52:54:00:12:34:$((10 + i))")
		(
			rc=0
			timeout -k 10 "$timeout_s" qemu-system-x86_64 -accel tcg -cpu max -smp "${KOFI_VM_CPUS:-1}" -m "$mem" \
				-no-reboot -display none -monitor none \
				-kernel "$kernel" -initrd "$out/initramfs.cpio" \
				-append "console=ttyS0 panic=-1 acpi=noirq kofi_node=$i kofi_vms=$vms ${KOFI_VM_APPEND:-}" \
				-serial "file:$dir/console.log" -serial "file:$dir/results.ktap" \
				-pidfile "$dir/qemu.pid" "${net[@]}" >"$dir/qemu.out" 2>&1 || rc=$?
			[ $rc != 124 ] && [ $rc != 137 ] || touch "$dir/timed-out"
			echo $rc >"$dir/qemu.rc"
		) &
		pids+=($!)
	done
	# A guest that skipped its run stops the others: its peer would wait
	# for it test by test, up to the timeout.
	while [ "$vms" -gt 1 ] && running "${pids[@]}"; do
		if grep -qsF "$skipped_line" "$out"/vm*/console.log; then
			for i in $(seq 0 $((vms - 1))); do
				# (A guest gone already took its pid file with it.)
				kill "$(cat "$out/vm$i/qemu.pid" 2>/dev/null)" 2>/dev/null || true
			done
			break
		fi
		sleep 2
	done
	for p in "${pids[@]}"; do wait "$p"; done
}

# running PID...: whether any of them is.
running() {
	local p
	for p in "$@"; do
		kill -0 "$p" 2>/dev/null && return 0
	done
	return 1
}

# A splat before the guest's first line is a failed boot (a kernel race under
# TCG, seen as a KASAN report in handle_edge_irq during identify_cpu), not a
# result: no kofi module can load before that line, so booting again cannot
# hide a splat of kofi's.
for attempt in 1 2 3; do
	boot_vms
	failed_boot=
	for i in $(seq 0 $((vms - 1))); do
		"${vmlog[@]}" --boot-splat "$out/vm$i/console.log" >/dev/null &&
			failed_boot="$failed_boot vm$i"
	done
	[ -n "$failed_boot" ] && [ $attempt -lt 3 ] || break
	echo "vm-run: the kernel reported a splat before the guest started on$failed_boot (boot $attempt); booting again" >&2
	for i in $(seq 0 $((vms - 1))); do
		mv "$out/vm$i/console.log" "$out/vm$i/console.failed-boot-$attempt.log"
		rm -f "$out/vm$i/results.ktap" "$out/vm$i/timed-out" "$out/vm$i/qemu.pid"
	done
done

dirs=()
for i in $(seq 0 $((vms - 1))); do dirs+=("$out/vm$i"); done
exec "${vmlog[@]}" "${dirs[@]}"
