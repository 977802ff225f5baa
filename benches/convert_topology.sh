#!/usr/bin/env bash
# MyISAM → InnoDB on a primary with two replicas (issue 25's benchmark; `TOPOLOGY=1 benches/convert.sh` runs it):
# `innops convert` on the primary (auto: the chunked path, --max-lag 1) against the same convert on a server
# without replicas (the same settings and binary log; auto: the bulk path), and pt-online-schema-change on the
# primary when it is installed. A benchmark, not a test: it prints figures and judges them against the issue's
# targets (replica lag ≤ 2 s, time ≤ 1.3× the convert without replicas); it does not fail on them.
#
# Sandboxes under a temp root, brought down at the end even on failure: `p` (--binlog) with `r1`, `r2`
# (--replica-of p), and `solo` (--binlog, no replica). Each gets a sysbench-shaped MyISAM table `pristine`
# (id PK, k, c CHAR(120), pad CHAR(60), KEY k_1(k), KEY c_1(c(20))) built from the sequence engine. Before every
# timed run, untimed: the previous run's tables are dropped, `t` is copied from `pristine`, and the replicas
# have caught up. During each run on `p`, a sampler reads Seconds_Behind_Master of both replicas every 0.5 s;
# the run's figure is the largest it saw. After each run the table is checked InnoDB on all three servers with
# the same CHECKSUM TABLE. Rounds rotate the order of the methods.
#
#   benches/convert_topology.sh                 # 1,000,000 rows, 3 rounds
#   ROWS=200000 ROUNDS=1 benches/convert_topology.sh
# Settings: ROWS (1000000), ROUNDS (3), POOL (1G), METHODS ("primary solo ptosc"), INNOPS (target/release/innops,
# built first unless INNOPS_SKIP_BUILD=1), OUT (a new /tmp dir: results.tsv and logs), PIN (0; 1: CPU 0 for the
# primary and for solo, CPU 1 for the replicas, as if they ran on machines of their own).
# pt-osc runs with --recursion-method=none (the sandbox replicas take root only over their own sockets), so it
# does not throttle on lag: its row says how far the replicas fell behind without that.
set -euo pipefail

ROWS=${ROWS:-1000000}
ROUNDS=${ROUNDS:-3}
POOL=${POOL:-1G}
METHODS=${METHODS:-"primary solo ptosc"}
cd "$(dirname "$0")/.."
if [ -z "${INNOPS:-}" ]; then
    [ "${INNOPS_SKIP_BUILD:-0}" = 1 ] || cargo build --release -q
    INNOPS=target/release/innops
