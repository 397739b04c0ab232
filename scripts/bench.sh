#!/usr/bin/env bash
# `make bench`: on the perf kernel, in one VM run, kofi_sock against a raw
# in-kernel TCP baseline (pingpong round trip and streaming messages, 64 B to
# 1 MiB), scaling (1, 4 and 16 kofi_sock endpoint pairs against as many raw
# TCP connections: aggregate bandwidth, CPU time per KiB), kofi_verbs
# against a raw verbs baseline on siw and on rxe
# (pingpong round trip and streaming RMA writes), RDM endpoints against the
# MSG endpoints below them (round trip), the cost of one call
# through the core, and kofi_blk against NVMe-oF (nvme-tcp, nvme-rdma on rxe
# and siw, with nvmet on the same RAM disk; fio, three runs a cell). Prints
# a table per transport with the ratio kofi/raw, the storage table with the
# ratio kofi_blk/NVMe-oF, and writes build/bench/results.csv (median, min,
# max and number of runs per cell, and the kofi/raw ratios) and, when
# gnuplot is there, build/bench/bench.png. KOFI_BENCH_NO_STORAGE=1 leaves
# the storage table out (a few minutes instead of about twenty).
set -euo pipefail
. "$(dirname "$0")/lib/env.sh"
cd "$KOFI_ROOT"

. "$(dirname "$0")/lib/perf_build.sh"
perf_build

# Two CPUs, as the suites have: one would run every hop of both sides in
# series, and nothing would see the concurrency a real machine has.
export KOFI_VM_CPUS=${KOFI_VM_CPUS:-2}
echo "=== VM run (perf kernel, $KOFI_VM_CPUS CPUs)"
out="$KOFI_ROOT/build/bench"
rc=0
scripts/vm-run.sh --kernel "$perf/arch/x86/boot/bzImage" --modules-root "$src" --out "$out" \
	--timeout 3000 -- /kofi/bench/bench_guest.sh ${KOFI_BENCH_NO_STORAGE:+--no-storage} \
	>"$out.verdict" 2>&1 || rc=$?
python3 - "$out/vm0/results.ktap" "$out/results.csv" <<'PY'
import sys, csv
def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
lines = [l.strip() for l in open(sys.argv[1], errors='replace')]
# Runs per cell: "# bench,measure,transport,impl,size,value,round".
runs = {}
for l in lines:
    r = l[2:].split(',')
    if l.startswith('# bench,') and len(r) == 7:
        try:
            runs.setdefault((r[1], r[2], r[3], int(r[4])), {})[r[6]] = float(r[5])
        except ValueError:
            pass
# Ratios round by round: kofi and its baseline ran back to back.
ratios = {}
for (m, t, impl, s), by_round in runs.items():
    if m in ('rtt_ns', 'bw_mbs', 'readbw_mbs', 'msgbw_mbs', 'cpu_ns_per_kib') and impl == 'kofi':
        raw = runs.get((m, t, 'raw', s), {})
        ratios[(m, t, s)] = [v / raw[k] for k, v in by_round.items() if raw.get(k)]
    if m == 'call_ns' and t == 'core':
        bare = runs.get((m, 'baseline', impl, s), {})
        ratios[(m, impl, s)] = [v - bare[k] for k, v in by_round.items() if k in bare]
with open(sys.argv[2], 'w', newline='') as f:
    w = csv.writer(f)
    w.writerow(['measure', 'transport', 'impl', 'size', 'median', 'min', 'max', 'runs'])
    for (m, t, impl, s), by_round in sorted(runs.items()):
        v = list(by_round.values())
        w.writerow([m, t, impl, s, f"{median(v):.2f}", f"{min(v):.2f}", f"{max(v):.2f}", len(v)])
    for (m, t, s), v in sorted(ratios.items()):
        if v and m != 'call_ns':
            w.writerow([m, t, 'ratio', s, f"{median(v):.3f}", f"{min(v):.3f}", f"{max(v):.3f}", len(v)])
def med(k):
    v = runs.get(k)
    return median(list(v.values())) if v else None
