#!/usr/bin/env bash
# MyISAM → InnoDB: `innops convert` against a plain `ALTER TABLE … ENGINE=InnoDB` and pt-online-schema-change,
# the benchmark issue 4 asks for (a benchmark, not a test: it prints figures and judges them against the issue's
# targets, it does not fail on them).
#
# On throwaway sandboxes (one per buffer-pool size, under a temp INNOPS_SANDBOX_DIR, brought down at the end even
# on failure) it builds a sysbench-shaped MyISAM table `pristine` (id INT UNSIGNED AUTO_INCREMENT PK, k INT
# UNSIGNED, c CHAR(120), pad CHAR(60), secondary indexes k_1(k), c_1(c(20)), k_pad(k,pad)) server-side from the
# sequence engine. Before every timed run, untimed: the leftovers of the previous run are dropped, a fresh copy
# `t` is made from `pristine` (CREATE TABLE … LIKE; INSERT … SELECT), the InnoDB dirty pages are flushed and the
# OS page cache synced, so every method starts from the same state. Timed with `date +%s.%N` around one command:
#   innops  target/release/innops convert --sandbox S --tables bench.t --execute --yes --no-bench --run-dir DIR
#           (strategy auto; verification included, --verify auto: CHECKSUM TABLE for this table; old table kept as
#           _t_myisam_old)
#   innops_hash  the same with --verify hash (innops's row hash of both tables)
#   alter   mariadb -S SOCK -uroot bench -e "ALTER TABLE t ENGINE=InnoDB"   (verifies nothing, keeps nothing)
#   ptosc   pt-online-schema-change --alter "ENGINE=InnoDB" --execute --no-drop-old-table
#           --recursion-method=none --no-version-check D=bench,t=t,S=SOCK,u=root   (old table kept as _t_old)
# Each round runs the methods in a rotated order (round 1: innops alter ptosc; round 2: alter ptosc innops; …).
# After each run, untimed: t must be InnoDB with the same CHECKSUM TABLE … EXTENDED as `pristine`; innops's path
# is read from its report.json note ("path: bulk|deferred — …") and its per-step seconds from journal.jsonl.
# Prints, per setting, the median seconds of each method and the ratios innops/ALTER and pt-osc/innops.
#
#   benches/convert.sh                                   # 1,000,000 rows, 3 rounds, all four settings
#   ROWS=100000 ROUNDS=1 benches/convert.sh              # quick
#   SETTINGS="48M:OFF" SKIP_PTOSC_SLOW=1 benches/convert.sh
#   benches/convert.sh --summary A/results.tsv B/results.tsv   # the tables again, from saved runs (merged)
#   TOPOLOGY=1 benches/convert.sh                        # on a primary with two replicas (convert_topology.sh)
#   ONLINE=1 benches/convert.sh                          # the online path, with writes on the table (convert_online.sh)
# The summary prints the limit of a verified conversion beside the ratios (issue 8): the ALTER plus one read of
# the new table (CHECKSUM TABLE … EXTENDED, timed after each ALTER run), and innops/limit with its target, 1.05,
# twice: as the ratio of the two medians, and as the median of the rounds' own ratios ("paired": each round's
# innops run against the same round's ALTER and read, run next to it). On a busy machine the load drifts between
# rounds (a build starting doubles one round's ALTER), and the paired figure cancels that drift; the target is
# judged on it, and the ratio of medians stays beside it.
#
# Settings (environment):
#   ROWS             rows in the table (1000000)
#   ROUNDS           rounds per setting; medians over them (3)
#   SETTINGS         space-separated POOL:BULK cells, POOL an innodb_buffer_pool_size, BULK the value of
#                    innodb_alter_copy_bulk ("1G:ON 1G:OFF 48M:ON 48M:OFF")
#   METHODS          which of innops, innops_hash, alter, ptosc to run ("innops alter ptosc")
#   SKIP_PTOSC_SLOW  1: no pt-osc where the table does not fit the buffer pool (minutes per run) (0)
#   SLOW_ROUNDS      at most this many runs of the slow cells, where the table does not fit the buffer pool:
#                    pt-osc, and ALTER with innodb_alter_copy_bulk=OFF (ROUNDS)
#   OUT              where results.tsv (one line per run: setting, round, method, seconds, whether the table
#                    exceeds the pool, the 1-minute load average before the run, innops's path and step
#                    seconds), the logs and innops's run directories are kept (a new /tmp dir)
#   KEEP=1           leave the sandboxes (and their tables) up and print how to bring them down
#   INNOPS           the binary (target/release/innops, built first by `cargo build --release` unless
#                    INNOPS_SKIP_BUILD=1); a copy of it keeps a long run safe from concurrent rebuilds
# Needs: the mariadb client, mariadbd with the sequence engine, jq, pt-online-schema-change (only for ptosc).
# The machine should be otherwise idle: the load1 column of the summary shows how busy it was during the runs.
# On 2 cores a full run takes ~20 min with SLOW_ROUNDS=1 and well over 40 min with 3 slow rounds.
set -euo pipefail

