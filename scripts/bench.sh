#!/usr/bin/env bash
# `make bench`: on the perf kernel, in one VM run, kofi_sock against a raw
# in-kernel TCP baseline (pingpong round trip and streaming messages, 64 B to
# 1 MiB), kofi_verbs against a raw verbs baseline on siw and on rxe
# (pingpong round trip and streaming RMA writes), and the cost of one call
# through the core. Prints a table per transport with the ratio kofi/raw and
# writes build/bench/results.csv and, when gnuplot is there,
# build/bench/bench.png.
set -euo pipefail
. "$(dirname "$0")/lib/env.sh"
cd "$KOFI_ROOT"

. "$(dirname "$0")/lib/perf_build.sh"
perf_build

echo "=== VM run (perf kernel)"
out="$KOFI_ROOT/build/bench"
rc=0
scripts/vm-run.sh --kernel "$perf/arch/x86/boot/bzImage" --modules-root "$src" --out "$out" \
	--timeout 1800 -- /kofi/bench/bench_guest.sh >"$out.verdict" 2>&1 || rc=$?
python3 - "$out/vm0/results.ktap" "$out/results.csv" <<'PY'
import sys, csv
rows = [l.strip()[2:].split(',') for l in open(sys.argv[1], errors='replace') if l.strip().startswith('# bench,')]
data = {}
with open(sys.argv[2], 'w', newline='') as f:
    w = csv.writer(f)
    w.writerow(['measure', 'transport', 'impl', 'size', 'value'])
    for r in rows:
        if len(r) == 6 and r[5].isdigit():
            w.writerow(r[1:])
            data[(r[1], r[2], r[3], int(r[4]))] = int(r[5])
for k, v in data.items():
    if k[0] == 'call_ns':
        print(f"one call through the core, {k[2]}: {v} ns")
titles = {'tcp': 'kofi_sock vs raw TCP (bandwidth: streaming messages)',
          'siw': 'kofi_verbs vs raw verbs on siw (bandwidth: streaming RMA writes)',
          'rxe': 'kofi_verbs vs raw verbs on rxe (bandwidth: streaming RMA writes)'}
for t in ['tcp', 'siw', 'rxe']:
    sizes = sorted({k[3] for k in data if k[1] == t})
    if not sizes:
        continue
    print(f"\n{titles[t]}")
    print(f"{'size':>8} | {'rtt raw us':>10} {'rtt kofi us':>11} {'kofi/raw':>8} | {'bw raw MB/s':>11} {'bw kofi MB/s':>12} {'kofi/raw':>8}")
    for s in sizes:
        rr, rk = data.get(('rtt_ns', t, 'raw', s)), data.get(('rtt_ns', t, 'kofi', s))
        br, bk = data.get(('bw_mbs', t, 'raw', s)), data.get(('bw_mbs', t, 'kofi', s))
        f = lambda x: '-' if x is None else f"{x / 1000:.1f}"
        g = lambda x: '-' if x is None else str(x)
        r1 = f"{rk / rr:.2f}" if rr and rk else '-'
        r2 = f"{bk / br:.2f}" if br and bk else '-'
        print(f"{s:>8} | {f(rr):>10} {f(rk):>11} {r1:>8} | {g(br):>11} {g(bk):>12} {r2:>8}")
PY
if command -v gnuplot >/dev/null 2>&1; then
	awk -F, 'NR > 1 && $1 == "rtt_ns" { print $2 "-" $3, $4, $5 / 1000 }' "$out/results.csv" >"$out/rtt.dat"
	awk -F, 'NR > 1 && $1 == "bw_mbs" { print $2 "-" $3, $4, $5 }' "$out/results.csv" >"$out/bw.dat"
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
