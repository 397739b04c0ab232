#!/usr/bin/env bash
# `make bench-ab BEFORE=<rev>`: the tree's kofi against revision <rev>'s
# (default HEAD: the uncommitted change) on the perf kernel, in one VM run:
# the two builds' kofi.ko, kofi_sock.ko and samples are loaded in turns,
# each round beside the same raw TCP baseline (tools/bench/ab_guest.sh).
# Prints per size the kofi/raw medians of both and the median of the
# round-by-round after/before ratio with its spread (and what one call
# through the core adds to a bare call): the before and after a commit
# message that claims a gain shows. KOFI_AB_ROUNDS (10) rounds,
# KOFI_VM_CPUS (2) guest CPUs; KOFI_AB_SIZES the message sizes ("64 4096
# 65536" on kofi_sock, "4096 65536 1048576" on kofi_verbs).
# KOFI_AB_STORAGE=1 compares kofi_blk instead, NVMe-oF on the same RAM disk
# as the baseline of every round (tools/bench/ab_blk_guest.sh,
# KOFI_AB_ROUNDS default 5): fio 4 KiB random reads and writes at depth 1
# (latency) and 32 (IOPS), 128 KiB sequential ones at depth 8 (MB/s), and
# per I/O the context switches and TCP segments. KOFI_AB_TRANSPORT=tcp
# (default: kofi_sock against nvme-tcp), siw or rxe (kofi_verbs against
# nvme-rdma). Without KOFI_AB_STORAGE, KOFI_AB_TRANSPORT=siw or rxe
# compares kofi_verbs against raw verbs on that device instead of kofi_sock
# against raw TCP: round trips, RMA write and message streams.
set -euo pipefail
. "$(dirname "$0")/lib/env.sh"
cd "$KOFI_ROOT"
before=$(git rev-parse --verify "${BEFORE:-HEAD}^{commit}")

. "$(dirname "$0")/lib/perf_build.sh"
perf_build

echo "=== modules of ${before:0:12} for the perf kernel"
old="$KOFI_ROOT/build/ab-before"
rm -rf "$old" "$old-ko"
mkdir -p "$old" "$old-ko"
git archive "$before" | tar -x -C "$old"
make -C "$perf" M="$old" LLVM=1 -j"$KOFI_JOBS" modules >"$KOFI_ROOT/build/ab-build.log" 2>&1 ||
	{ tail -30 "$KOFI_ROOT/build/ab-build.log"; exit 1; }
for m in kofi/kofi.ko providers/sock/kofi_sock.ko samples/pingpong/kofi_pingpong.ko \
	samples/bandwidth/kofi_bw.ko tools/testing/selftests/kofi/kofi_test_provider.ko \
	tools/bench/kofi_call_cost.ko blockdev/initiator/kofi_blk.ko blockdev/target/kofi_blkt.ko \
	providers/verbs/kofi_verbs.ko; do
	cp "$old/$m" "$old-ko/B_$(basename "$m")"
done

export KOFI_VM_CPUS=${KOFI_VM_CPUS:-2}
echo "=== VM run (perf kernel, $KOFI_VM_CPUS CPUs): ${before:0:12} against the tree"
out="$KOFI_ROOT/build/bench-ab"
if [ -n "${KOFI_AB_STORAGE:-}" ]; then
	guest=ab_blk_guest.sh rounds=${KOFI_AB_ROUNDS:-5} report=storage
	transport=${KOFI_AB_TRANSPORT:-tcp}
else
	guest=ab_guest.sh rounds=${KOFI_AB_ROUNDS:-10} report=sock
	transport=${KOFI_AB_TRANSPORT:-}
fi
rc=0
scripts/vm-run.sh --kernel "$perf/arch/x86/boot/bzImage" --modules-root "$src" \
	--extra-modules "$old-ko" --out "$out" --timeout 3000 \
	-- /kofi/bench/$guest "$rounds" $transport >"$out.verdict" 2>&1 || rc=$?
python3 scripts/lib/bench_ab_report.py $report "$out/vm0/results.ktap" "${before:0:12}" $transport |
	tee "$out.txt"
grep -E 'passed,' "$out.verdict" || cat "$out.verdict"
exit $rc