fi
OUT=${OUT:-$(mktemp -d /tmp/convert-topology.XXXXXX)}
ROOT=$(mktemp -d /tmp/convert-topology-sb.XXXXXX)
BIN="$OUT/innops"
cp "$INNOPS" "$BIN"
command -v pt-online-schema-change >/dev/null || METHODS=${METHODS//ptosc/}

down() {
    for s in r1 r2 p solo; do "$BIN" sandbox down "$s" --sandbox-root "$ROOT" >/dev/null 2>&1 || true; done
    rm -rf "$ROOT"
}
trap down EXIT

sql() { mariadb -S "$ROOT/$1/mysqld.sock" -uroot -N -e "$2"; }

"$BIN" sandbox up p --binlog --buffer-pool "$POOL" --sandbox-root "$ROOT" >/dev/null
"$BIN" sandbox up solo --binlog --buffer-pool "$POOL" --sandbox-root "$ROOT" >/dev/null
for r in r1 r2; do "$BIN" sandbox up "$r" --replica-of p --buffer-pool "$POOL" --sandbox-root "$ROOT" >/dev/null; done

# PIN=1: the primary and the server without replicas each get CPU 0 to themselves, the two replicas share CPU 1
# (as servers on machines of their own would not compete with the primary for its cores; solo gets the same one
# core the primary has, so the two stay comparable).
if [ "${PIN:-0}" = 1 ]; then
    for s in p solo; do taskset -a -cp 0 "$(cat "$ROOT/$s/mysqld.pid")" >/dev/null; done
    for s in r1 r2; do taskset -a -cp 1 "$(cat "$ROOT/$s/mysqld.pid")" >/dev/null; done
fi

build() {
    sql "$1" "CREATE DATABASE IF NOT EXISTS bench; CREATE TABLE bench.pristine (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT UNSIGNED NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k), KEY c_1 (c(20))) ENGINE=MyISAM;
      INSERT INTO bench.pristine (k, c, pad) SELECT FLOOR(RAND(seq) * $ROWS), SHA2(seq, 256), MD5(seq) FROM bench.seq_1_to_$ROWS"
}
build p
build solo

# Wait until both replicas have applied what the primary logged.
caught_up() {
    local pos
    pos=$(sql p "SELECT @@GLOBAL.gtid_binlog_pos")
    for r in r1 r2; do sql "$r" "SELECT MASTER_GTID_WAIT('$pos', 3600)" >/dev/null; done
}

fresh() {
    sql "$1" "DROP TABLE IF EXISTS bench.t, bench._t_myisam_old, bench._t_innops_new, bench._t_new, bench._t_old; DELETE FROM innops.own_tables" 2>/dev/null ||
        sql "$1" "DROP TABLE IF EXISTS bench.t, bench._t_myisam_old, bench._t_innops_new, bench._t_new, bench._t_old"
    sql "$1" "CREATE TABLE bench.t LIKE bench.pristine; INSERT INTO bench.t SELECT * FROM bench.pristine; FLUSH TABLES"
    [ "$1" = p ] && caught_up
    sync
}

# The largest Seconds_Behind_Master of either replica, sampled every 0.5 s until $OUT/stop exists.
sample_lag() {
    local worst=0 l
    while [ ! -e "$OUT/stop" ]; do
        for r in r1 r2; do
            l=$(mariadb -S "$ROOT/$r/mysqld.sock" -uroot -e "SHOW SLAVE STATUS\G" | awk '/Seconds_Behind_Master/ { print $2 }')
            [[ "$l" =~ ^[0-9]+$ ]] && [ "$l" -gt "$worst" ] && worst=$l
        done
        sleep 0.5
    done
    echo "$worst" > "$OUT/lag"
}

run() { # method round
    local m=$1 on=p
    [ "$m" = solo ] && on=solo
    fresh "$on"
    rm -f "$OUT/stop" "$OUT/lag"
    [ "$on" = p ] && { sample_lag & }
    local t0 t1
    t0=$(date +%s.%N)
    case $m in
        primary | solo) "$BIN" convert --sandbox "$on" --sandbox-root "$ROOT" --tables bench.t --max-lag 1 --execute --yes --no-bench --run-dir "$OUT/run-$m-$2" >"$OUT/$m-$2.log" 2>&1 ;;
        ptosc) pt-online-schema-change --alter "ENGINE=InnoDB" --execute --no-drop-old-table --recursion-method=none --no-version-check "D=bench,t=t,S=$ROOT/p/mysqld.sock,u=root" >"$OUT/$m-$2.log" 2>&1 ;;
    esac
    [ "$on" = p ] && caught_up
    t1=$(date +%s.%N)
    touch "$OUT/stop"
    wait
    local lag=-
    [ -e "$OUT/lag" ] && lag=$(cat "$OUT/lag")
    local want got ok=yes
    want=$(sql "$on" "CHECKSUM TABLE bench.pristine EXTENDED" | cut -f2)
    got=$(sql "$on" "CHECKSUM TABLE bench.t EXTENDED" | cut -f2)
    [ "$want" = "$got" ] && [ "$(sql "$on" "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA='bench' AND TABLE_NAME='t'")" = InnoDB ] || ok=no
    if [ "$on" = p ]; then
        for r in r1 r2; do [ "$(sql "$r" "CHECKSUM TABLE bench.t EXTENDED" | cut -f2)" = "$want" ] || ok=no; done
    fi
    printf '%s\t%s\t%.3f\t%s\t%s\n' "$m" "$2" "$(echo "$t1 - $t0" | bc)" "$lag" "$ok" >>"$OUT/results.tsv"
}

printf 'method\tround\tseconds\tmax_lag_s\tidentical\n' >"$OUT/results.tsv"
read -r -a order <<<"$METHODS"
for round in $(seq 1 "$ROUNDS"); do
    for i in "${!order[@]}"; do
        run "${order[$(((i + round - 1) % ${#order[@]}))]}" "$round"
    done
done

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
col() { awk -F'\t' -v m="$1" -v c="$2" 'NR > 1 && $1 == m { print $c }' "$OUT/results.tsv"; }
echo "rows=$ROWS rounds=$ROUNDS pool=$POOL pin=${PIN:-0} (results: $OUT/results.tsv)"
printf '%-8s %10s %12s %s\n' method median_s worst_lag_s identical
for m in "${order[@]}"; do
    printf '%-8s %10s %12s %s\n' "$m" "$(col "$m" 3 | median)" "$(col "$m" 4 | sort -g | tail -1)" "$(col "$m" 5 | sort -u | tr '\n' ' ')"
done
p=$(col primary 3 | median)
s=$(col solo 3 | median)
if [ "$p" != - ] && [ "$s" != - ]; then
    # Paired: each round's primary run against the same round's solo run.
    paired=$(paste <(col primary 3) <(col solo 3) | awk '{ printf "%.3f\n", $1 / $2 }' | median)
    echo "primary/solo: medians $(echo "scale=2; $p / $s" | bc), paired $paired (target ≤ 1.3); worst replica lag $(col primary 4 | sort -g | tail -1) s (target ≤ 2)"
fi
