#!/usr/bin/env bash
# Healthy-table dump speed of `innops recover`'s engine (src/dump, run through benches/recover_dump.rs) beside
# mariadb-dump and mydumper, the targets of issues 10 and 21: faster than mariadb-dump, and with 2 threads within
# 1.0x of mydumper's time (2 threads, --rows 100000), the secondary-index cross-check included. A benchmark, not a
# test: it prints figures and judges them, it does not fail on them.
#
# On a throwaway sandbox (under a temp INNOPS_SANDBOX_DIR, brought down at the end even on failure) it builds a
# sysbench-shaped InnoDB table bench.t (id INT UNSIGNED PK, k INT UNSIGNED, c CHAR(120), pad CHAR(60), KEY k_1)
# from the sequence engine, reads it once untimed (warm), then per round, in a rotated order, times:
#   innops1   recover_dump SOCK OUT 1 bench.t        (one session; SQL file, sha256, content hash, manifest)
#   innops2   recover_dump SOCK OUT 2 bench.t        (two sessions on halves of the key range)
#   mdump     mariadb-dump -S SOCK -uroot bench t > FILE
#   mydumper  mydumper -S SOCK -u root -B bench -T t -t 2 --rows 100000 -o DIR   (bare table name with -B)
# and prints the median seconds of each, rows/s, the median CPU seconds of the client and of the server (which the
# machine's other load moves far less than wall time), and the ratios innops2/mariadb-dump and innops2/mydumper as the
# medians of the per-round ratios (the tools of one round run back to back, so a burst of load on this shared
# machine weighs on both sides of a ratio), with the range of the per-round ratios and the load average.
#
# Then the damaged part, on the same table: benches/recover_damage.rs reads the keys, shuts the sandbox down
# slowly, damages four leaf pages of the clustered index (one in the middle, an adjacent pair at three
# quarters, one next to the last; through innops::procedures::drill::damage, which touches only a stopped sandbox's own
# table file), starts it again (no buffer-pool load) and prints the limit (every row not on a damaged page)
# and the exact lost ranges. On those files it counts the rows each gets back:
#   innops    innops recover --sandbox rb --tables bench.t --execute --yes (the whole command: stop, copy,
#             start, private server at the lowest level, dump, --verify-load, --drop-copy); rows from manifest.json
#   mdump     mariadb-dump --skip-extended-insert bench t (one INSERT a row; it stops at the first bad page)
#   ascdesc   mariadb -q: SELECT … ORDER BY id until the error, then ORDER BY id DESC until the error (distinct ids)
# and prints them beside the limit with ratios, and innops's lost ranges beside the exact ones. Target: innops =
# the limit, every time.
#
# Then the root part (issue 30: every row of a table whose root page is damaged, parsed at at least half the
# healthy dump's rows/s): the sandbox stopped, 512 bytes of page 3 (the clustered index's root) overwritten, the
# sandbox started again, so that SQL cannot open the table and reads no row; `innops recover --pages` then reads
# every leaf from the copy's data file. It prints the rows back (after the damaged part: all but the records on
# the four damaged leaves), the page pass's own seconds and rows/s, beside the healthy part's innops2 rows/s of
# this run when the healthy part ran, and the command's peak RSS (the mapped data file counts in it); then
# ROUNDS_R-1 more runs (default 3 in all, without --verify-load) give the median of the pass's own time.
#
#   benches/recover.sh                 # 1,000,000 rows, 5 rounds, both parts
#   ROWS=200000 ROUNDS=3 benches/recover.sh
#   PART=damaged benches/recover.sh    # or PART=healthy, PART=root (the root page alone), PART=both (all three),
#                                      # or a list in order: PART=healthy,root
#   KEEP=DIR PART=damaged benches/recover.sh   # keeps the damaged part's two recover outputs and run directories in DIR
#   BEFORE=/path/to/older/innops PART=damaged benches/recover.sh   # the page pass before/after a change, below
#
# The page pass's cost is read three ways: the whole commands' difference (noisy: the copy, the starts and
# --verify-load vary from run to run), the dump steps' difference (from each run's journal), and the pass's own
# wall time (`pages.seconds` in the manifest, from builds that write it). With BEFORE=BINARY (an older build of
# innops), ROUNDS_D rounds (default 3) then run, on the same damaged files and in a rotated order, the command
# with --pages never and with --pages by this build and by BINARY (no --verify-load: it runs after the dump
# step), and print each one's dump step, the page pass as the difference, each pass's own time, and the medians
# and per-round ratio before/after: the tools of one round run back to back, so a burst of load weighs on both
# sides. (--pages never: since the page pass runs by default, leaving --pages out no longer leaves it out.)
# Needs: mariadb client, mariadb-dump, mariadbd with the sequence engine, mydumper (skipped when absent).
set -euo pipefail
ROWS=${ROWS:-1000000}
ROUNDS=${ROUNDS:-5}
PART=${PART:-both}
cd "$(dirname "$0")/.."
cargo build --release --bin innops --bench recover_dump --bench recover_damage >&2
DUMP=$(ls -t target/release/deps/recover_dump-* | grep -v '\.d$' | head -1)
DAMAGE=$(ls -t target/release/deps/recover_damage-* | grep -v '\.d$' | head -1)
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

