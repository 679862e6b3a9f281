#!/usr/bin/env bash
# Runs several programs in alternating rounds, one process each per round, every one pinned to
# the same cores, and compares each program's FIG lines with the first program's, round by round.
#
# usage: OUT=dir bash rounds.sh ROUNDS NAME=COMMAND...
#   NAME=COMMAND  a name for the table, then the command line (split on spaces, so
#                 'preloaded=env LD_PRELOAD=libcuda.so.1 ./program -' works); the first is the
#                 reference the others are compared with
# environment: CPUS (the cores every program is pinned to, default 2), STOP_AFTER (seconds: no
# new round starts after this many, default none), OUT (folder for rounds.log, default .).
# Prints, per program and figure: the median over rounds, the median of the per-round ratios
# program / reference with their quartiles (for a rate above 1 is faster, for a time slower),
# and in how many rounds the program's figure was above the reference's.
set -u
[ $# -ge 2 ] || { sed -n '2,14p' "$0"; exit 2; }
rounds=$1; shift
cpus=${CPUS-2}
pin=(); [ -n "$cpus" ] && command -v taskset >/dev/null && pin=(taskset -c "$cpus")
log=${OUT:-.}/rounds.log
mkdir -p "$(dirname "$log")" && : >"$log" || exit 2
for round in $(seq 1 "$rounds"); do
    [ -n "${STOP_AFTER:-}" ] && [ "$SECONDS" -ge "$STOP_AFTER" ] && break
    for program in "$@"; do
        echo "=== ${program%%=*} round $round ===" >>"$log"
        # shellcheck disable=SC2086 # the command line is split on purpose
        timeout 300 "${pin[@]}" ${program#*=} >>"$log" 2>&1 || echo "!!! exit $?" >>"$log"
    done
done
python3 - "$log" "${1%%=*}" <<'PY'
import re, statistics, sys
runs, name = {}, None
for line in open(sys.argv[1]):
    header = re.match(r"=== (\S+) round (\d+) ===", line)
    if header:
        name, rnd = header.group(1), int(header.group(2))
        continue
    fig = re.match(r"FIG (\S+) (\S+) (\S+)", line)
    if fig and name:
        runs.setdefault(name, {}).setdefault((fig.group(1), fig.group(3)), {})[rnd] = float(fig.group(2))
reference = runs.get(sys.argv[2], {})
print(f"{'program':18} {'figure':40} {'median':>12} {'unit':5} ratio to {sys.argv[2]} [quartiles]  above/rounds")
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
        print(f"{program:18} {figure:40} {median:12.4g} {unit:5} {statistics.median(ratios):.3f} "
              f"[{ratios[n // 4]:.3f}-{ratios[(3 * n) // 4]:.3f}]  {above}/{n}")
PY