# On a primary with two replicas instead (issue 25): benches/convert_topology.sh says what it measures.
if [ "${TOPOLOGY:-0}" = 1 ]; then exec "$(dirname "$0")/convert_topology.sh"; fi
# The online path, without and with writes on the table (issue 26): benches/convert_online.sh.
if [ "${ONLINE:-0}" = 1 ]; then exec "$(dirname "$0")/convert_online.sh"; fi

# ---- summary: from one or more results.tsv files ----
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
summarize() {
    local all
    all=$(awk -F'\t' 'FNR > 1' "$@")
    [ -n "$all" ] || { echo "convert.sh: no runs recorded" >&2; return 1; }
    cell() { echo "$all" | awk -F'\t' -v s="$1" -v m="$2" '$1 == s && $3 == m { print $4 }'; }
    count() { cell "$1" "$2" | wc -l; }
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }
    verdict() { # value op limit
        awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN { if (v == "-") { print "n/a"; exit } ok = (op == "<=") ? v <= l : v >= l; print (ok ? "met" : "MISSED") }'
    }
    fmt() { [ "$1" = - ] && echo "-" || printf '%.2f (n=%s)' "$1" "$2"; }
    # paired SETTING METHOD: per round (of one results file), METHOD against that round's ALTER plus read; the
    # median, to two decimals
    paired() {
        local p
        p=$(awk -F'\t' -v s="$1" -v m="$2" 'FNR > 1 && $1 == s {
                k = FILENAME SUBSEP $2
                if ($3 == m) i[k] = $4
                if ($3 == "alter") { r = $7; sub(/^read=/, "", r); if (r != $7) l[k] = $4 + r }
            } END { for (k in i) if ((k in l) && l[k] > 0) printf "%.4f\n", i[k] / l[k] }' "${files[@]}" | median)
        [ "$p" = - ] && echo - || printf '%.2f' "$p"
    }
    local settings s bulk oom mi ma mp ml rl rp path r1 r2 t rows other load
    local files=("$@")
    settings=$(echo "$all" | cut -f1 | awk '!seen[$0]++')
    printf '| %-8s | %-8s | %-14s | %-14s | %-14s | %-12s | %-12s | %-12s | %-6s | %-13s | %-9s | %s\n' setting "innops" "innops s" "ALTER s" "pt-osc s" "innops/ALTER" "limit s" "innops/limit" "paired" "pt-osc/innops" "load1" "targets"
    printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s\n' ---------- ---------- ---------------- ---------------- ---------------- -------------- -------------- -------------- -------- --------------- ----------- --------
    for s in $settings; do
        bulk=${s#*:}
        oom=$(echo "$all" | awk -F'\t' -v s="$s" '$1 == s { o = ($5 == 1) ? 1 : o + 0 } END { print o + 0 }')
        mi=$(cell "$s" innops | median); ma=$(cell "$s" alter | median); mp=$(cell "$s" ptosc | median)
        path=$(echo "$all" | awk -F'\t' -v s="$s" '$1 == s && $3 == "innops" { sub(/^path=/, "", $7); split($7, a, " "); print a[1] }' | sort -u | paste -sd/)
        load=$(echo "$all" | awk -F'\t' -v s="$s" '$1 == s && $6 != "-" { print $6 }' | sort -g | awk '{ a[NR] = $1 } END { if (NR) printf "%s-%s", a[1], a[NR]; else print "-" }')
        r1=$(ratio "$mi" "$ma"); r2=$(ratio "$mp" "$mi")
        # limit = the ALTER plus one read of the new table, per run, then the median
        ml=$(echo "$all" | awk -F'\t' -v s="$s" '$1 == s && $3 == "alter" { r = $7; sub(/^read=/, "", r); if (r != $7) printf "%.3f\n", $4 + r }' | median)
        rl=$(ratio "$mi" "$ml")
        # paired: per round (of one results file), innops against that round's ALTER plus read; the median
        rp=$(paired "$s" innops)
        t=()
        if [ "$bulk" = ON ]; then t+=("innops/limit (paired)<=1.05 $(verdict "$rp" '<=' 1.05)"); fi
        if [ "$bulk" = ON ]; then t+=("innops/ALTER<=1.3 $(verdict "$r1" '<=' 1.3)"); fi
        if [ "$bulk" = OFF ] && [ "$oom" = 1 ]; then t+=("innops/ALTER<=0.1 $(verdict "$r1" '<=' 0.1)"); fi
        if [ "$oom" = 1 ]; then t+=("pt-osc/innops>=20 $(verdict "$r2" '>=' 20)"); else t+=("pt-osc/innops>=1.5 $(verdict "$r2" '>=' 1.5)"); fi
        printf '| %-8s | %-8s | %-14s | %-14s | %-14s | %-12s | %-12s | %-12s | %-6s | %-13s | %-9s | %s\n' "$s$([ "$oom" = 1 ] && echo '*')" "${path:--}" \
            "$(fmt "$mi" "$(count "$s" innops)")" "$(fmt "$ma" "$(count "$s" alter)")" "$(fmt "$mp" "$(count "$s" ptosc)")" \
            "$r1" "$ml" "$rl" "$rp" "$r2" "$load" "$(IFS=';'; echo "${t[*]}")"
    done
    echo "(* = the MyISAM table is larger than the buffer pool; load1 = range of the 1-minute load average before the runs)"
    if echo "$all" | grep -q $'\tinnops_hash\t'; then
        echo
        echo "innops convert --verify hash (the row hash for every table) against the same limit, paired rounds:"
        for s in $settings; do
            rp=$(paired "$s" innops_hash)
            printf '| %-8s | %s s (n=%s) | innops --verify hash/limit (paired) %s |\n' "$s" "$(cell "$s" innops_hash | median)" "$(count "$s" innops_hash)" "$rp"
        done
    fi
    if echo "$all" | grep -q $'\tinnops\t'; then
        echo
        echo "innops convert, median seconds per step (from its journal; 'other' = process start, connect, plan and report;"
        echo "'insert' = the copy statement(s) alone, as innops times them: the bulk INSERT … SELECT, or all chunks):"
        echo "('ALTER' and 'read' = the limit's two parts beside them: the ALTER's seconds and its read of the new table)"
        printf '| %-8s | %7s | %9s | %7s | %7s | %7s | %7s | %7s | %7s | %7s | %7s | %7s |\n' setting total preflight copy insert indexes verify swap analyze other ALTER read
        for s in $settings; do
          for im in innops innops_hash; do
            rows=$(echo "$all" | awk -F'\t' -v s="$s" -v m="$im" '$1 == s && $3 == m { print $4 "\t" $7 }')
            [ -n "$rows" ] || continue
            col() { echo "$rows" | awk -F'\t' -v k="$1" '{ n = split($2, a, " "); v = "-"; for (i = 1; i <= n; i++) { split(a[i], kv, "="); if (kv[1] == k) v = kv[2] } if (v != "-") print v }' | median; }
            other=$(echo "$rows" | awk -F'\t' '{ n = split($2, a, " "); for (i = 1; i <= n; i++) { split(a[i], kv, "="); if (kv[1] == "journal") j = kv[2] } printf "%.3f\n", $1 - j }' | median)
            printf '| %-8s | %7s | %9s | %7s | %7s | %7s | %7s | %7s | %7s | %7s | %7s | %7s |\n' "$s$([ "$im" = innops_hash ] && echo ' hash')" "$(echo "$rows" | cut -f1 | median)" \
                "$(col preflight)" "$(col copy)" "$(col insert)" "$(col indexes)" "$(col verify)" "$(col swap)" "$(col analyze)" "$other" \
                "$(cell "$s" alter | median)" "$(echo "$all" | awk -F'\t' -v s="$s" '$1 == s && $3 == "alter" { r = $7; sub(/^read=/, "", r); if (r != $7) print r }' | median)"
          done
        done
    fi
}

