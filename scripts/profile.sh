#!/usr/bin/env bash
# `make profile`: on the perf kernel, in one VM, perf samples (cpu-clock,
# system-wide) kofi and the raw baselines on the same runs: 4 KiB round
# trips and 64 KiB streams over TCP, 4 KiB round trips and 64 KiB RMA writes
# over siw; kofi_blk against NVMe-oF (4 KiB random reads and writes at depth
# 1 over TCP and at depth 32 over siw, 128 KiB writes over siw;
# KOFI_PROFILE_RUNS names some of the runs of tools/bench/profile_guest.sh).
# Prints, per run, the share of time per module and the top symbols, kofi
# beside its baseline, and for kofi_blk's and the pingpongs' runs the CPU
# time per I/O or round trip by context (a queue_rq, a work item, fio's
# calls; a fi_* call, the raw socket calls) four calls deep
# (KOFI_PROFILE_DEPTH more or fewer), from call
# chains; writes build/profile/profile.txt.
set -euo pipefail
. "$(dirname "$0")/lib/env.sh"
cd "$KOFI_ROOT"
. "$(dirname "$0")/lib/perf_build.sh"
perf_build

echo "=== VM run (perf kernel, perf in the guest)"
out="$KOFI_ROOT/build/profile"
depth=${KOFI_PROFILE_DEPTH:-4}
rc=0
scripts/vm-run.sh --kernel "$perf/arch/x86/boot/bzImage" --modules-root "$src" --out "$out" \
	--with-perf --mem 2G --timeout 1800 -- /kofi/bench/profile_guest.sh "$depth" ${KOFI_PROFILE_RUNS:-} >"$out.verdict" 2>&1 || rc=$?
python3 - "$out/vm0/results.ktap" "$depth" <<'PY' | tee "$out/profile.txt"
import sys, collections, re
rows = collections.OrderedDict()
for line in open(sys.argv[1], errors='replace'):
    line = line.strip()
    if not line.startswith('# profile,'):
        continue
    _, run, impl, by, pct, what = line[2:].split(',', 5)
    rows.setdefault(run, {}).setdefault(by, {}).setdefault(impl, []).append((float(pct), what))
for run, bys in rows.items():
    n = {i: v[0][1] for i, v in bys.get('samples', {}).items()}
    # The baseline: the raw loop, or NVMe-oF for kofi_blk's runs.
    base = next((i for i in n if i != 'kofi'), 'raw')
    print(f"\n== {run}: share of samples (%), kofi ({n.get('kofi', '?')} samples) | {base} ({n.get(base, '?')})")
    for by, title in (('dso', 'by module'), ('sym', 'by symbol')):
        k, r = bys.get(by, {}).get('kofi', []), bys.get(by, {}).get(base, [])
        print(f"-- {title}")
        for i in range(max(len(k), len(r))):
            a = f"{k[i][0]:5.1f} {k[i][1][:44]}" if i < len(k) else ''
            b = f"{r[i][0]:5.1f} {r[i][1][:44]}" if i < len(r) else ''
            print(f"  {a:<52} | {b}")

# Time per I/O or round trip by context (kofi_blk's and the pingpongs' runs,
# tools/bench/profile_guest.sh's paths), each side's tree heaviest first,
# Rust symbols by their last names.
def short(sym):
    if not sym.startswith('_R'):
        return sym
    s = re.sub(r'(?<=[CMXYN])s[0-9A-Za-z]{0,12}_|B[0-9A-Za-z]{0,3}_', '', sym)
    names, i = [], 0
    for m in re.finditer(r'(?<=[A-Za-z_])(\d+)', s):
        if m.start() < i:
            continue
        n = int(m.group(1))
        name = s[m.end():m.end() + n]
        if n > 1 and re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', name):
            names.append(name)
            i = m.end() + n
    if 'kernel' in names:  # a trait of the kernel crate: Type::method
        k = names.index('kernel')
        names = names[max(0, k - 1):k] + names[-1:]
    return '::'.join(names[-3:]) or sym
paths, units = collections.OrderedDict(), {}
for line in open(sys.argv[1], errors='replace'):
    if line.startswith('# paths,'):
        _, run, impl, unit, us, key = line.strip()[2:].split(',', 5)
        units[run] = unit
        paths.setdefault(run, {}).setdefault(impl, {})[tuple(key.split(';'))] = float(us)
for run, impls in paths.items():
    print(f"\n== {run}: us of CPU per {units[run]} by context, {sys.argv[2]} calls deep (at least 1 us)")
    for impl, tree in impls.items():
        print(f"-- {impl}")
        def show(prefix):
            kids = [k for k in tree if len(k) == len(prefix) + 1 and k[:len(prefix)] == prefix]
            for k in sorted(kids, key=lambda k: -tree[k]):
                print(f"  {'  ' * len(prefix)}{tree[k]:6.1f} {short(k[-1])[:70]}")
                show(k)
        show(())
PY
grep -E 'passed,' "$out.verdict" || cat "$out.verdict"
exit $rc