healthy() {
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
: >"$WORK/cpus"
read -ra M <<<"$METHODS"
: >"$WORK/loads"
# CPU seconds, which the machine's other load changes far less than wall time: the server's from its /proc stat
# (utime + stime), the client's from the shell's children times (`times`, second line).
TCK=$(getconf CLK_TCK)
SPID=$(cat "$INNOPS_SANDBOX_DIR"/rb/*.pid 2>/dev/null | head -1)
server_cpu() { awk -v t="$TCK" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$SPID/stat"; }
# `times` runs in this shell (a $(…) would read a subshell's children): its output goes to a file, read after.
client_cpu() { tail -1 "$1" | awk '{ n = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); n += p[1] * 60 + p[2] } printf "%.3f", n }'; }
for ((r = 0; r < ROUNDS; r++)); do
    cut -d' ' -f1 /proc/loadavg >>"$WORK/loads"
    for ((i = 0; i < ${#M[@]}; i++)); do
        m=${M[(i + r) % ${#M[@]}]}
        sc=$(server_cpu)
        times >"$WORK/times-before"
        s=$(date +%s.%N)
        run "$m"
        e=$(date +%s.%N)
        times >"$WORK/times-after"
        echo "$m $(echo "$e - $s" | bc -l) $r" >>"$WORK/times"
        echo "$m $(echo "$(client_cpu "$WORK/times-after") - $(client_cpu "$WORK/times-before")" | bc -l) $(echo "$(server_cpu) - $sc" | bc -l) $r" >>"$WORK/cpus"
    done
done
med() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
median() { awk -v m="$1" '$1 == m { print $2 }' "$WORK/times" | med; }
# Per round, the time of $1 over the time of $2.
ratios() { awk -v a="$1" -v b="$2" '$1 == a { x[$3] = $2 } $1 == b { y[$3] = $2 } END { for (r in x) if (r in y) print x[r] / y[r] }' "$WORK/times"; }
ratio_line() {
    local rs
    rs=$(ratios innops2 "$1")
    printf 'innops2 / %-12s = %.2f (median of %d rounds, %.2f-%.2f; target %s)\n' "$2" "$(med <<<"$rs")" \
        "$(wc -l <<<"$rs")" "$(sort -g <<<"$rs" | head -1)" "$(sort -g <<<"$rs" | tail -1)" "$3"
}
echo "rows $ROWS, rounds $ROUNDS, $(nproc) cores, load1 during the rounds $(sort -g "$WORK/loads" | head -1)-$(sort -g "$WORK/loads" | tail -1) (median $(med <"$WORK/loads"))"
printf '%-10s %8s %12s %11s %11s\n' method seconds rows/s "client cpu" "server cpu"
for m in $METHODS; do
    t=$(median "$m")
    [[ $m == innops2 ]] && echo "$ROWS / $t" | bc -l >"$WORK/healthy-rate"
    printf '%-10s %8.3f %12.0f %11.3f %11.3f\n' "$m" "$t" "$(echo "$ROWS / $t" | bc -l)" \
        "$(awk -v m="$m" '$1 == m { print $2 }' "$WORK/cpus" | med)" "$(awk -v m="$m" '$1 == m { print $3 }' "$WORK/cpus" | med)"
done
ratio_line mdump mariadb-dump "< 1.00"
if [[ $METHODS == *mydumper* ]]; then
    ratio_line mydumper mydumper "<= 1.00"
    rs=$(awk '$1 == "innops2" { x[$4] = $2 + $3 } $1 == "mydumper" { y[$4] = $2 + $3 } END { for (r in x) if (r in y && y[r] > 0) print x[r] / y[r] }' "$WORK/cpus")
    printf 'innops2 / mydumper CPU seconds (client + server) = %.2f (median of %d rounds, %.2f-%.2f)\n' \
        "$(med <<<"$rs")" "$(wc -l <<<"$rs")" "$(sort -g <<<"$rs" | head -1)" "$(sort -g <<<"$rs" | tail -1)"
fi
}

damaged() {
    echo
    echo "damaged: $ROWS rows, 4 damaged leaf pages (middle, an adjacent pair, near the end)"
    local exp limit
    exp=$("$DAMAGE" "$INNOPS_SANDBOX_DIR" rb bench t)
    limit=$(jq .limit <<<"$exp")
    # innops recover, the whole command, SQL alone (--pages never: the page pass is auto by default).
    local s e
    s=$(date +%s.%N)
    "$INNOPS" recover --sandbox rb --tables bench.t --out "$WORK/rec-out" --copy-to "$WORK/rec-copy" --pages never \
        --threads 2 --verify-load --drop-copy --run-dir "$WORK/rec-run" --execute --yes >"$WORK/recover.txt" 2>&1 ||
        { echo "innops recover failed (exit $?):" >&2; tail -20 "$WORK/recover.txt" >&2; }
    e=$(date +%s.%N)
    local innops_rows innops_secs
    innops_rows=$(jq '[.tables[] | select(.db == "bench" and .table == "t") | .rows] | add // 0' "$WORK/rec-out/manifest.json" 2>/dev/null || echo 0)
    innops_secs=$(echo "$e - $s" | bc -l)
    # The same with --pages: the lost ranges read from the copy's data file (issue 30). Its extra time over the
    # run above is the page pass (waiting for the copy's dirty pages, reading the file, parsing every leaf) plus
    # whatever the machine's load does between two commands: KEEP=DIR keeps both journals, whose step timestamps
    # show where the difference lies (docs/recover.md, "Reading pages").
    s=$(date +%s.%N)
    "$INNOPS" recover --sandbox rb --tables bench.t --out "$WORK/recp-out" --copy-to "$WORK/recp-copy" --pages \
        --threads 2 --verify-load --drop-copy --run-dir "$WORK/recp-run" --execute --yes >"$WORK/recover-p.txt" 2>&1 ||
        { echo "innops recover --pages ended with exit $? (4: not complete)" >&2; tail -3 "$WORK/recover-p.txt" >&2; }
    e=$(date +%s.%N)
    local pages_rows pages_secs from_pages
    pages_rows=$(jq '[.tables[] | select(.db == "bench" and .table == "t") | .rows] | add // 0' "$WORK/recp-out/manifest.json" 2>/dev/null || echo 0)
    from_pages=$(jq '[.tables[] | select(.db == "bench" and .table == "t") | .pages.page_rows // 0] | add // 0' "$WORK/recp-out/manifest.json" 2>/dev/null || echo 0)
    pages_secs=$(echo "$e - $s" | bc -l)
    # KEEP=DIR keeps both runs' output (the temp directory goes at the end).
    [[ -n ${KEEP:-} ]] && mkdir -p "$KEEP" && cp -r "$WORK/recover.txt" "$WORK/recover-p.txt" "$WORK/rec-run" "$WORK/recp-run" "$KEEP/"
    # mariadb-dump on the same damaged files (the original runs again on them).
    local mrc=0 mdump_rows
    mariadb-dump -S "$SOCK" -uroot --skip-extended-insert bench t >"$WORK/mdump.sql" 2>"$WORK/mdump.err" || mrc=$?
    mdump_rows=$(grep -c '^INSERT INTO `t` VALUES' "$WORK/mdump.sql" || true)
    # Ascending until the error, then descending until the error.
    local arc=0 drc=0 ascdesc_rows
    mariadb -S "$SOCK" -uroot -q -N -B -e "SELECT id, k, c, pad FROM bench.t FORCE INDEX (PRIMARY) ORDER BY id" \
        2>"$WORK/asc.err" | cut -f1 >"$WORK/ids" || arc=$?
    mariadb -S "$SOCK" -uroot -q -N -B -e "SELECT id, k, c, pad FROM bench.t FORCE INDEX (PRIMARY) ORDER BY id DESC" \
        2>"$WORK/desc.err" | cut -f1 >>"$WORK/ids" || drc=$?
    ascdesc_rows=$(sort -un "$WORK/ids" | wc -l)
    echo "rows before $(jq .rows_before <<<"$exp"), on the damaged pages $(jq .on_damaged <<<"$exp") (pages $(jq -c .pages <<<"$exp"))"
    printf '%-14s %10s %9s  %s\n' method rows "/ limit" note
    printf '%-14s %10d %9.4f  %s\n' limit "$limit" 1 "every row not on a damaged page"
    printf '%-14s %10d %9.4f  %s\n' innops "$innops_rows" "$(echo "$innops_rows / $limit" | bc -l)" \
        "innops recover, whole command, $(printf '%.1f' "$innops_secs") s"
    printf '%-14s %10d %9.4f  %s\n' innops-pages "$pages_rows" "$(echo "$pages_rows / $limit" | bc -l)" \
        "innops recover --pages: $from_pages rows read from pages, $(printf '%.1f' "$pages_secs") s ($(printf '%+.1f' "$(echo "$pages_secs - $innops_secs" | bc -l)") s: the page pass)"
    printf '%-14s %10d %9.4f  %s\n' mariadb-dump "$mdump_rows" "$(echo "$mdump_rows / $limit" | bc -l)" \
        "exit $mrc: $(tail -1 "$WORK/mdump.err")"
    printf '%-14s %10d %9.4f  %s\n' asc+desc "$ascdesc_rows" "$(echo "$ascdesc_rows / $limit" | bc -l)" \
        "mariadb -q ORDER BY id, then DESC: $(tail -1 "$WORK/asc.err" | cut -c1-60)"
    local d0 d1 own
    d0=$(dump_secs "$WORK/rec-run")
    d1=$(dump_secs "$WORK/recp-run")
    own=$(jq '[.tables[] | select(.db == "bench" and .table == "t") | .pages.seconds // 0] | add // 0' "$WORK/recp-out/manifest.json" 2>/dev/null || echo 0)
    printf 'dump step: %.1f s without --pages, %.1f s with (%+.1f s); the page pass itself (pages.seconds): %.2f s, %s leaf pages of which %s parsed whole\n' \
        "$d0" "$d1" "$(echo "$d1 - $d0" | bc -l)" "$own" \
        "$(jq '[.tables[] | .pages.leaves // 0] | add' "$WORK/recp-out/manifest.json" 2>/dev/null)" \
        "$(jq '[.tables[] | .pages.parsed_whole // 0] | add' "$WORK/recp-out/manifest.json" 2>/dev/null)"
    echo "lost ranges (after, before), exclusive:"
    echo "  exact   $(jq -c .lost <<<"$exp")"
    echo "  innops  $(jq -c '[.tables[] | select(.db == "bench" and .table == "t") | .lost[] | [(.after // .from // [null])[0], (.before // [null])[0]]] | sort' "$WORK/rec-out/manifest.json" 2>/dev/null)"
    if [[ $innops_rows == "$limit" ]]; then echo "innops = the limit (target met)"; else echo "innops != the limit (target missed)"; fi
    local before
    before=$(jq .rows_before <<<"$exp")
    printf 'innops --pages: %d of %d rows (%.3f%%; target of issue 30: at least 99.98%%, every record outside the overwritten bytes)\n' \
        "$pages_rows" "$before" "$(echo "100 * $pages_rows / $before" | bc -l)"
    printf 'the page pass: %.1f s for a %d-row table by the whole commands, %.0f rows/s; by its own time %.0f rows/s (target: at least half the healthy dump'"'"'s rows/s)\n' \
        "$(echo "$pages_secs - $innops_secs" | bc -l)" "$before" "$(echo "$before / ($pages_secs - $innops_secs)" | bc -l)" \
        "$(echo "if ($own > 0) $before / $own else 0" | bc -l)"
    [[ -n ${BEFORE:-} ]] && before_after "$before"
    return 0
}

root() {
    echo
    echo "damaged root: page 3, the clustered index's root, overwritten (512 bytes); SQL reads no row of bench.t"
    "$INNOPS" sandbox stop rb >/dev/null
    python3 -c "
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(3 * 16384 + 8000)
    f.write(bytes((i * 37) % 251 for i in range(512)))
" "$INNOPS_SANDBOX_DIR/rb/data/bench/t.ibd"
    "$INNOPS" sandbox start rb >/dev/null
    local rc=0
    /usr/bin/time -f %M -o "$WORK/root.rss" "$INNOPS" recover --sandbox rb --tables bench.t --out "$WORK/root-out" \
        --copy-to "$WORK/root-copy" --pages --threads 2 --verify-load --drop-copy --run-dir "$WORK/root-run" \
        --execute --yes >"$WORK/root.txt" 2>&1 || rc=$?
    local rows page_rows own status
    rows=$(jq '[.tables[] | select(.db == "bench" and .table == "t") | .rows] | add // 0' "$WORK/root-out/manifest.json" 2>/dev/null || echo 0)
    page_rows=$(jq '[.tables[] | .pages.page_rows // 0] | add // 0' "$WORK/root-out/manifest.json" 2>/dev/null || echo 0)
    own=$(jq '[.tables[] | .pages.seconds // 0] | add // 0' "$WORK/root-out/manifest.json" 2>/dev/null || echo 0)
    status=$(jq -r '[.tables[] | .status] | join(",")' "$WORK/root-out/manifest.json" 2>/dev/null || echo none)
    printf 'innops recover --pages: exit %d, %s, %d rows (%d read from pages), page pass %.2f s: %.0f rows/s; peak RSS %d MB\n' \
        "$rc" "$status" "$rows" "$page_rows" "$own" "$(echo "if ($own > 0) $page_rows / $own else 0" | bc -l)" \
        "$(($(tail -1 "$WORK/root.rss" 2>/dev/null || echo 0) / 1024))"
    # More rounds of the pass's own time on the same files (no --verify-load, which runs after it).
    echo "$own" >"$WORK/root-owns"
    local r
    for ((r = 1; r < ${ROUNDS_R:-3}; r++)); do
        rm -rf "$WORK/root-out" "$WORK/root-copy" "$WORK/root-run"
        "$INNOPS" recover --sandbox rb --tables bench.t --out "$WORK/root-out" --copy-to "$WORK/root-copy" --pages \
            --threads 2 --drop-copy --run-dir "$WORK/root-run" --execute --yes >"$WORK/root.txt" 2>&1 || true
        jq '[.tables[] | .pages.seconds // 0] | add // 0' "$WORK/root-out/manifest.json" >>"$WORK/root-owns"
    done
    local med_own
    med_own=$(sort -g "$WORK/root-owns" | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
    printf 'page pass own time over %d rounds: median %.2f s (%.2f-%.2f): %.0f rows/s\n' "$(wc -l <"$WORK/root-owns")" \
        "$med_own" "$(sort -g "$WORK/root-owns" | head -1)" "$(sort -g "$WORK/root-owns" | tail -1)" \
        "$(echo "if ($med_own > 0) $page_rows / $med_own else 0" | bc -l)"
    if [[ -s $WORK/healthy-rate ]]; then
        printf 'page pass rows/s (median) / healthy dump rows/s (innops2, this run) = %.2f (target of issue 30: at least 0.50)\n' \
            "$(echo "if ($med_own > 0) ($page_rows / $med_own) / $(cat "$WORK/healthy-rate") else 0" | bc -l)"
    fi
}

# The dump step's seconds in a run directory's journal (step_started to action_done).
dump_secs() {
    local a z
    a=$(jq -r 'select(.step == "dump" and .event == "step_started") | .ts' "$1/journal.jsonl" | head -1)
    z=$(jq -r 'select(.step == "dump" and .event == "action_done") | .ts' "$1/journal.jsonl" | head -1)
    echo "$(date -d "$z" +%s.%N) - $(date -d "$a" +%s.%N)" | bc -l
}

# BEFORE=BINARY: the page pass of this build and of BINARY, side by side on the same damaged files.
before_after() {
    local rows=$1 r i m bin extra
    local -a M=(none after before)
    : >"$WORK/ba"
    for ((r = 0; r < ${ROUNDS_D:-3}; r++)); do
        for ((i = 0; i < 3; i++)); do
            m=${M[(i + r) % 3]}
            bin=$INNOPS extra=--pages
            [[ $m == before ]] && bin=$BEFORE
            [[ $m == none ]] && extra="--pages never"
            rm -rf "$WORK/ba-out" "$WORK/ba-copy" "$WORK/ba-run"
            "$bin" recover --sandbox rb --tables bench.t --out "$WORK/ba-out" --copy-to "$WORK/ba-copy" $extra \
                --threads 2 --drop-copy --run-dir "$WORK/ba-run" --execute --yes >"$WORK/ba.txt" 2>&1 || true
            echo "$m $r $(dump_secs "$WORK/ba-run") $(jq '[.tables[] | .rows] | add' "$WORK/ba-out/manifest.json") $(jq '[.tables[] | .pages.seconds // 0] | add' "$WORK/ba-out/manifest.json")" >>"$WORK/ba"
        done
    done
    echo
    echo "page pass before/after (BEFORE=$BEFORE), ${ROUNDS_D:-3} rounds; per round: dump step without --pages, with --pages after, before"
    awk '{ d[$2, $1] = $3; n[$1] = $4; o[$2, $1] = $5 } END {
        for (r = 0; (r, "none") in d; r++) printf "  round %d: %.2f s, %.2f s (pass %+.2f s, own %.2f s), %.2f s (pass %+.2f s, own %.2f s)\n", r, d[r, "none"], d[r, "after"], d[r, "after"] - d[r, "none"], o[r, "after"], d[r, "before"], d[r, "before"] - d[r, "none"], o[r, "before"]
        printf "  rows: without %d, after %d, before %d\n", n["none"], n["after"], n["before"] }' "$WORK/ba"
    local med_after med_before med_own med_own_before ratio
    med() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
    med_after=$(awk '{ d[$2, $1] = $3 } END { for (r = 0; (r, "none") in d; r++) print d[r, "after"] - d[r, "none"] }' "$WORK/ba" | med)
    med_before=$(awk '{ d[$2, $1] = $3 } END { for (r = 0; (r, "none") in d; r++) print d[r, "before"] - d[r, "none"] }' "$WORK/ba" | med)
    med_own=$(awk '$1 == "after" { print $5 }' "$WORK/ba" | med)
    med_own_before=$(awk '$1 == "before" { print $5 }' "$WORK/ba" | med)
    ratio=$(awk '{ d[$2, $1] = $3 } END { for (r = 0; (r, "none") in d; r++) { a = d[r, "after"] - d[r, "none"]; if (a > 0.05) print (d[r, "before"] - d[r, "none"]) / a } }' "$WORK/ba" | med)
    printf '  median page pass (dump-step difference): before %.2f s (%.0f rows/s), after %.2f s (%.0f rows/s); before/after per round: %s\n' \
        "$med_before" "$(echo "$rows / $med_before" | bc -l)" "$med_after" "$(echo "if ($med_after > 0) $rows / $med_after else 0" | bc -l)" "${ratio:-n/a (after within 0.05 s of none)}"
    printf '  median page pass by its own time: before %.2f s (%.0f rows/s), after %.2f s (%.0f rows/s)\n' \
        "$med_own_before" "$(echo "if ($med_own_before > 0) $rows / $med_own_before else 0" | bc -l)" \
        "$med_own" "$(echo "$rows / $med_own" | bc -l)"
}

for part in ${PART//,/ }; do
    case $part in
        healthy) healthy ;;
        damaged) damaged ;;
        root) root ;;
        both) healthy; damaged; root ;;
        *) echo "PART=$PART: give healthy, damaged, root or both (or a list: healthy,root)" >&2; exit 2 ;;
    esac
done