if [ "${1:-}" = --summary ]; then
    shift
    [ $# -gt 0 ] || { echo "usage: benches/convert.sh --summary RESULTS.tsv..." >&2; exit 2; }
    summarize "$@"
    exit
fi

ROWS=${ROWS:-1000000}
ROUNDS=${ROUNDS:-3}
SETTINGS=${SETTINGS:-"1G:ON 1G:OFF 48M:ON 48M:OFF"}
METHODS=${METHODS:-"innops alter ptosc"}
SKIP_PTOSC_SLOW=${SKIP_PTOSC_SLOW:-0}
SLOW_ROUNDS=${SLOW_ROUNDS:-$ROUNDS}
cd "$(dirname "$0")/.."
INNOPS=${INNOPS:-target/release/innops}

die() { echo "convert.sh: $*" >&2; exit 1; }
command -v jq >/dev/null || die "jq is not installed"
CLIENT=$(command -v mariadb || command -v mysql || true)
[ -n "$CLIENT" ] || die "no mariadb or mysql client on PATH"
case " $METHODS " in *" ptosc "*) command -v pt-online-schema-change >/dev/null || die "pt-online-schema-change is not installed (or leave ptosc out of METHODS)";; esac
for m in $METHODS; do case $m in innops|innops_hash|alter|ptosc) ;; *) die "METHODS: '$m' is not innops, innops_hash, alter or ptosc";; esac; done
for s in $SETTINGS; do [[ $s =~ ^[0-9]+[KMGkmg]?:(ON|OFF)$ ]] || die "SETTINGS: '$s' is not POOL:ON or POOL:OFF (e.g. 48M:OFF)"; done
if [ -z "${INNOPS_SKIP_BUILD:-}" ] && [ "$INNOPS" = target/release/innops ]; then
    cargo build --release --quiet
