#!/usr/bin/env bash
# Runs several programs in alternating rounds, one process each per round, every one pinned to
# the same cores, and compares each program's FIG lines with the first program's, round by round.
# Round r starts with program r (modulo their number), so each program runs in every position of
# a round equally often and a position's effect falls on all alike.
#
# usage: OUT=dir bash rounds.sh ROUNDS NAME=COMMAND...
#   NAME=COMMAND  a name for the table, then the command line (split on spaces, so
#                 'preloaded=env LD_PRELOAD=libcuda.so.1 ./program -' works); the first is the
#                 reference the others are compared with
# environment: CPUS (the cores every program is pinned to, default 2), STOP_AFTER (seconds: no
# new round starts after this many, default none), OUT (folder for rounds.log, default .).
# ROTATE=0 keeps the order given in every round. Prints rounds_table.py's table of the log: per
# program and figure, the median over rounds, the median of the per-round ratios program /
# reference with their quartiles, in how many rounds the program was above the reference, and
# the sign test's p for that count.
set -u
# The rule on our GPU machines: NVLink multicast (NVLS) stays off in every process started here.
export NCCL_NVLS_ENABLE=0
[ $# -ge 2 ] || { sed -n '2,16p' "$0"; exit 2; }
rounds=$1; shift
cpus=${CPUS-2}
pin=(); [ -n "$cpus" ] && command -v taskset >/dev/null && pin=(taskset -c "$cpus")
log=${OUT:-.}/rounds.log
mkdir -p "$(dirname "$log")" && : >"$log" || exit 2
programs=("$@")
count=${#programs[@]}
for round in $(seq 1 "$rounds"); do
    [ -n "${STOP_AFTER:-}" ] && [ "$SECONDS" -ge "$STOP_AFTER" ] && break
    first=0; [ "${ROTATE:-1}" != 0 ] && first=$(((round - 1) % count))
    for step in $(seq 0 $((count - 1))); do
        program=${programs[$(((first + step) % count))]}
        echo "=== ${program%%=*} round $round ===" >>"$log"
        # shellcheck disable=SC2086 # the command line is split on purpose
        timeout 300 "${pin[@]}" ${program#*=} >>"$log" 2>&1 || echo "!!! exit $?" >>"$log"
    done
done
python3 "$(dirname "$0")/rounds_table.py" "$log" "${1%%=*}"
