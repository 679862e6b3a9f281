#!/usr/bin/env python3
"""Sets cuda-async 0.5.0's figures beside ours and the C floor's, from call_async.sh's log.

Sections start with `=== floor:NAME round N ===`, `=== ours:ABI/NAME round N ===` or
`=== theirs:cuda-async/NAME round N ===`; each holds `FIG name value unit` lines. A figure of
theirs is named as ours with the `cuda_async_` prefix. For every figure, prints the medians over
rounds (with the range, min-max), the floor's median where the floor reports the same figure,
and how ours compares: theirs/ours for times (lower is better), ours/theirs for rates and the
awaited-over-blocking ratio (higher is better), so above 1 means ours is ahead.

usage: python3 lab/gpu/call_async_table.py bench.log
"""
import re
import statistics
import sys
from collections import defaultdict

SECTION = re.compile(r"^=== (floor|ours|theirs):(\S+) round (\d+) ===$")
FIG = re.compile(r"^FIG (\S+) (\S+) (\S+)$")
PREFIX = "cuda_async_"


def parse(path):
    """{side: {figure: ([values], unit)}}, the figures in the order they first appear."""
    figures = {side: {} for side in ("floor", "ours", "theirs")}
    side = None
    with open(path, encoding="utf-8", errors="replace") as log:
        for line in log:
            line = line.strip()
            section = SECTION.match(line)
            if section:
                side = section.group(1)
                continue
            fig = FIG.match(line)
            if not fig or side is None:
                continue
            name, unit = fig.group(1), fig.group(3)
            try:
                value = float(fig.group(2))
            except ValueError:
                continue
            if side == "theirs" and name.startswith(PREFIX):
                name = name[len(PREFIX):]
            figures[side].setdefault(name, ([], unit))[0].append(value)
    return figures


def higher_is_better(name, unit):
    return unit == "1/s" or (unit == "ratio" and "_over_blocking" in name)


def number(value):
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def cell(entry):
    if not entry:
        return "-"
    values, _ = entry
    median = statistics.median(values)
    if len(values) == 1:
        return number(median)
    return f"{number(median)} [{number(min(values))}-{number(max(values))}]"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    figures = parse(sys.argv[1])
    names = list(figures["ours"]) + [n for n in figures["theirs"] if n not in figures["ours"]]
    rows = []
    for name in names:
        ours, theirs = figures["ours"].get(name), figures["theirs"].get(name)
        unit = (ours or theirs)[1]
        floor = figures["floor"].get(name)
        ahead = "-"
        if ours and theirs:
            a, b = statistics.median(ours[0]), statistics.median(theirs[0])
            if a > 0 and b > 0:
                ahead = f"{a / b:.2f}x" if higher_is_better(name, unit) else f"{b / a:.2f}x"
        if ours or theirs:
            rows.append((name, unit, cell(floor), cell(ours), cell(theirs), ahead))
    header = ("figure", "unit", "C floor", "cuda-safe-async", "cuda-async 0.5.0", "ours ahead")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    for row in [header] + rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())
    print("medians over rounds [min-max]; 'ours ahead' above 1: ours is faster or lighter")


if __name__ == "__main__":
    main()
