#!/usr/bin/env bash
# `make bench-ab BEFORE=<rev>`: the tree's kofi against revision <rev>'s
# (default HEAD: the uncommitted change) on the perf kernel, in one VM run:
# the two builds' kofi.ko, kofi_sock.ko and samples are loaded in turns,
# each round beside the same raw TCP baseline (tools/bench/ab_guest.sh).
# Prints per size the kofi/raw medians of both and the median of the
# round-by-round after/before ratio with its spread (and what one call
# through the core adds to a bare call): the before and after a commit
# message that claims a gain shows. KOFI_AB_ROUNDS (10) rounds,
# KOFI_VM_CPUS (2) guest CPUs.
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
	tools/bench/kofi_call_cost.ko; do
	cp "$old/$m" "$old-ko/B_$(basename "$m")"
done

export KOFI_VM_CPUS=${KOFI_VM_CPUS:-2}
echo "=== VM run (perf kernel, $KOFI_VM_CPUS CPUs): ${before:0:12} against the tree"
out="$KOFI_ROOT/build/bench-ab"
rc=0
scripts/vm-run.sh --kernel "$perf/arch/x86/boot/bzImage" --modules-root "$src" \
	--extra-modules "$old-ko" --out "$out" --timeout 3000 \
	-- /kofi/bench/ab_guest.sh "${KOFI_AB_ROUNDS:-10}" >"$out.verdict" 2>&1 || rc=$?
python3 - "$out/vm0/results.ktap" "${before:0:12}" <<'PY' | tee "$out.txt"
import sys, statistics as st
runs = {}
for l in open(sys.argv[1], errors='replace'):
    r = l.strip()[2:].split(',')
    if l.startswith('# ab,') and len(r) == 7:
        try:
            runs.setdefault((r[1], r[2], r[3], int(r[4])), {})[r[6]] = float(r[5])
        except ValueError:
            pass
def ratios(num, den):
    return [v / den[k] for k, v in num.items() if den.get(k)]
def diffs(num, den):
    return [v - den[k] for k, v in num.items() if k in den]
def show(v):
    return f"{st.median(v):5.2f} [{min(v):.2f}-{max(v):.2f}]" if v else "        -        "
print(f"before: {sys.argv[2]}, after: the tree; medians of the rounds [min-max]")
tables = (('rtt_ns', 'raw', 'kofi_sock round trip, kofi/raw TCP'),
          ('rdm_rtt_ns', 'msg', 'RDM round trip over kofi_sock, rdm/msg'),
          ('bw_mbs', 'raw', 'kofi_sock streaming, kofi/raw TCP'))
print("\none call through the core, ns the core adds to the bare call (after/before: kofi alone):")
for s, name in ((0, 'fi_cq_read'), (1, 'fi_getname')):
    cols = []
    for rev in ('before', 'after'):
        v = diffs(runs.get(('call_ns', rev, 'kofi', s), {}), runs.get(('call_ns', rev, 'raw', s), {}))
        cols.append(f"{st.median(v):5.0f} [{min(v):.0f}-{max(v):.0f}]" if v else "-")
    pair = ratios(runs.get(('call_ns', 'after', 'kofi', s), {}), runs.get(('call_ns', 'before', 'kofi', s), {}))
    print(f"  {name:>10} | before {cols[0]:>13} | after {cols[1]:>13} | {show(pair)}")
for m, base, title in tables:
    print(f"\n{title}:")
    print(f"  {'size':>8} | {'before':>17} | {'after':>17} | after/before (kofi alone)")
    for s in sorted({k[3] for k in runs if k[0] == m}):
        cols = []
        for rev in ('before', 'after'):
            den = runs.get(('rtt_ns', rev, 'kofi', s), {}) if base == 'msg' else runs.get((m, rev, 'raw', s), {})
            cols.append(show(ratios(runs.get((m, rev, 'kofi', s), {}), den)))
        pair = ratios(runs.get((m, 'after', 'kofi', s), {}), runs.get((m, 'before', 'kofi', s), {}))
        print(f"  {s:>8} | {cols[0]} | {cols[1]} | {show(pair)}")
PY
grep -E 'passed,' "$out.verdict" || cat "$out.verdict"
exit $rc
