#!/usr/bin/env bash
# The online path (issue 26), by benches/convert_online.rs (its comment says what it measures), on one throwaway
# sandbox per buffer-pool size, brought down at the end even on failure.
#
#   ONLINE=1 benches/convert.sh                      # 1,000,000 rows at the 1G and the 48M pool
#   ONLINE=1 POOLS=1G ROWS=10000000 benches/convert.sh
# Settings: POOLS ("1G 48M"), ROWS (1000000), ROUNDS (1), PTOSC (1: pt-online-schema-change beside it when installed;
# it is left out at pools the table does not fit unless PTOSC_SLOW=1).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
INNOPS="$(mktemp -d)/innops"; cp target/release/innops "$INNOPS"; export INNOPS
export INNOPS_SANDBOX_DIR="$(mktemp -d)"
trap 'for s in $(ls "$INNOPS_SANDBOX_DIR" 2>/dev/null); do "$INNOPS" sandbox down "$s" >/dev/null 2>&1 || true; done' EXIT
for pool in ${POOLS:-1G 48M}; do
  name="ob-$(echo "$pool" | tr 'A-Z' 'a-z')"
  "$INNOPS" sandbox up "$name" --buffer-pool "$pool" >/dev/null
  ptosc=${PTOSC:-1}
  if [ "$pool" != 1G ] && [ "${PTOSC_SLOW:-0}" != 1 ]; then ptosc=0; fi
  OB_SOCKET="$INNOPS_SANDBOX_DIR/$name/mysqld.sock" OB_ROWS="${ROWS:-1000000}" OB_ROUNDS="${ROUNDS:-1}" OB_PTOSC="$ptosc" \
    cargo bench --quiet --bench convert_online
done
