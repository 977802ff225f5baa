#!/usr/bin/env bash
# Healthy-table dump speed of `innops recover`'s engine (src/dump, run through benches/recover_dump.rs) beside
# mariadb-dump and mydumper, the targets of issue 10: faster than mariadb-dump, within 1.25x of mydumper with
# 2 threads. A benchmark, not a test: it prints figures and judges them, it does not fail on them.
#
# On a throwaway sandbox (under a temp INNOPS_SANDBOX_DIR, brought down at the end even on failure) it builds a
# sysbench-shaped InnoDB table bench.t (id INT UNSIGNED PK, k INT UNSIGNED, c CHAR(120), pad CHAR(60), KEY k_1)
# from the sequence engine, reads it once untimed (warm), then per round, in a rotated order, times:
#   innops1   recover_dump SOCK OUT 1 bench.t        (one session; SQL file, sha256, content hash, manifest)
#   innops2   recover_dump SOCK OUT 2 bench.t        (two sessions on halves of the key range)
#   mdump     mariadb-dump -S SOCK -uroot bench t > FILE
#   mydumper  mydumper -S SOCK -u root -B bench -T t -t 2 --rows 100000 -o DIR   (bare table name with -B)
# and prints the median seconds of each, rows/s, and the ratios innops2/mariadb-dump and innops2/mydumper.
#
#   benches/recover.sh                 # 1,000,000 rows, 5 rounds
#   ROWS=200000 ROUNDS=3 benches/recover.sh
# Needs: mariadb client, mariadb-dump, mariadbd with the sequence engine, mydumper (skipped when absent).
set -euo pipefail
ROWS=${ROWS:-1000000}
ROUNDS=${ROUNDS:-5}
cd "$(dirname "$0")/.."
cargo build --release --bin innops --bench recover_dump >&2
DUMP=$(ls -t target/release/deps/recover_dump-* | grep -v '\.d$' | head -1)
INNOPS=target/release/innops
export INNOPS_SANDBOX_DIR=$(mktemp -d /tmp/recb-XXXX)
WORK=$(mktemp -d /tmp/recb-out-XXXX)
trap '"$INNOPS" sandbox down rb >/dev/null 2>&1 || true; rm -rf "$INNOPS_SANDBOX_DIR" "$WORK"' EXIT
"$INNOPS" sandbox up rb --buffer-pool 1G >/dev/null
SOCK=$INNOPS_SANDBOX_DIR/rb/mysqld.sock
mariadb -S "$SOCK" -uroot -e "CREATE DATABASE bench; USE bench;
  CREATE TABLE t (id INT UNSIGNED NOT NULL PRIMARY KEY, k INT UNSIGNED NOT NULL DEFAULT 0,
    c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k)) ENGINE=InnoDB;
  INSERT INTO t SELECT seq, FLOOR(RAND(1) * $ROWS),
    CONCAT_WS('-', seq*7, seq*11, seq*13, seq*17, seq*19, seq*23, seq*29, seq*31, seq*37, seq*41),
    CONCAT_WS('-', seq*43, seq*47, seq*53, seq*59, seq*61) FROM seq_1_to_$ROWS;
  ANALYZE TABLE t;" >/dev/null
mariadb -S "$SOCK" -uroot -e "SELECT * FROM bench.t" >/dev/null   # warm

METHODS="innops1 innops2 mdump"
command -v mydumper >/dev/null && METHODS="$METHODS mydumper" || echo "mydumper not installed: skipped" >&2
run() {
    rm -rf "$WORK/out"
    mkdir -p "$WORK/out"
    case $1 in
        innops1) "$DUMP" "$SOCK" "$WORK/out" 1 bench.t >/dev/null ;;
        innops2) "$DUMP" "$SOCK" "$WORK/out" 2 bench.t >/dev/null ;;
        mdump) mariadb-dump -S "$SOCK" -uroot bench t >"$WORK/out/t.sql" ;;
        mydumper) mydumper -S "$SOCK" -u root -B bench -T t -t 2 --rows 100000 -o "$WORK/out" ;;
    esac
}
: >"$WORK/times"
read -ra M <<<"$METHODS"
for ((r = 0; r < ROUNDS; r++)); do
    for ((i = 0; i < ${#M[@]}; i++)); do
        m=${M[(i + r) % ${#M[@]}]}
        s=$(date +%s.%N)
        run "$m"
        e=$(date +%s.%N)
        echo "$m $(echo "$e - $s" | bc -l)" >>"$WORK/times"
    done
done
median() { awk -v m="$1" '$1 == m { print $2 }' "$WORK/times" | sort -g |
    awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
echo "rows $ROWS, rounds $ROUNDS, $(nproc) cores, load1 $(cut -d' ' -f1 /proc/loadavg)"
printf '%-10s %8s %12s\n' method seconds rows/s
for m in $METHODS; do
    t=$(median "$m")
    printf '%-10s %8.3f %12.0f\n' "$m" "$t" "$(echo "$ROWS / $t" | bc -l)"
done
i2=$(median innops2)
printf 'innops2 / mariadb-dump = %.2f (target < 1.00)\n' "$(echo "$i2 / $(median mdump)" | bc -l)"
if [[ $METHODS == *mydumper* ]]; then
    printf 'innops2 / mydumper     = %.2f (target <= 1.25)\n' "$(echo "$i2 / $(median mydumper)" | bc -l)"
fi