fi
[ -x "$INNOPS" ] || die "$INNOPS is not executable"

ROOT=$(mktemp -d /tmp/cvb.XXXXXX)   # short: the sandbox socket path must fit in 108 bytes
export INNOPS_SANDBOX_DIR=$ROOT
OUT=${OUT:-$(mktemp -d /tmp/innops-convert-bench.XXXXXX)}
mkdir -p "$OUT"
RESULTS=$OUT/results.tsv
printf 'setting\tround\tmethod\tseconds\toom\tload1\tdetail\n' >"$RESULTS"
UP=()
cleanup() {
    local rc=$?
    for n in "${UP[@]}"; do
        if [ "${KEEP:-0}" = 1 ]; then
            echo "kept sandbox $n: INNOPS_SANDBOX_DIR=$ROOT $INNOPS sandbox down $n" >&2
        else
            "$INNOPS" sandbox down "$n" >/dev/null 2>&1 || echo "convert.sh: sandbox down $n failed; see $ROOT" >&2
        fi
    done
    [ "${KEEP:-0}" = 1 ] || rm -rf "$ROOT"
    [ $rc = 0 ] || echo "convert.sh: failed (exit $rc); logs in $OUT" >&2
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
sql() { "$CLIENT" -S "$SOCK" -uroot -N -B bench -e "$1"; }
sql_root() { "$CLIENT" -S "$SOCK" -uroot -N -B -e "$1"; }
status_var() { sql_root "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = '$1'"; }

make_pristine() {
    local rnd='LPAD(FLOOR(RAND(%d) * 99999999999), 11, "0")' c=() pad=() i
    for i in 2 3 4 5 6 7 8 9 10 11; do c+=("$(printf "$rnd" "$i")"); done
    for i in 12 13 14 15 16; do pad+=("$(printf "$rnd" "$i")"); done
    sql_root "CREATE DATABASE bench"
    sql "CREATE TABLE pristine (
           id INT UNSIGNED NOT NULL AUTO_INCREMENT,
           k INT UNSIGNED NOT NULL DEFAULT 0,
           c CHAR(120) NOT NULL DEFAULT '',
           pad CHAR(60) NOT NULL DEFAULT '',
           PRIMARY KEY (id), KEY k_1 (k), KEY c_1 (c(20)), KEY k_pad (k, pad)
         ) ENGINE=MyISAM;
         INSERT INTO pristine (id, k, c, pad)
           SELECT seq, FLOOR(1 + RAND(1) * $ROWS),
                  CONCAT_WS('-', $(IFS=,; echo "${c[*]}")),
                  CONCAT_WS('-', $(IFS=,; echo "${pad[*]}"))
           FROM seq_1_to_$ROWS"
}

