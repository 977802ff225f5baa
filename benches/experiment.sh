#!/usr/bin/env bash
# The honesty of `innops experiment`'s verdicts (issue 29): a benchmark, not a test. It prints what it counted
# and judges it against the targets; it does not fail on them.
#
#   PART=aa     N experiments whose only variant B is the baseline's own value (`--set innodb_io_capacity=<its
#               current value>`): B must be "no difference the noise can resolve" in at least 19 of 20.
#   PART=power  N experiments of innodb_flush_log_at_trx_commit=1 (the baseline) against 2 under
#               oltp_write_only: a real difference the verdict must find ("faster"/"slower" beyond the noise) in
#               at least 9 of 10; the script prints each run's measured change, so the size of the difference is
#               read from the same run. POWER_SET (the --set of B) and POWER_PRE (SQL that sets the baseline
#               first) choose another difference, e.g. POWER_PRE='SET GLOBAL long_query_time = 0'
#               POWER_SET=slow_query_log=ON WORKLOAD=oltp_read_only.
#
# Each run on one throwaway sandbox (under a temp INNOPS_SANDBOX_DIR, brought down at the end even on failure),
# one after the other, with the settings below; the release binary.
#
#   benches/experiment.sh                          # PART=aa, N=20
#   PART=power N=10 benches/experiment.sh
#   TIME=10 ROUNDS=3 WARMUP=2 THREADS=2 WORKLOAD=oltp_read_only benches/experiment.sh
#   KEEP=/tmp/study benches/experiment.sh          # also keep each run's report.json and per-round figures there
#
# The power target as measured in docs/experiment.md ("Shorter runs, more rounds"; 291 s a run):
#   PART=power TIME=2 WARMUP=0 ROUNDS=48 THREADS=4 WORKLOAD=oltp_read_only \
#     POWER_PRE='SET GLOBAL long_query_time = 0; SET GLOBAL log_slow_rate_limit = 10' POWER_SET=slow_query_log=ON \
#     benches/experiment.sh
#   PART=aa TIME=2 WARMUP=0 ROUNDS=16 THREADS=4 benches/experiment.sh
set -euo pipefail
PART=${PART:-aa}
if [ "$PART" = power ]; then N=${N:-10}; WORKLOAD=${WORKLOAD:-oltp_write_only}; else N=${N:-20}; WORKLOAD=${WORKLOAD:-oltp_read_only}; fi
TIME=${TIME:-10}
ROUNDS=${ROUNDS:-3}
WARMUP=${WARMUP:-2}
THREADS=${THREADS:-2}
cd "$(dirname "$0")/.."
cargo build --release --bin innops >&2
INNOPS=$PWD/target/release/innops
export INNOPS_SANDBOX_DIR=$(mktemp -d /tmp/expb-XXXX)
WORK=$(mktemp -d /tmp/expb-out-XXXX)
trap '"$INNOPS" sandbox down eb >/dev/null 2>&1 || true; rm -rf "$INNOPS_SANDBOX_DIR" "$WORK"' EXIT
"$INNOPS" sandbox up eb >/dev/null
SOCK=$INNOPS_SANDBOX_DIR/eb/mysqld.sock
if [ "$PART" = power ]; then
    SET=${POWER_SET:-innodb_flush_log_at_trx_commit=2}
    mariadb -S "$SOCK" -uroot -e "${POWER_PRE:-SET GLOBAL innodb_flush_log_at_trx_commit = 1}"
else
    SET="innodb_io_capacity=$(mariadb -S "$SOCK" -uroot -N -e 'SELECT @@innodb_io_capacity')"
fi
echo "PART=$PART N=$N: --set $SET --workload $WORKLOAD --threads $THREADS --time $TIME --rounds $ROUNDS --warmup $WARMUP" >&2
: >"$WORK/verdicts"
for i in $(seq 1 "$N"); do
    start=$(date +%s)
    "$INNOPS" experiment --sandbox eb --set "$SET" --workload "$WORKLOAD" --threads "$THREADS" --time "$TIME" \
        --rounds "$ROUNDS" --warmup "$WARMUP" --execute --yes --format json --run-dir "$WORK/run$i" \
        >"$WORK/r$i.json" 2>"$WORK/r$i.err" || { echo "run $i failed: $(tail -1 "$WORK/r$i.err")" >&2; continue; }
    python3 - "$WORK/r$i.json" "$i" "$(( $(date +%s) - start ))" "$(cut -d' ' -f1 /proc/loadavg)" >>"$WORK/verdicts" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))["experiment"]
b = next(a for a in e["arms"] if a["label"] == "B")
a = next(a for a in e["arms"] if a["label"] == "A")
change = b.get("tps_change_pct") or 0.0
paired = e.get("paired_rounds") or "pooled"
n = b.get("tps_noise") or {}
ci = f"{n['ci_low_pct']:+.1f}…{n['ci_high_pct']:+.1f}%" if n else "-"
print(f"{sys.argv[2]}\t{change:+.1f}%\t{ci}\t{e.get('floor_pct', 0):.1f}\t{paired}\t{sys.argv[3]}\t{sys.argv[4]}\t{b['verdict']}")
PY
    tail -1 "$WORK/verdicts" >&2
    if [ -n "${KEEP:-}" ]; then
        mkdir -p "$KEEP/run$i" && cp -r "$WORK/r$i.json" "$WORK/run$i/experiment" "$KEEP/run$i/"
    fi
done
echo "run	B vs A (tps)	95% CI	noise floor ±%	rounds paired	seconds	load1	verdict of B"
cat "$WORK/verdicts"
runs=$(wc -l <"$WORK/verdicts")
none=$(grep -c "no difference" "$WORK/verdicts" || true)
if [ "$PART" = power ]; then
    echo "found the difference in $((runs - none)) of $runs runs (target: at least 9 of 10)"
else
    echo "no difference in $none of $runs A/A runs (target: at least 19 of 20)"
fi
