#!/usr/bin/env python3
"""The table of a rounds.sh log: per program and figure, the median over rounds, the median of
the per-round ratios program / reference with their quartiles (for a rate above 1 is faster,
for a time slower), in how many rounds the program's figure was above the reference's, and the
two-sided sign test's p for that count (how often a program no different from the reference
would be above or below it in as many rounds or more).

usage: rounds_table.py LOG [REFERENCE]   (REFERENCE: a program's name, default the first logged)
"""
import math
import re
import statistics
import sys


def sign_test(above, n):
    """Two-sided p of `above` rounds above the reference out of `n` (ties count as below)."""
    extreme = max(above, n - above)
    tail = sum(math.comb(n, k) for k in range(extreme, n + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def read(path):
    """({program: {(figure, unit): {round: value}}}, {program: failed runs}), programs in the
    order first logged."""
    runs, failed, name, rnd = {}, {}, None, None
    with open(path) as log:
        for line in log:
            header = re.match(r"=== (\S+) round (\d+) ===", line)
            if header:
                name, rnd = header.group(1), int(header.group(2))
                runs.setdefault(name, {})
                continue
            if line.startswith("!!! exit") and name:
                failed[name] = failed.get(name, 0) + 1
            fig = re.match(r"FIG (\S+) (\S+) (\S+)", line)
            if fig and name:
                key = (fig.group(1), fig.group(3))
                runs[name].setdefault(key, {})[rnd] = float(fig.group(2))
    return runs, failed


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    runs, failed = read(sys.argv[1])
    if not runs:
        sys.exit(f"{sys.argv[1]}: no rounds logged")
    reference_name = sys.argv[2] if len(sys.argv) == 3 else next(iter(runs))
    reference = runs.get(reference_name, {})
    print(f"{'program':18} {'figure':40} {'median':>12} {'unit':5} "
          f"ratio to {reference_name} [quartiles]  above/rounds  sign test p")
    for program, figures in runs.items():
        for (figure, unit), values in sorted(figures.items()):
            base = reference.get((figure, unit), {})
            ratios = sorted(values[r] / base[r] for r in values if r in base and base[r] > 0)
            median = statistics.median(values.values())
            if not ratios:
                print(f"{program:18} {figure:40} {median:12.4g} {unit:5} (no reference)")
                continue
            n = len(ratios)
            above = sum(ratio > 1 for ratio in ratios)
            p = "" if program == reference_name else f"  p={sign_test(above, n):.2g}"
            print(f"{program:18} {figure:40} {median:12.4g} {unit:5} "
                  f"{statistics.median(ratios):.3f} "
                  f"[{ratios[n // 4]:.3f}-{ratios[(3 * n) // 4]:.3f}]  {above}/{n}{p}")
    for program, count in failed.items():
        print(f"{program}: {count} run(s) failed (see the log's '!!! exit' lines)")


main()