# Untimed: drop what any method leaves, make a fresh copy, flush InnoDB's dirty pages and the OS's.
prepare_copy() {
    sql "DROP TABLE IF EXISTS t, _t_myisam_old, _t_innops_new, _t_old, _t_new;
         CREATE TABLE t LIKE pristine; INSERT INTO t SELECT * FROM pristine; FLUSH TABLES t"
    local pct i
    pct=$(sql_root "SELECT @@innodb_max_dirty_pages_pct")
    sql_root "SET GLOBAL innodb_max_dirty_pages_pct = 0"
    for i in $(seq 600); do
        [ "$(status_var INNODB_BUFFER_POOL_PAGES_DIRTY)" -le 0 ] && break
        sleep 0.2
    done
    sql_root "SET GLOBAL innodb_max_dirty_pages_pct = $pct"
    sync
}

# Untimed: the method produced an InnoDB t with the pristine's rows.
check_result() {
    local method=$1 engine sum
    engine=$(sql "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'bench' AND TABLE_NAME = 't'")
    [ "$engine" = InnoDB ] || die "$method left t as '$engine', not InnoDB (logs in $OUT)"
    sum=$(sql "CHECKSUM TABLE t EXTENDED" | cut -f2)
    [ "$sum" = "$PRISTINE_SUM" ] || die "$method: CHECKSUM TABLE t = $sum, pristine = $PRISTINE_SUM (logs in $OUT)"
}

