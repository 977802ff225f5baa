#!/usr/bin/env bash
# Mutation testing of innops's guard code (issue 7, §6): every check that guards data or a verdict must be
# proven to fire, so each mutant of a check — a comparison turned around, a verdict turned into `true`, a
# function returning a default — must make some test fail. Not run in CI: each mutant is a build plus the
# integration tests that exercise it against real sandboxes, about a minute each on a 2-core machine.
#
#   benches/mutants.sh convert   # the conversion's checks, verification and copy (tests: convert, verdicts)
#   benches/mutants.sh plan      # the runner, journal, run locks and load guard
#   benches/mutants.sh redo      # the redo procedure's checks (tests: redo)
#   benches/mutants.sh recover   # recover's verdicts: doubts, probes, the cross-check, exit 4 (tests: recover*)
#   benches/mutants.sh deadlock  # a scenario's verdicts: replies, the report's victim, own counts (tests: deadlock)
#   benches/mutants.sh readonly  # readonly's checks: the write probe, a server found down, --min-redo, the state record
#   RE='(differences|row_hash)' benches/mutants.sh convert   # only the mutants of these functions
#
# Results go to target/mutants-SET/mutants.out/ (caught.txt, missed.txt, timeout.txt, unviable.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-mutants >/dev/null 2>&1 || cargo install --locked cargo-mutants
set_name=${1:-convert}
case "$set_name" in
convert)
    files=(-f src/procedures/convert/mod.rs -f src/procedures/convert/verify.rs -f src/procedures/convert/copy.rs
        -f src/procedures/convert/definition.rs -f src/procedures/convert/drop_kept.rs)
    # The functions that hold checks, verification and the copy's correctness; progress bars and names are left out.
    re='(verify_now|copy_step|swap_step|verify_step|alter_step|alter_proof|verified_source|discard_step|drop_old_step|index_step|index_differences|swapped|method_for|fingerprint|row_hash|count_rows|reap_orphans|create_shadow|copy_chunked|copy_bulk|copy_whole|after_key|next_chunk|wait_for_load|acquire_guard|swap|differences|hash_keys|now_and_then|drop_kept::plan)'
    tests='test(/^(convert|verdicts)::/) | test(/procedures::convert/)'
    ;;
plan)
    files=(-f src/plan/runner.rs -f "src/plan/runner/*.rs" -f src/plan/journal.rs -f src/plan/lock.rs -f src/plan/guard.rs -f src/plan/mod.rs)
    re='(run_checks|check_same_plan|check_plan_unchanged|first_failure|dry_run|confirm|execute|execute_steps|recover|progress|file_sha256|decide|Threshold::parse|Locks::|holder|lock_name|is_lock_wait_timeout|recorded_result|Verdict::|conflict|held_slots|describe|label_of|server_if)'
    tests='test(/^verdicts::/) | test(/^convert::(a_copy_killed|ctrl_c|critical_load|drop_old)/) | test(/^redo::/) | test(/^plan::/) | test(/^lock::/)'
    ;;
redo)
    files=(-f src/procedures/redo.rs)
    re='.'
    tests='test(/^redo::/) | test(/procedures::redo/)'
    ;;
recover)
    files=(-f "src/dump/read/*.rs" -f src/dump/xcheck.rs -f src/dump/manifest.rs -f src/dump/mod.rs
        -f src/procedures/recover/mod.rs -f src/procedures/recover/verdict.rs -f src/procedures/recover/trx.rs
        -f src/dump/independent.rs)
    # What decides a verdict: doubts (log, crash, key order, cross-check), probes and lost ranges, the key
    # walked by, the load check, the exit code.
    re='(confirm|bisect|unexplained|page_of|corruption_since|end_crash_doubt|begin_crash_doubt|doubt_out_of_order|compare|record|entry|key_id|gap|probe|probe_spaces|column_space|string_points|candidate_strings|read_ranges|merge_lost|cmp_keys|walk_groups|group_size|rows_in_group_written|choose_secondary_key|TableInfo::read|dump_table|LoadCheck::ok|Verified::ok|verify_load|IndexAgreement::ok|LostCount::ok|judge|agreement|lost_count|range_sql|bound|literal_of|Tally|listed|shortfall|doubts|assess)'
    tests='test(/^recover/) | test(/dump::/) | test(/procedures::recover/)'
    ;;
deadlock)
    files=(-f src/procedures/deadlock/verdict.rs -f src/procedures/deadlock/runner.rs -f src/procedures/deadlock/plan.rs
        -f src/procedures/deadlock/parse.rs)
    # What decides a scenario's verdict: each statement's reply against its expectation, the report's victim
    # against the errors seen, the counts of this run's own deadlocks, the schema refusals, the report parser.
    re='(schema_problem|is_lock_wait_state|same_every_time|record|judge_report|execute|error_of|in_lock_wait|processlist_wait|live_transactions|open_trx|finish|repetition|gaps|parse)'
    tests='test(/^deadlock::/) | test(/procedures::deadlock/)'
    ;;
readonly)
    files=(-f src/procedures/readonly.rs -f src/playbook.rs)
    # The checks and the decisions behind them; notes, previews and estimates are left out. The playbook's order
    # check is here because its tests are the readonly-after-convert cases.
    re='(probe_verdict|down_verdict|merge_state|min_redo|stop_step|clean_shutdown_check|start_after_failed_stop|dropin_step|start_step|ro_var_check|restore_and_start|verify_step|probe_table_step|probe_exists|preflush_step|restore_preflush|change_buffering_step|preflight|Ro::settings|Ro::next_start_ro|order_problems|order_check|MemberEffect)'
    # All of playbook's tests: cargo-mutants lists the field deletions of playbook.rs's `rebuild` whatever --re
    # says, and only the playbook's resume tests catch them.
    tests='test(/^readonly::/) | test(/procedures::readonly/) | test(/^lock::/) | test(/^playbook::/)'
    ;;
*)
    echo "usage: $0 convert|plan|redo|recover|deadlock|readonly" >&2
    exit 2
    ;;
esac
# RE narrows the set further (for example to the functions a change touched).
exec cargo mutants --test-tool nextest --profile mutants "${files[@]}" --re "${RE:-$re}" --timeout 600 \
    --output "target/mutants-$set_name" -- -E "$tests"
