#!/usr/bin/env python3
"""Compares the FIG lines of the C floors with those of the Rust benchmarks in one bench.log.

Sections start with `=== floor:<name> round <n> ===` or `=== ours:<abi>/<bench> round <n> ===`;
each holds `FIG <figure> <value> <unit>` lines. For every figure that a floor and a Rust
benchmark both report, prints the medians over rounds and the median of the per-round ratios
(cost ratio: ours/floor for times, floor/ours for rates, so above 1 means slower than C).
Figures no floor reports (in-process comparisons such as `green_busy_probe_crate_over_raw`)
follow in a second table, with their medians and ranges over rounds.
"""
import argparse
import json
import re
import statistics
import sys
from collections import defaultdict

SECTION = re.compile(r"^=== (floor|ours):(\S+) round (\d+) ===$")
FIG = re.compile(r"^FIG (\S+) (\S+) (\S+)$")
RATES = ("GB/s", "TB/s", "GFLOP/s", "TFLOP/s", "1/s")


def parse(path):
    """{(kind, source): {figure: {round: (value, unit)}}}"""
    figures = defaultdict(lambda: defaultdict(dict))
    current = None
    with open(path, encoding="utf-8", errors="replace") as log:
        for line in log:
            line = line.strip()
            section = SECTION.match(line)
            if section:
                current = (section.group(1), section.group(2), int(section.group(3)))
                continue
            fig = FIG.match(line)
            if fig and current:
                kind, source, round_ = current
                try:
                    value = float(fig.group(2))
                except ValueError:
                    continue
                figures[(kind, source)][fig.group(1)][round_] = (value, fig.group(3))
    return figures


def cost_ratio(ours, floor, unit):
    if unit in RATES:
        return floor / ours if ours else float("inf")
    return ours / floor if floor else float("inf")


def quartiles(values):
    """The first and third quartiles of `values` ([] for fewer than two)."""
    if len(values) < 2:
        return []
    q1, _, q3 = statistics.quantiles(values, n=4)
    return [q1, q3]


def compare(figures):
    rows = []
    floors = {k: v for k, v in figures.items() if k[0] == "floor"}
    ours = {k: v for k, v in figures.items() if k[0] == "ours"}
    for (_, source), ours_figs in sorted(ours.items()):
        for figure, ours_rounds in sorted(ours_figs.items()):
            for (_, floor_source), floor_figs in sorted(floors.items()):
                floor_rounds = floor_figs.get(figure)
                if not floor_rounds:
                    continue
                unit = next(iter(ours_rounds.values()))[1]
                common = sorted(set(ours_rounds) & set(floor_rounds))
                ratios = [cost_ratio(ours_rounds[r][0], floor_rounds[r][0], unit) for r in common]
                rows.append({
                    "figure": figure,
                    "unit": unit,
                    "ours": source,
                    "floor": floor_source,
                    "rounds": len(common),
                    "ours_median": statistics.median(v for v, _ in ours_rounds.values()),
                    "ours_min": min(v for v, _ in ours_rounds.values()),
                    "ours_max": max(v for v, _ in ours_rounds.values()),
                    "floor_median": statistics.median(v for v, _ in floor_rounds.values()),
                    "floor_min": min(v for v, _ in floor_rounds.values()),
                    "floor_max": max(v for v, _ in floor_rounds.values()),
                    "cost_ratio_median": statistics.median(ratios) if ratios else None,
                    "cost_ratio_quartiles": quartiles(ratios),
                })
    return rows


def unmatched(figures):
    """Rows for the figures of ours that no floor reports."""
    floor_names = {name for (kind, _), figs in figures.items() if kind == "floor" for name in figs}
    rows = []
    for (kind, source), figs in sorted(figures.items()):
        if kind != "ours":
            continue
        for figure, rounds in sorted(figs.items()):
            if figure in floor_names:
                continue
            values = [v for v, _ in rounds.values()]
            rows.append({
                "figure": figure,
                "unit": next(iter(rounds.values()))[1],
                "ours": source,
                "rounds": len(values),
                "ours_median": statistics.median(values),
                "ours_min": min(values),
                "ours_max": max(values),
            })
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("log")
    parser.add_argument("--json", help="also write the rows as JSON here")
    args = parser.parse_args()
    figures = parse(args.log)
    rows = compare(figures)
    alone = unmatched(figures)
    header = f"{'figure':34} {'unit':6} {'ours (abi/bench)':26} {'ours median [min-max]':26} " \
             f"{'floor':14} {'floor median [min-max]':26} {'cost ratio [quartiles]':>22}"
    print(header)
    print("-" * len(header))
    for row in rows:
        ours = f"{row['ours_median']:.4g} [{row['ours_min']:.4g}-{row['ours_max']:.4g}]"
        floor = f"{row['floor_median']:.4g} [{row['floor_min']:.4g}-{row['floor_max']:.4g}]"
        ratio = "n/a" if row["cost_ratio_median"] is None else f"{row['cost_ratio_median']:.3f}"
        if row["cost_ratio_quartiles"]:
            ratio += " [{:.2f}-{:.2f}]".format(*row["cost_ratio_quartiles"])
        print(f"{row['figure']:34} {row['unit']:6} {row['ours']:26} {ours:26} "
              f"{row['floor']:14} {floor:26} {ratio:>22}")
    if alone:
        print()
        print(f"{'figure without a floor':34} {'unit':6} {'ours (abi/bench)':26} {'median [min-max]':26} rounds")
        for row in alone:
            values = f"{row['ours_median']:.4g} [{row['ours_min']:.4g}-{row['ours_max']:.4g}]"
            print(f"{row['figure']:34} {row['unit']:6} {row['ours']:26} {values:26} {row['rounds']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(rows + alone, out, indent=1)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