# innops's path (from the report's note) and seconds per step (from the journal's timestamps).
innops_detail() {
    local dir=$1 path steps
    path=$(jq -r '[.notes[] | select(startswith("path: "))][0] // "path: ?" | sub("^path: "; "") | split(" ")[0]' "$dir/report.json")
    steps=$(jq -rs '
        def t: (.[0:19] + "Z" | fromdateiso8601) + ((.[19:] | rtrimstr("Z")) as $f | if $f == "" then 0 else ("0" + $f | tonumber) end);
        (map(select(.event == "step_started")) | map({ key: .step, value: (.ts | t) }) | from_entries) as $s
        | (map(.ts | t)) as $all
        | (map(select(.event == "step_done")) | map("\(.step | split(":")[0])=\(((.ts | t) - $s[.step]) * 1000 | round / 1000)"))
          + ["journal=\((($all | max) - ($all | min)) * 1000 | round / 1000)"]
        | join(" ")' "$dir/journal.jsonl")
    local chunks insert hash
    chunks=$(jq -r '[.steps[] | select(.id | startswith("copy:")) | .result.copy.chunks // empty][0] // empty' "$dir/report.json")
    insert=$(jq -r '[.steps[] | select(.id | startswith("copy:")) | .result.copy.seconds // empty][0] // empty | . * 1000 | round / 1000' "$dir/report.json")
    hash=$(jq -r '[.steps[] | select(.id | startswith("verify:")) | .result.timing.shadow_hash_s // empty][0] // empty | . * 1000 | round / 1000' "$dir/report.json")
    echo "path=$path $steps${insert:+ insert=$insert}${hash:+ new_table_hash=$hash}${chunks:+ chunks=$chunks}"
}

run_method() {
    local setting=$1 round=$2 method=$3 tag log t0 t1 secs load detail=""
    tag="${setting/:/-}.r$round.$method"
    log=$OUT/$tag.log
    prepare_copy
    load=$(cut -d' ' -f1 /proc/loadavg)
    case $method in
        innops|innops_hash)
            local verify=()
            [ "$method" = innops_hash ] && verify=(--verify hash)
            t0=$(now)
            "$INNOPS" convert --sandbox "$NAME" --tables bench.t --execute --yes --no-bench "${verify[@]}" --run-dir "$OUT/$tag.run" >"$log" 2>&1 \
                || { rc=$?; tail -20 "$log" >&2; die "innops convert failed (exit $rc), log $log"; }
            t1=$(now)
            detail=$(innops_detail "$OUT/$tag.run")
            [ "$(sql "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'bench' AND TABLE_NAME = '_t_myisam_old'")" = MyISAM ] \
                || die "innops convert did not keep _t_myisam_old"
            ;;
        alter)
            t0=$(now)
            "$CLIENT" -S "$SOCK" -uroot bench -e "ALTER TABLE t ENGINE=InnoDB" >"$log" 2>&1 \
                || { cat "$log" >&2; die "ALTER failed, log $log"; }
            t1=$(now)
            # The physical limit of a verified conversion (issue 8): the server's own ALTER plus one read of the
            # new table. The read is timed apart and recorded beside the ALTER.
            local r0 r1
            r0=$(now)
            sql "CHECKSUM TABLE t EXTENDED" >/dev/null
            r1=$(now)
            detail="read=$(elapsed "$r0" "$r1")"
            ;;
        ptosc)
            t0=$(now)
            pt-online-schema-change --alter "ENGINE=InnoDB" --execute --no-drop-old-table --recursion-method=none \
                --no-version-check "D=bench,t=t,S=$SOCK,u=root" >"$log" 2>&1 \
                || { tail -20 "$log" >&2; die "pt-online-schema-change failed, log $log"; }
            t1=$(now)
            ;;
    esac
    secs=$(elapsed "$t0" "$t1")
    check_result "$method"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$setting" "$round" "$method" "$secs" "$OUT_OF_MEMORY" "$load" "$detail" >>"$RESULTS"
    printf '  %-8s round %s  %-6s %8.2f s  load %-5s %s\n' "$setting" "$round" "$method" "$secs" "$load" "$detail"
}