for op in ('fi_cq_read', 'fi_getname'):
    core, bare, added = med(('call_ns', 'core', op, 0)), med(('call_ns', 'baseline', op, 0)), ratios.get(('call_ns', op, 0))
    if core is not None and bare is not None and added:
        print(f"one call through the core, {op}: {core:.0f} ns, baseline {bare:.0f} ns: "
              f"the core adds {median(added):.0f} ns [{min(added):.0f}-{max(added):.0f}] "
              f"(median of {len(added)} runs [min-max])")
titles = {'tcp': 'kofi_sock vs raw TCP (bandwidth: streaming messages)',
          'rdm': 'RDM endpoints vs the kofi_sock MSG endpoints below them (round trip; "raw" is MSG)',
          'siw': 'kofi_verbs vs raw verbs on siw (bandwidth: streaming RMA writes, RMA reads, then messages)',
          'rxe': 'kofi_verbs vs raw verbs on rxe (bandwidth: streaming RMA writes, RMA reads, then messages)'}
# The storage table: medians (and spreads) of the runs per cell.
blk = {}
for l in lines:
    r = l[2:].split(',')
    if l.startswith('# blk,') and len(r) == 6:
        try:
            blk.setdefault(tuple(r[1:5]), []).append(float(r[5]))
        except ValueError:
            pass
if blk:
    with open(sys.argv[2], 'a', newline='') as f:
        w = csv.writer(f)
        for (wl, t, impl, m), v in sorted(blk.items()):
            w.writerow([f'blk_{wl}_{m}', t, impl, 4096 if 'qd' in wl else 131072,
                        round(median(v)), round(min(v)), round(max(v)), len(v)])
    print("\nkofi_blk against NVMe-oF on the same RAM disk (fio; median of runs [min-max]; "
          "ratio kofi/nvme: >= 1 is better for IOPS and MB/s, <= 1 for latency)")
    cells = [('randread_qd1', 'lat_us'), ('randread_qd1', 'p99_us'), ('randwrite_qd1', 'lat_us'),
             ('randwrite_qd1', 'p99_us'), ('randread_qd32', 'iops'), ('randwrite_qd32', 'iops'),
             ('read_128k', 'mbs'), ('write_128k', 'mbs')]
    def cell(k):
        v = blk.get(k)
        return '-' if not v else f"{median(v):.0f} [{min(v):.0f}-{max(v):.0f}]"
    print(f"{'workload':<24} {'ram0 alone':>18} | {'transport':>9} {'kofi_blk':>18} {'nvme':>18} {'ratio':>6}")
    for wl, m in cells:
        first = True
        for t in ['tcp', 'rxe', 'siw']:
            k, n = blk.get((wl, t, 'kofi', m)), blk.get((wl, t, 'nvme', m))
            ratio = f"{median(k) / median(n):.2f}" if k and n and median(n) else '-'
            local = cell((wl, 'local', 'ram', m)) if first else ''
            name = f"{wl} {m}" if first else ''
            print(f"{name:<24} {local:>18} | {t:>9} {cell((wl, t, 'kofi', m)):>18} "
                  f"{cell((wl, t, 'nvme', m)):>18} {ratio:>6}")
            first = False
def ratio_cell(k):
    v = ratios.get(k)
    return '-' if not v else f"{median(v):.2f} [{min(v):.2f}-{max(v):.2f}]"
pairs = sorted({k[3] for k in runs if k[1] == 'scale'})
if pairs:
    print("\nScaling: N kofi_sock endpoint pairs streaming 64 KiB messages at once against N raw "
          "TCP connections, 128 MiB in all; medians of rounds, kofi/raw [min-max]; CPU: the "
          "guest's busy time per KiB moved (both sides, all CPUs)")
    print(f"{'pairs':>5} | {'bw raw MB/s':>11} {'bw kofi MB/s':>12} {'kofi/raw':>17} | "
          f"{'cpu raw ns/KiB':>14} {'cpu kofi ns/KiB':>15} {'kofi/raw':>17}")
    for n in pairs:
        br, bk = med(('bw_mbs', 'scale', 'raw', n)), med(('bw_mbs', 'scale', 'kofi', n))
        cr, ck = med(('cpu_ns_per_kib', 'scale', 'raw', n)), med(('cpu_ns_per_kib', 'scale', 'kofi', n))
        g = lambda x: '-' if x is None else f"{x:.0f}"
        print(f"{n:>5} | {g(br):>11} {g(bk):>12} {ratio_cell(('bw_mbs', 'scale', n)):>17} | "
              f"{g(cr):>14} {g(ck):>15} {ratio_cell(('cpu_ns_per_kib', 'scale', n)):>17}")
