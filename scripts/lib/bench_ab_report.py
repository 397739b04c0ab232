# SPDX-License-Identifier: GPL-2.0
"""`make bench-ab`'s report: the figures the guest printed, per revision.

Usage: bench_ab_report.py sock|storage RESULTS.KTAP BEFORE_REV [TRANSPORT]

sock: "# ab,<measure>,<rev>,<impl>,<size>,<value>,<round>" lines of
tools/bench/ab_guest.sh; storage: "# abblk,<workload>,<impl>,<metric>,
<value>,<round>" lines of tools/bench/ab_blk_guest.sh. Each cell is
reported as the median of its rounds [min-max], and a pair of cells as the
median of their round-by-round ratios.
"""
import statistics as st
import sys


def load(path, tag, fields):
    """Cells by key (the line's fields between the tag and the value) and
    round: {key: {round: value}}."""
    runs = {}
    for line in open(path, errors='replace'):
        r = line.strip()[2:].split(',')
        if not line.startswith(f'# {tag},') or len(r) != fields:
            continue
        try:
            runs.setdefault(tuple(r[1:-2]), {})[r[-1]] = float(r[-2])
        except ValueError:
            pass
    return runs


def ratios(num, den):
    return [v / den[k] for k, v in num.items() if den.get(k)]


def show(v, fmt='5.2f'):
    if not v:
        return '-'
    short = fmt.lstrip('0123456789')
    return f"{st.median(v):{fmt}} [{min(v):{short}}-{max(v):{short}}]"


def call_cost(runs):
    print("\none call through the core, ns the core adds to the bare call"
          " (after/before: kofi alone):")
    for s, name in (('0', 'fi_cq_read'), ('1', 'fi_getname')):
        cols = []
        for rev in ('before', 'after'):
            k, b = runs.get(('call_ns', rev, 'kofi', s), {}), runs.get(('call_ns', rev, 'raw', s), {})
            cols.append(show([v - b[r] for r, v in k.items() if r in b], '.0f'))
        pair = ratios(runs.get(('call_ns', 'after', 'kofi', s), {}),
                      runs.get(('call_ns', 'before', 'kofi', s), {}))
        print(f"  {name:>10} | before {cols[0]:>13} | after {cols[1]:>13} | {show(pair)}")


def sock(runs, before, transport=''):
    """kofi_sock against raw TCP, or (transport siw or rxe) kofi_verbs
    against raw verbs."""
    print(f"before: {before}, after: the tree; medians of the rounds [min-max]")
    if transport:
        tables = (('rtt_ns', 'raw', f'kofi_verbs round trip on {transport}, kofi/raw verbs'),
                  ('rdm_rtt_ns', 'msg', f'RDM round trip over kofi_verbs on {transport}, rdm/msg'),
                  ('write_mbs', 'raw', f'kofi_verbs RMA write streaming on {transport}, kofi/raw'),
                  ('read_mbs', 'raw', f'kofi_verbs RMA read streaming on {transport}, kofi/raw'),
                  ('msgbw_mbs', 'raw', f'kofi_verbs message streaming on {transport}, kofi/raw'),
                  ('msgbw4_mbs', 'raw', f'kofi_verbs messages four in flight on {transport}'
                   ' (no raw baseline)'))
    else:
        call_cost(runs)
        tables = (('rtt_ns', 'raw', 'kofi_sock round trip, kofi/raw TCP'),
                  ('rdm_rtt_ns', 'msg', 'RDM round trip over kofi_sock, rdm/msg'),
                  ('bw_mbs', 'raw', 'kofi_sock streaming, kofi/raw TCP'))
    for m, base, title in tables:
        print(f"\n{title}:")
        print(f"  {'size':>8} | {'before':>17} | {'after':>17} | after/before (kofi alone)")
        for s in sorted({k[3] for k in runs if k[0] == m}, key=int):
            cols = []
            for rev in ('before', 'after'):
                den = (runs.get(('rtt_ns', rev, 'kofi', s), {}) if base == 'msg'
                       else runs.get((m, rev, 'raw', s), {}))
                cols.append(show(ratios(runs.get((m, rev, 'kofi', s), {}), den)))
            pair = ratios(runs.get((m, 'after', 'kofi', s), {}), runs.get((m, 'before', 'kofi', s), {}))
            print(f"  {s:>8} | {cols[0]:>17} | {cols[1]:>17} | {show(pair)}")


def storage(runs, before, transport):
    against = {'tcp': 'kofi_sock against nvme-tcp',
               'siw': 'kofi_verbs on siw against nvme-rdma',
               'rxe': 'kofi_verbs on rxe against nvme-rdma'}[transport]
    print(f"before: {before}, after: the tree; kofi_blk over {against},")
    print("medians of the rounds [min-max]; ratios kofi_blk/nvme and after/before"
          " round by round")
    # The workloads in the guest's order, each with the one metric it has
    # beside the counters.
    for w in dict.fromkeys(k[0] for k in runs):
        m = next(k[2] for k in runs if k[0] == w and k[2] not in ('ctxt', 'segs'))
        print(f"\n{w} ({m}; per I/O: context switches, TCP segments)")
        for impl in ('nvme', 'before', 'after'):
            cell = runs.get((w, impl, m), {})
            rt = '' if impl == 'nvme' else show(ratios(cell, runs.get((w, 'nvme', m), {})))
            print(f"  {impl:>6} {show(list(cell.values()), '.0f'):>22}  /nvme {rt:>18}"
                  f"  ctxt {show(list(runs.get((w, impl, 'ctxt'), {}).values())):>18}"
                  f"  segs {show(list(runs.get((w, impl, 'segs'), {}).values()))}")
        pair = ratios(runs.get((w, 'after', m), {}), runs.get((w, 'before', m), {}))
        print(f"  after/before {show(pair)}")


if __name__ == '__main__':
    mode, path, before = sys.argv[1:4]
    if mode == 'sock':
        sock(load(path, 'ab', 7), before, sys.argv[4] if len(sys.argv) > 4 else '')
    else:
        storage(load(path, 'abblk', 6), before, sys.argv[4] if len(sys.argv) > 4 else 'tcp')
