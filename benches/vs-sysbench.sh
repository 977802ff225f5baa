#!/usr/bin/env bash
# innops bench vs sysbench 1.0, side by side: one throwaway sandbox, the same sbtest tables (made by
# `sysbench prepare`), the same threads and time, one tool after the other for each workload. Prints both
# tools' figures and the innops/sysbench ratios of tps and p95 latency.
#
#   benches/vs-sysbench.sh                      # 4 threads, 10 s per run, 1 table x 100k rows
#   THREADS=8 TIME=30 ROUNDS=3 benches/vs-sysbench.sh
#
# Settings (environment): THREADS (4), TIME seconds per run (10), TABLES (1), TABLE_SIZE (100000),
# WORKLOADS ("oltp_point_select oltp_read_only oltp_read_write oltp_insert"), ROUNDS (1; with more, the order
# alternates each round and medians are reported), WARMUP seconds of reads before measuring (5),
# BUFFER_POOL (1G), KEEP=1 keeps the sandbox, INNOPS (target/release/innops, built if missing),
# NICE (for example -10, needs root): run the server and both tools at that priority, so other work on a shared
# machine disturbs the comparison less.
# Needs: sysbench, jq, the mariadb (or mysql) client, and mariadbd/mysqld on PATH.
set -euo pipefail

THREADS=${THREADS:-4}
TIME=${TIME:-10}
TABLES=${TABLES:-1}
TABLE_SIZE=${TABLE_SIZE:-100000}
WORKLOADS=${WORKLOADS:-"oltp_point_select oltp_read_only oltp_read_write oltp_insert"}
ROUNDS=${ROUNDS:-1}
WARMUP=${WARMUP:-5}
BUFFER_POOL=${BUFFER_POOL:-1G}
cd "$(dirname "$0")/.."
INNOPS=${INNOPS:-target/release/innops}

for tool in sysbench jq; do
    command -v "$tool" >/dev/null || { echo "vs-sysbench: $tool is not installed" >&2; exit 2; }
done
CLIENT=$(command -v mariadb || command -v mysql || true)
[ -n "$CLIENT" ] || { echo "vs-sysbench: no mariadb or mysql client on PATH" >&2; exit 2; }
[ -x "$INNOPS" ] || cargo build --release --quiet

ROOT=$(mktemp -d /tmp/vs-sb.XXXXXX)
NAME=vs$$
OUT=$ROOT/out
mkdir -p "$OUT"
cleanup() {
    if [ "${KEEP:-0}" = 1 ]; then
        echo "kept sandbox $NAME in $ROOT (innops sandbox down $NAME --sandbox-root $ROOT)"
    else
        "$INNOPS" sandbox down "$NAME" --sandbox-root "$ROOT" >/dev/null 2>&1 || true
        rm -rf "$ROOT"
    fi
}
trap cleanup EXIT

"$INNOPS" sandbox up "$NAME" --sandbox-root "$ROOT" --buffer-pool "$BUFFER_POOL" >/dev/null
LIST=$("$INNOPS" sandbox list --sandbox-root "$ROOT" --format json)
SOCK=$(jq -r ".[] | select(.name == \"$NAME\") | .socket" <<<"$LIST")
PRIO=()
if [ -n "${NICE:-}" ]; then
    # Every server thread, so the connection threads it creates later inherit the priority.
    PID=$(jq -r ".[] | select(.name == \"$NAME\") | .pid" <<<"$LIST")
    for task in /proc/"$PID"/task/*; do renice -n "$NICE" -p "${task##*/}" >/dev/null; done
    PRIO=(nice -n "$NICE")
fi
[ -S "$SOCK" ] || { echo "vs-sysbench: sandbox socket $SOCK not found" >&2; exit 1; }
VERSION=$("$CLIENT" -S "$SOCK" -uroot -N -e "SELECT VERSION()")
"$CLIENT" -S "$SOCK" -uroot -e "CREATE DATABASE sbtest"

SB=("${PRIO[@]}" sysbench --db-driver=mysql --mysql-socket="$SOCK" --mysql-user=root --mysql-db=sbtest
    --tables="$TABLES" --table-size="$TABLE_SIZE")
IN=("${PRIO[@]}" "$INNOPS" bench --sandbox "$NAME" --sandbox-root "$ROOT" --db sbtest --tables "$TABLES" --table-size "$TABLE_SIZE")

echo "server $VERSION, $THREADS threads, $TIME s per run, $TABLES table(s) x $TABLE_SIZE rows, $ROUNDS round(s)${NICE:+, nice $NICE}"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
"${SB[@]}" --threads="$THREADS" oltp_read_write prepare >"$OUT/prepare.txt"
# Warm the buffer pool so neither tool measures a cold start.
"${IN[@]}" run --workload oltp_read_only --threads "$THREADS" --time "$WARMUP" --seed 1 >/dev/null

# sysbench's text → "tps qps avg p95"
sysbench_figures() {
    awk '/transactions:/ { gsub(/[()]/, "", $3); tps = $3 }
         /queries:/ && !/performed/ { gsub(/[()]/, "", $3); qps = $3 }
         /avg:/ && !/stddev/ { avg = $2 }
         /95th percentile:/ { p95 = $3 }
         END { print tps, qps, avg, p95 }' "$1"
}
innops_figures() {
    jq -r '"\(.tps) \(.qps) \(.latency_avg_ms) \(.latency_p95_ms)"' "$1"
}
median() { tr ' ' '\n' | sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

run_sysbench() { "${SB[@]}" --threads="$THREADS" --time="$TIME" "$1" run >"$2"; }
run_innops() { "${IN[@]}" run --workload "$1" --threads "$THREADS" --time "$TIME" --format json >"$2"; }

printf '\n%-18s %-9s %12s %12s %9s %9s\n' workload tool tps qps "avg ms" "p95 ms"
SUMMARY=""
for w in $WORKLOADS; do
    s_tps=""; s_p95=""; i_tps=""; i_p95=""
    for r in $(seq 1 "$ROUNDS"); do
        if [ $((r % 2)) = 1 ]; then order="sysbench innops"; else order="innops sysbench"; fi
        for tool in $order; do
            f="$OUT/$w.$tool.$r"
            if [ "$tool" = sysbench ]; then
                run_sysbench "$w" "$f"
                read -r tps qps avg p95 < <(sysbench_figures "$f")
                s_tps+="$tps "; s_p95+="$p95 "
            else
                run_innops "$w" "$f"
                read -r tps qps avg p95 < <(innops_figures "$f")
                i_tps+="$tps "; i_p95+="$p95 "
            fi
            printf '%-18s %-9s %12.2f %12.2f %9.2f %9.2f\n' "$w" "$tool" "$tps" "$qps" "$avg" "$p95"
        done
    done
    st=$(echo $s_tps | median); it=$(echo $i_tps | median)
    sp=$(echo $s_p95 | median); ip=$(echo $i_p95 | median)
    SUMMARY+=$(awk -v w="$w" -v st="$st" -v it="$it" -v sp="$sp" -v ip="$ip" 'BEGIN {
        printf "%-18s %12.2f %12.2f %8.3f %10.2f %10.2f %8.3f\n", w, st, it, (st > 0 ? it / st : 0), sp, ip, (sp > 0 ? ip / sp : 0) }')
    SUMMARY+=$'\n'
done

printf '\ninnops/sysbench (medians of %s round(s)):\n' "$ROUNDS"
printf '%-18s %12s %12s %8s %10s %10s %8s\n' workload "sysb tps" "innops tps" "tps x" "sysb p95" "innops p95" "p95 x"
printf '%s' "$SUMMARY"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