for t in ['tcp', 'rdm', 'siw', 'rxe']:
    sizes = sorted({k[3] for k in runs if k[1] == t})
    if not sizes:
        continue
    print(f"\n{titles[t]}: medians of rounds; kofi/raw is the median of the rounds' ratios [min-max]")
    # Streaming messages beside the RMA writes, where the transport has them.
    msg = any(k[0] == 'msgbw_mbs' and k[1] == t for k in runs)
    read = any(k[0] == 'readbw_mbs' and k[1] == t for k in runs)
    print(f"{'size':>8} | {'rtt raw us':>10} {'rtt kofi us':>11} {'kofi/raw':>17} | "
          f"{'bw raw MB/s':>11} {'bw kofi MB/s':>12} {'kofi/raw':>17}"
          + (f" | {'rd raw MB/s':>12} {'rd kofi MB/s':>13} {'kofi/raw':>17}" if read else "")
          + (f" | {'msg raw MB/s':>12} {'msg kofi MB/s':>13} {'kofi/raw':>17}" if msg else ""))
    for s in sizes:
        rr, rk = med(('rtt_ns', t, 'raw', s)), med(('rtt_ns', t, 'kofi', s))
        br, bk = med(('bw_mbs', t, 'raw', s)), med(('bw_mbs', t, 'kofi', s))
        mr, mk = med(('msgbw_mbs', t, 'raw', s)), med(('msgbw_mbs', t, 'kofi', s))
        dr, dk = med(('readbw_mbs', t, 'raw', s)), med(('readbw_mbs', t, 'kofi', s))
        f = lambda x: '-' if x is None else f"{x / 1000:.1f}"
        g = lambda x: '-' if x is None else (f"{x:.2f}" if x < 10 else f"{x:.0f}")
        print(f"{s:>8} | {f(rr):>10} {f(rk):>11} {ratio_cell(('rtt_ns', t, s)):>17} | "
              f"{g(br):>11} {g(bk):>12} {ratio_cell(('bw_mbs', t, s)):>17}"
              + (f" | {g(dr):>12} {g(dk):>13} {ratio_cell(('readbw_mbs', t, s)):>17}" if read else "")
              + (f" | {g(mr):>12} {g(mk):>13} {ratio_cell(('msgbw_mbs', t, s)):>17}" if msg else ""))
PY
if command -v gnuplot >/dev/null 2>&1; then
	awk -F, 'NR > 1 && $1 == "rtt_ns" && $3 != "ratio" { print $2 "-" $3, $4, $5 / 1000 }' "$out/results.csv" >"$out/rtt.dat"
	awk -F, 'NR > 1 && $1 == "bw_mbs" && $3 != "ratio" { print $2 "-" $3, $4, $5 }' "$out/results.csv" >"$out/bw.dat"
	plots() { # the plot command of one panel from data file $1
		sep=""
		for line in tcp-raw:"raw TCP" tcp-kofi:"kofi_sock" siw-raw:"raw verbs, siw" \
			siw-kofi:"kofi_verbs, siw" rxe-raw:"raw verbs, rxe" rxe-kofi:"kofi_verbs, rxe"; do
			key=${line%%:*}
			grep -q "^$key " "$1" || continue
			printf '%s"< grep ^%s %s" using 2:3 with linespoints title "%s"' "$sep" "$key" "$1" "${line#*:}"
			sep=", "
		done
	}
	gnuplot <<GP
set terminal pngcairo size 1200,480 noenhanced
set output "$out/bench.png"
set xtics ("64" 64, "1K" 1024, "4K" 4096, "16K" 16384, "64K" 65536, "256K" 262144, "1M" 1048576)
set multiplot layout 1,2 title "kofi against raw kernel baselines (perf kernel, one VM, TCG)"
set logscale x 2
set xlabel "message size (bytes)"
set ylabel "round trip (us)"
set logscale y
plot $(plots "$out/rtt.dat")
set ylabel "bandwidth (MB/s)"
plot $(plots "$out/bw.dat")
unset multiplot
GP
	echo "plot: $out/bench.png"
fi
echo "results: $out/results.csv"
grep -E 'passed,' "$out.verdict" || cat "$out.verdict"
exit $rc
