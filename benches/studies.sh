#!/usr/bin/env bash
# The ready studies of playbooks/experiments/ run on throwaway sandboxes, and their figures printed as ratios
# against the baseline: the numbers docs/experiment.md's "Compared with the posts" section quotes (issue 29).
# A benchmark, not a test: it prints what it measured and judges nothing itself.
#
#   benches/studies.sh                         # acid, compression, engines-read-write, virtual-column
#   STUDIES="acid compression" benches/studies.sh
#   ROCKSDB_SO=/tmp/rocksdeb/root/usr/lib/mysql/plugin/ha_rocksdb.so STUDIES=engines-rocksdb benches/studies.sh
#   benches/studies.sh --summary RUN.json …    # only print the table of run(s) already made (report.json or
#                                              # the --format json output)
#
# Each study runs with its file's settings (EXTRA="--rounds 4" adds flags: the command line wins over the file)
# on its own sandbox under a temp INNOPS_SANDBOX_DIR, brought down at the end even on failure; acid.toml on a
# --binlog sandbox. engines-rocksdb needs RocksDB loaded at startup: ROCKSDB_SO names an ha_rocksdb.so of the
# server's version (Debian: `apt-get download mariadb-plugin-rocksdb` and `dpkg -x` it, nothing installed); a
# private plugin dir (links to the server's plugins plus that file) is given to the sandbox through its conf.d.
# The load average is printed beside each run: on a shared machine it is half of the story.
set -euo pipefail
cd "$(dirname "$0")/.."

summary() {
    python3 - "$@" <<'PY'
import json, sys
for path in sys.argv[1:]:
    doc = json.load(open(path))
    e = doc.get("experiment") or doc
    s = e["shape"]
    print(f"== {path}: {s['workload']}, {s['threads']} threads, {e.get('rounds_measured')} rounds x {s['time_s']} s"
          f" (+{s['warmup_s']} s warm-up); rounds paired: {e.get('paired_rounds') or 'no (pooled seconds)'}")
    print("   " + e["aa_line"])
    arms = e["arms"]
    a = next(x for x in arms if x["key"] == "A")
    def ratio(x, k):
        return f"{x[k] / a[k]:.2f}" if x.get(k) and a.get(k) else "-"
    def change(x, k):
        # the verdict's own figure: the geometric mean of the rounds' ratios (or the pooled seconds'), as x A
        c = x.get(k)
        return f"{1 + c / 100:.2f}" if c is not None else "1.00" if x is a else "-"
    print(f"   {'arm':4} {'variant':78} {'tps':>8} {'x A':>5} {'95% CI %':>15} {'p95 x A':>7}"
          f" {'CPU ms/trx':>10} {'log B/trx':>9} {'disk B/trx':>10} {'x A':>5} {'KB d+i/alloc':>13}  verdict")
    for x in arms:
        what = ", ".join(f"{v['name']}={v['value']}" for v in x.get("settings", [])) or x.get("table") or ""
        n = x.get("tps_noise") or {}
        ci = f"{n['ci_low_pct']:+.0f}..{n['ci_high_pct']:+.0f}" if n else ""
        size = x.get("table_size") or {}
        di = (size.get("data_length") or 0) + (size.get("index_length") or 0)
        alloc = size.get("allocated_bytes")
        sz = f"{di // 1024}/{alloc // 1024 if alloc else '-'}" if size else ""
        print(f"   {x['label']:4} {str(what)[:78]:78} {x['tps']:8.0f} {change(x, 'tps_change_pct'):>5} {ci:>15} {change(x, 'p95_change_pct'):>7}"
              f" {x.get('cpu_ms_per_trx') or 0:10.3f} {x.get('log_bytes_per_trx') or 0:9.0f} {x.get('disk_bytes_per_trx') or 0:10.0f} {ratio(x, 'disk_bytes_per_trx'):>5}"
              f" {sz:>13}  {x['verdict']}")
PY
}

if [ "${1:-}" = --summary ]; then shift; summary "$@"; exit 0; fi

STUDIES=${STUDIES:-acid compression engines-read-write virtual-column}
INNOPS=${INNOPS:-$PWD/target/release/innops}
[ -x "$INNOPS" ] || cargo build --release --bin innops >&2
export INNOPS_SANDBOX_DIR=$(mktemp -d /tmp/studies-XXXX)
OUT=${OUT:-$(mktemp -d /tmp/studies-out-XXXX)}
mkdir -p "$OUT"
started=()
cleanup() { for s in "${started[@]}"; do "$INNOPS" sandbox down "$s" >/dev/null 2>&1 || true; done; rm -rf "$INNOPS_SANDBOX_DIR"; }
trap cleanup EXIT
for study in $STUDIES; do
    sb=st-$study
    flags=()
    [ "$study" = acid ] && flags+=(--binlog)
    "$INNOPS" sandbox up "$sb" "${flags[@]}" >/dev/null
    started+=("$sb")
    if [ "$study" = engines-rocksdb ]; then
        : "${ROCKSDB_SO:?engines-rocksdb needs ROCKSDB_SO=…/ha_rocksdb.so}"
        dir=$OUT/plugin
        mkdir -p "$dir"
        pdir=$(mariadb -S "$INNOPS_SANDBOX_DIR/$sb/mysqld.sock" -uroot -N -e 'SELECT @@plugin_dir')
        for f in "$pdir"*; do ln -sf "$f" "$dir/"; done
        ln -sf "$ROCKSDB_SO" "$dir/"
        printf '[mysqld]\nplugin_dir = %s\nplugin_load_add = ha_rocksdb\n' "$dir" >"$INNOPS_SANDBOX_DIR/$sb/conf.d/rocksdb.cnf"
        "$INNOPS" sandbox stop "$sb" >/dev/null && "$INNOPS" sandbox start "$sb" >/dev/null
    fi
    echo "$study: load before $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S) UTC" >&2
    # shellcheck disable=SC2086
    "$INNOPS" experiment "playbooks/experiments/$study.toml" --sandbox "$sb" ${EXTRA:-} --execute --yes \
        --format json --run-dir "$OUT/$study" >"$OUT/$study.json" 2>"$OUT/$study.err" \
        || { echo "$study failed: $(tail -1 "$OUT/$study.err")" >&2; continue; }
    echo "$study: load after $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S) UTC" >&2
    summary "$OUT/$study.json"
    "$INNOPS" sandbox down "$sb" >/dev/null
done
echo "runs kept in $OUT" >&2