# Cells that take minutes: pt-osc out of memory, and the row-by-row ALTER out of memory.
slow_cell() {
    local method=$1 bulk=$2
    [ "$OUT_OF_MEMORY" = 1 ] || return 1
    [ "$method" = ptosc ] || { [ "$method" = alter ] && [ "$bulk" = OFF ]; }
}

VERSION=""
declare -A POOL_BYTES TABLE_BYTES
POOLS=()
for s in $SETTINGS; do
    p=${s%%:*}
    case " ${POOLS[*]} " in *" $p "*) ;; *) POOLS+=("$p");; esac
done
START=$(now)
for pool in "${POOLS[@]}"; do
    NAME=cvb$$_$(echo "$pool" | tr -cd '[:alnum:]')
    "$INNOPS" sandbox up "$NAME" --buffer-pool "$pool" >"$OUT/sandbox-$pool.log" 2>&1 \
        || { cat "$OUT/sandbox-$pool.log" >&2; die "sandbox up $NAME failed"; }
    UP+=("$NAME")
    SOCK=$("$INNOPS" sandbox list --format json | jq -r ".[] | select(.name == \"$NAME\") | .socket")
    [ -S "$SOCK" ] || die "sandbox socket $SOCK not found"
    VERSION=$(sql_root "SELECT VERSION()")
    t0=$(now)
    make_pristine
    PRISTINE_SUM=$(sql "CHECKSUM TABLE pristine EXTENDED" | cut -f2)
    POOL_BYTES[$pool]=$(sql_root "SELECT @@innodb_buffer_pool_size")
    TABLE_BYTES[$pool]=$(sql "SELECT DATA_LENGTH + INDEX_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'bench' AND TABLE_NAME = 'pristine'")
    OUT_OF_MEMORY=0
    [ "${TABLE_BYTES[$pool]}" -gt "${POOL_BYTES[$pool]}" ] && OUT_OF_MEMORY=1
    echo "sandbox $NAME: $VERSION, buffer pool $pool ($((POOL_BYTES[$pool] / 1048576))M), pristine table of $ROWS rows, MyISAM data+indexes $((TABLE_BYTES[$pool] / 1048576))M ($(elapsed "$t0" "$(now)") s to build)$([ $OUT_OF_MEMORY = 1 ] && echo ", does not fit the pool")"
    for s in $SETTINGS; do
        [ "${s%%:*}" = "$pool" ] || continue
        bulk=${s#*:}
        sql_root "SET GLOBAL innodb_alter_copy_bulk = $bulk"
        read -r -a methods <<<"$METHODS"
        for round in $(seq "$ROUNDS"); do
            n=${#methods[@]}
            for i in $(seq 0 $((n - 1))); do
                m=${methods[$(((i + round - 1) % n))]}
                if [ "$m" = ptosc ] && [ "$OUT_OF_MEMORY" = 1 ] && [ "$SKIP_PTOSC_SLOW" = 1 ]; then continue; fi
                if slow_cell "$m" "$bulk" && [ "$round" -gt "$SLOW_ROUNDS" ]; then continue; fi
                run_method "$s" "$round" "$m"
            done
        done
    done
    [ "${KEEP:-0}" = 1 ] && continue
    sql "DROP TABLE IF EXISTS t, _t_myisam_old, _t_innops_new, _t_old, _t_new"
    "$INNOPS" sandbox down "$NAME" >/dev/null 2>&1 || echo "convert.sh: sandbox down $NAME failed" >&2
    UP=()
done

echo
echo "MyISAM → InnoDB, $ROWS rows, $ROUNDS round(s) (slow cells: $SLOW_ROUNDS), $VERSION; medians in seconds (n = runs); $(elapsed "$START" "$(now)") s in all"
summarize "$RESULTS"
echo
echo "pt-osc flags: --alter \"ENGINE=InnoDB\" --execute --no-drop-old-table --recursion-method=none --no-version-check D=bench,t=t,S=<socket>,u=root"
echo "every run: $RESULTS; logs and innops run directories: $OUT"
