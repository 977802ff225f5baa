#!/usr/bin/python
# -*- coding: utf-8 -*-
# Licensed under the MIT license or the Apache License 2.0, at your option, as innops itself.

"""Run one innops procedure on the managed host and report it the Ansible way.

innops does the work and the judging: its pre-checks, actions, post-checks and verdicts. This module only turns
the task's arguments into an innops command line (``--format json``), runs it, and maps what innops printed to
Ansible's result: ``changed`` is innops's own ``changed`` (at least one step's action ran), ``failed`` follows
innops's exit code, ``msg`` is innops's one-sentence message. The mapping is the pure function ``interpret``
and the command line the pure function ``build_command``; both are unit-tested in tests/unit/.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: innops
short_description: Run an innops procedure (convert, redo, readonly, recover, a playbook) on the managed host
version_added: "0.1.0"
description:
  - Runs the C(innops) binary on the managed host with C(--format json) and reports its result the Ansible
    way. innops turns DBA procedures for MySQL and MariaDB into guarded step plans; this module adds nothing
    of its own to the checks or the actions.
  - In check mode innops makes its dry run (no C(--execute)), which still connects and runs every read-only
    pre-check, so a check-mode play answers "would this work on every host?" and reports C(changed) for the
    hosts where a step would act.
  - A real run adds C(--execute --yes), since a play has no terminal to confirm restart or destructive steps
    at. Destructive steps still need their own option (O(drop_old_table), O(drop_kept), O(allow_level),
    O(in_place)), as on the command line.
  - C(changed) is true when at least one step's action ran. A step whose pre-check found its work already
    done (status C(skipped) in the report) did not act, nor did a step that only checks, so running the same
    play again reports C(ok).
  - The task fails with innops's one-sentence message, on one line, when innops exits 1 (refused by a check or
    guard, and the refused step changed nothing), 2 (bad input, or the server cannot be reached), 3 (a
    post-check failed after an action, so a human must look; the report says what state the server is in), 4
    (a recovery that is not complete) or 130 (interrupted at a safe point; continue with O(procedure=resume)).
    RV(rc) holds the exit code.
  - A failed task's result leaves out RV(report), RV(bench) and RV(stderr), so that Ansible prints one short
    line for the host; run with C(-v) to have them (the report is also C(report.json) in RV(run_dir)).
  - Options mirror innops's command line; an option the procedure does not take is refused by innops (exit 2)
    with its name. See C(innops PROCEDURE --help) and docs/reference.md of innops for every flag.
author:
  - innops developers
requirements:
  - The C(innops) binary on the managed host (O(binary)).
  - Python 3 on the managed host; nothing else (no MySQL driver, innops connects itself).
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
options:
  procedure:
    description:
      - What innops does. V(inspect) and O(advise=true) with V(redo) only read, in check mode too.
      - V(run) runs the innops playbook O(playbook) (TOML) as one plan; V(resume) continues the interrupted run
        in O(run_dir) (it has no dry run, so check mode skips it).
    type: str
    required: true
    choices: [inspect, convert, redo, readonly, recover, run, resume]
  binary:
    description:
      - The innops binary on the managed host, a path or a name looked up on C(PATH), then in C(/usr/bin) (where
        the .deb and .rpm install it) and C(/usr/local/bin) (where the install play puts the portable binary), so
        that the default finds an installed innops even where the connection's C(PATH) is short.
    type: str
    default: innops
  chdir:
    description:
      - Directory innops runs in. Run directories without O(run_dir) go to C(CHDIR/innops-runs/<UTC time>-<procedure>/).
      - Default the module's working directory, which depends on the connection; set it (for example
        C(/var/lib/innops)) so that every host keeps its runs in a known place.
    type: path
  socket:
    description: Unix socket of the server (C(--socket)).
    type: path
  host:
    description: Server host, over TCP (C(--host)).
    type: str
  port:
    description: Server port, over TCP (C(--port)).
    type: int
  user:
    description: User name (C(--user)); default from the option files, else C(root).
    type: str
  password:
    description:
      - The user's password. Passed to innops in the C(MYSQL_PWD) environment variable, never on its command line,
        and never logged (C(no_log)). Keep it in Ansible Vault or an AWX credential.
      - Leave it out to use the option files (O(defaults_file), C(~/.my.cnf)).
    type: str
  defaults_file:
    description: Read only this option file's C([client]) and C([innops]) groups (C(--defaults-file)).
    type: path
  defaults_extra_file:
    description: Also read this option file (C(--defaults-extra-file)).
    type: path
  no_defaults:
    description: Read no option file (C(--no-defaults)).
    type: bool
  protocol:
    description: C(--protocol).
    type: str
    choices: [TCP, SOCKET]
  ssl_mode:
    description: TLS over TCP (C(--ssl-mode)).
    type: str
    choices: [DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY]
  ssl_ca:
    description: CA certificate (PEM) that signed the server's certificate (C(--ssl-ca)).
    type: path
  ssl_cert:
    description: Client certificate (PEM), with O(ssl_key) (C(--ssl-cert)).
    type: path
  ssl_key:
    description: Client private key (PEM), with O(ssl_cert) (C(--ssl-key)).
    type: path
  sandbox:
    description:
      - Work on the innops sandbox of this name (C(--sandbox)) - connection, server control and option file at once.
        For staging rehearsals and tests.
    type: str
  sandbox_root:
    description: Where sandboxes live (C(--sandbox-root)).
    type: path
  service:
    description:
      - How innops stops and starts the server, C(systemd:UNIT) (C(--service)).
      - V(redo), V(readonly), V(recover), V(run) and V(resume) take the control options (O(service),
        O(start_cmd), O(stop_cmd), O(config_file)); innops refuses them on V(convert) and V(inspect), which never
        restart the server.
    type: str
  start_cmd:
    description: Shell command that starts the server (C(--start-cmd)).
    type: str
  stop_cmd:
    description: Shell command that stops the server (C(--stop-cmd)); default the SHUTDOWN statement.
    type: str
  config_file:
    description:
      - The server's option file (C(--config-file)); innops writes its drop-in C(99-innops.cnf) into the last
        directory it includes, with a backup and a diff in the run directory.
    type: path
  no_bench:
    description: Skip the benchmarks before and after (C(--no-bench)); V(recover) takes no benchmark options.
    type: bool
  bench_time:
    description: Seconds each benchmark runs (C(--bench-time)); innops's default is 10.
    type: int
  run_dir:
    description:
      - Where the run's plan, journal and report go (C(--run-dir)); it must not hold a run already.
      - With O(procedure=resume), the run directory to continue.
    type: path
  tables:
    description:
      - V(convert) - tables to convert, C(db.table) or C(db.*) (C(--tables)).
      - V(recover) - tables to dump (C(--tables)).
    type: list
    elements: str
  all_myisam:
    description: V(convert) - every MyISAM table outside the system schemas (C(--all-myisam)).
    type: bool
  strategy:
    description: V(convert) - V(auto), V(bulk), V(deferred), V(chunked), V(online) (writes go on during the conversion) or V(alter) (C(--strategy)).
    type: str
  online_above:
    description: V(convert) - V(auto) takes the online path for a table larger than this size, e.g. V(1G) (C(--online-above)).
    type: str
  cutover_lock_wait:
    description: V(convert) - the online path, seconds one try at a lock waits before it backs off (C(--cutover-lock-wait)).
    type: int
  drop_old_table:
    description: V(convert) - DANGER, drop the kept MyISAM table once the InnoDB table is verified (C(--drop-old-table)).
    type: bool
  rollback:
    description: V(convert) - swap C(db.table) back to its kept MyISAM table (C(--rollback)).
    type: str
  drop_kept:
    description: V(convert) - DANGER, drop the MyISAM table innops kept for C(db.table) (C(--drop-kept)).
    type: str
  chunk_time:
    description: V(convert) - target duration of one copy chunk in milliseconds (C(--chunk-time)).
    type: int
  verify:
    description:
      - V(convert) - how the copy is proven before the swap (C(--verify)). V(auto) uses C(CHECKSUM TABLE) where
        the table's column types checksum alike on MyISAM and InnoDB and innops's row hash elsewhere, V(checksum)
        tries C(CHECKSUM TABLE) first for every table, V(hash) uses the row hash for every table; wherever
        C(CHECKSUM TABLE) differs, the row hash of both tables decides.
    type: str
    choices: [auto, checksum, hash]
  max_load:
    description: V(convert) - pause the copy while a status variable is above a value, C(Threads_running=25) (C(--max-load)).
    type: str
  critical_load:
    description: V(convert) - abort the copy above this, C(Threads_running=50) (C(--critical-load)).
    type: str
  restart:
    description: V(convert) - drop innops's own leftover copy of an interrupted conversion and copy again (C(--restart)).
    type: bool
  binlog:
    description:
      - V(convert) - where the writes go (C(--binlog)). V(replicate) through the binary log to every replica (the
        default on a server that is not a replica); V(local) with C(sql_log_bin=0), this server alone (each replica
        before a failover, then the primary). On a replica innops refuses a conversion without V(local).
    type: str
    choices: [replicate, local]
  max_lag:
    description: V(convert) - on a primary, pause the copy while a replica is more than this many seconds behind (C(--max-lag)).
    type: int
  critical_lag:
    description: V(convert) - on a primary, stop the copy when a replica is more than this many seconds behind (C(--critical-lag)).
    type: int
  replica:
    description:
      - V(convert) - the replicas to watch and verify (C(--replica), once per item), C(HOST:PORT) with the primary's
        account, or a pt-toolkit DSN C(h=HOST,P=PORT,u=USER,F=OPTION-FILE); default, those registered on the primary.
    type: list
    elements: str
  size:
    description:
      - V(redo) - the new total redo size, bytes or with K/M/G (C(--size)). Feed it from a task with
        O(advise=true) to size each host by its own measured writes.
    type: str
  advise:
    description:
      - V(redo) - measure the redo write rate for O(interval) seconds and recommend a size (C(--advise)); changes
        nothing. The advice is returned in RV(advice).
    type: bool
  interval:
    description: V(redo) - seconds to measure for O(advise) (C(--interval)); innops's default is 60.
    type: int
  offline:
    description: V(redo) - resize by clean shutdown, config edit and restart even where an online resize exists (C(--offline)).
    type: bool
  undo:
    description: V(readonly) - return the server to read-write (C(--undo)).
    type: bool
  min_redo:
    description: V(readonly) - shrink the redo log to its minimum before the shutdown (C(--min-redo)).
    type: bool
  sql_read_only:
    description: V(readonly) - also set C(read_only=1) (C(--sql-read-only)).
    type: bool
  no_preflush:
    description: V(readonly) - skip the online pre-flush (C(--no-preflush)).
    type: bool
  preflush_timeout:
    description: V(readonly) - seconds each pre-flush wait may take (C(--preflush-timeout)).
    type: int
  out:
    description: V(recover) - where the dump goes (C(--out)).
    type: path
  copy_to:
    description: V(recover) - where the copy of the data directory goes (C(--copy-to)).
    type: path
  max_level:
    description: V(recover) - highest C(innodb_force_recovery) level tried (C(--max-level)).
    type: int
  allow_level:
    description: V(recover) - DANGER, allow levels 4 to 6 up to this (C(--allow-level)).
    type: int
  drop_copy:
    description: V(recover) - remove the copy when the dump has finished (C(--drop-copy)).
    type: bool
  verify_load:
    description: V(recover) - load the dump into a fresh sandbox and check it (C(--verify-load)).
    type: bool
  threads:
    description: V(recover) - reading threads (C(--threads)).
    type: int
  mariadbd:
    description: V(recover) - the server binary for the private server (C(--mariadbd)).
    type: path
  datadir:
    description: V(recover) - the data directory of a server that is down already (C(--datadir)).
    type: path
  in_place:
    description: V(recover) - DANGER, forced recovery on the server itself (C(--in-place)).
    type: bool
  playbook:
    description: V(run) - the innops playbook (TOML) on the managed host.
    type: path
  sample:
    description: V(inspect) - seconds to sample the redo write rate, 0 skips it (C(--sample)).
    type: int
notes:
  - The module never retries and never decides on its own whether a step is safe; innops's pre-checks do. Use
    C(serial) and C(max_fail_percentage) in the play to run a canary first and stop the waves at the first failure.
  - Every run writes its run directory on the managed host; RV(run_dir) names it, and C(innops runs) lists them.
  - The fleet guide, docs/fleet.md in the innops repository, covers canary and waves, check mode, vaulted
    passwords and AWX job templates.
"""

EXAMPLES = r"""
- name: Would every MyISAM table convert? (run the play with --check)
  innops.dba.innops:
    procedure: convert
    all_myisam: true
    socket: /run/mysqld/mysqld.sock
    chdir: /var/lib/innops

- name: Convert them, no benchmark
  innops.dba.innops:
    procedure: convert
    all_myisam: true
    no_bench: true
    socket: /run/mysqld/mysqld.sock
    chdir: /var/lib/innops
  register: converted

- name: Measure this host's redo writes
  innops.dba.innops:
    procedure: redo
    advise: true
    interval: 60
    host: 127.0.0.1
    user: dba
    password: "{{ vault_dba_password }}"
  register: advice

- name: Resize its redo log to the advice, where the advice says to
  innops.dba.innops:
    procedure: redo
    size: "{{ advice.advice.recommended }}"
    service: systemd:mariadb
    config_file: /etc/mysql/my.cnf
    host: 127.0.0.1
    user: dba
    password: "{{ vault_dba_password }}"
  when: advice.advice.command is not none

- name: Freeze a reporting replica read-only
  innops.dba.innops:
    procedure: readonly
    sql_read_only: true
    service: systemd:mariadb
    config_file: /etc/mysql/my.cnf

- name: Continue a run a lost connection interrupted
  innops.dba.innops:
    procedure: resume
    run_dir: /var/lib/innops/innops-runs/20261130T060455.016Z-convert
    service: systemd:mariadb
"""

RETURN = r"""
rc:
  description: innops's exit code - 0 done (or a dry run whose pre-checks pass), 1 refused, 2 bad input or no
    connection, 3 a post-check failed after an action, 4 a recovery that is not complete, 130 interrupted.
  returned: when innops ran
  type: int
  sample: 0
msg:
  description: On failure innops's one-sentence message on one line (what was found and what to do); else a
    summary.
  returned: always
  type: str
  sample: "step preflight:shop.bad refused: shop.bad: AUTO_INCREMENT column `id` is not the first column of any index ..."
failure:
  description: What kind of failure the exit code says - V(refused), V(bad_input), V(post_check_failed),
    V(incomplete), V(interrupted), or C(exit N) for another code.
  returned: failed
  type: str
  sample: refused
cmd:
  description: The innops command line that ran (the password is never on it).
  returned: when innops ran
  type: list
  elements: str
  sample: [innops, convert, --all-myisam, --socket, /run/mysqld/mysqld.sock, --execute, --yes, --format, json]
status:
  description: The report's status - V(dry_run), V(done), V(refused), V(failed), V(interrupted).
  returned: when innops printed a report (every procedure but inspect and redo advise)
  type: str
  sample: done
executed:
  description: Whether innops acted (C(--execute)) or only made its dry run.
  returned: when innops printed a report
  type: bool
  sample: true
acted:
  description: The ids of the steps whose action ran (in check mode, would run). Empty when every step found
    its work already done.
  returned: when innops printed a report
  type: list
  elements: str
  sample: ["copy:shop.orders", "verify:shop.orders", "swap:shop.orders", "analyze:shop.orders"]
report:
  description: innops's report as printed with C(--format json), the same document as C(report.json) in the
    run directory - every step with its status, verdicts (check, passed, observed, expected, fix), action
    result, the benchmark, the final message.
  returned: when innops printed a report and the task did not fail, or failed under C(-v)
  type: dict
run_dir:
  description: The run directory on the managed host (plan.json, journal.jsonl, report.json, report.html,
    bench/). None for a dry run, which writes none.
  returned: when innops printed a report
  type: str
  sample: /var/lib/innops/innops-runs/20261130T060455.016Z-convert
bench:
  description: The benchmark figures - C(before), C(after) (transactions, tps, latency percentiles, server
    counters) and C(change) in percent; each null when not measured (dry run, O(no_bench)).
  returned: when innops printed a report and the task did not fail, or failed under C(-v)
  type: dict
advice:
  description: O(procedure=redo) with O(advise=true) - bytes written in the interval, the rate, the current size
    and minutes it holds, C(recommended_size) in bytes, C(recommended) as text, and C(command), the innops
    command that applies it, or null when the current size is enough.
  returned: when O(advise=true)
  type: dict
  sample: {recommended_size: 100663296, recommended: 96M, current_size: 33554432, command: "innops redo --size 96M --execute"}
inspection:
  description: O(procedure=inspect) - innops's inspection (flavor, version, settings, matrix, MyISAM tables, hazards).
  returned: when O(procedure=inspect)
  type: dict
stderr:
  description: What innops printed on stderr - one line per step as it starts and ends, and the error sentence.
  returned: when innops ran and the task did not fail, failed without an innops sentence, or failed under C(-v)
  type: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.process import get_bin_path

# Where the .deb and .rpm (/usr/bin) and the install play's portable binary (/usr/local/bin) put innops.
INSTALL_DIRS = ["/usr/bin", "/usr/local/bin"]


def find_binary(binary):
    """The innops to run: a path as given, a name looked up on PATH and then in INSTALL_DIRS; None if none."""
    if os.sep in binary:
        return binary
    # Two lookups: get_bin_path searches its opt_dirs before PATH, and a PATH the user set comes first.
    for opt_dirs in (None, INSTALL_DIRS):
        try:
            return get_bin_path(binary, opt_dirs=opt_dirs)
        except ValueError:
            pass
    return None

# Options that become `--flag VALUE` (or `--flag` for a true bool), in the order given here.
CONNECTION = [
    "socket", "host", "port", "user", "defaults_file", "defaults_extra_file", "no_defaults", "protocol",
    "ssl_mode", "ssl_ca", "ssl_cert", "ssl_key", "sandbox", "sandbox_root",
]
CONTROL = ["service", "start_cmd", "stop_cmd", "config_file"]
RUN = ["no_bench", "bench_time", "run_dir"]
PROCEDURE = [
    "tables", "all_myisam", "strategy", "online_above", "cutover_lock_wait", "drop_old_table", "rollback", "drop_kept", "chunk_time", "verify",
    "max_load", "critical_load", "restart", "binlog", "max_lag", "critical_lag", "replica", "size", "advise", "interval", "offline", "undo", "min_redo", "sql_read_only",
    "no_preflush", "preflush_timeout", "out", "copy_to", "max_level", "allow_level", "drop_copy", "verify_load",
    "threads", "mariadbd", "datadir", "in_place", "sample",
]

# List options innops takes one flag per value (a replica's DSN holds commas itself).
REPEATED = {"replica"}

# Exit codes fixed by innops's DESIGN.md (src/error.rs).
FAILURES = {1: "refused", 2: "bad_input", 3: "post_check_failed", 4: "incomplete", 130: "interrupted"}

# What a failed task leaves out unless run with -v: Ansible prints a failed task's whole result on one line, and
# innops's report alone is kilobytes, so a failing host would print a blob instead of innops's sentence.
DETAILS = ("report", "bench", "stderr")


def is_read_only(params):
    """Procedures that only read: they run the same in check mode and never report a change."""
    return params["procedure"] == "inspect" or (params["procedure"] == "redo" and bool(params.get("advise")))


def build_command(binary, params, check_mode):
    """The innops command line for the task, and the extra environment (the password).

    Only options the task sets are passed, so innops's own defaults apply and innops refuses an option its
    procedure does not take. A real run of a procedure that plans adds `--execute --yes`: a play cannot answer
    innops's prompt, and the play itself is the confirmation.
    """
    proc = params["procedure"]
    if proc == "resume" and check_mode:
        raise ValueError("resume has no dry run: it is never run in check mode")
    argv = [binary, proc]
    if proc == "run":
        argv.append(params["playbook"])
    names = CONNECTION + CONTROL + PROCEDURE + RUN
    for name in names:
        value = params.get(name)
        if proc == "resume" and name == "run_dir":
            continue  # the positional argument, below
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif isinstance(value, list) and name in REPEATED:
            for v in value:
                argv.extend([flag, str(v)])
        elif isinstance(value, list):
            argv.extend([flag, ",".join(str(v) for v in value)])
        else:
            argv.extend([flag, str(value)])
    if proc == "resume":
        argv.extend([params["run_dir"], "--yes"])
    elif not check_mode and not is_read_only(params):
        argv.extend(["--execute", "--yes"])
    argv.extend(["--format", "json"])
    env = {}
    if params.get("password") is not None:
        env["MYSQL_PWD"] = params["password"]
    return argv, env


def error_sentence(stderr):
    """innops's own error line on stderr (`innops: SENTENCE`), without the prefix; the last one wins."""
    lines = [line[len("innops: "):] for line in stderr.splitlines() if line.startswith("innops: ")]
    return lines[-1] if lines else None


def parse_json(stdout):
    try:
        doc = json.loads(stdout)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def summary(report, acted):
    if report.get("executed"):
        if acted:
            return "%s: %d step(s) acted: %s" % (report.get("status"), len(acted), ", ".join(acted))
        return "%s: nothing to change (every step found its work already done or only checks)" % report.get("status")
    if acted:
        return "dry run, every pre-check passes: %d step(s) would act: %s" % (len(acted), ", ".join(acted))
    return "dry run, every pre-check passes: nothing to change"


def one_line(text):
    """A message as one line: Ansible prints one line per failed host, and a line break would split it."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def interpret(params, rc, stdout, stderr, verbose=False):
    """Map what innops printed to the module's result: pure, so it is tested without a server.

    A failure's ``msg`` is innops's one sentence, on one line. Without ``verbose`` (Ansible's -v) a failure
    leaves out the report, the benchmark and stderr (DETAILS): the run directory's report.json holds the report.
    stderr stays when innops printed no sentence, since it is then the only account of what happened.
    """
    result = {"rc": rc, "stderr": stderr, "changed": False}
    doc = parse_json(stdout)
    sentence = error_sentence(stderr)
    if doc is not None and set(doc) == {"error", "exit"}:
        # innops's JSON for an error before any plan: bad input, no connection.
        doc, sentence = None, doc["error"]
    if doc is not None and params["procedure"] == "inspect":
        result["inspection"] = doc
        result["msg"] = "inspected %s" % doc.get("target", "the server")
    elif doc is not None and params["procedure"] == "redo" and params.get("advise"):
        result["advice"] = doc
        result["msg"] = "redo advice: %s" % (
            doc.get("command")
            or "the current size is enough (an hour of the measured writes needs %s)" % doc.get("recommended"))
    elif doc is not None and "steps" in doc:
        if "changed" not in doc:
            result.update(failed=True, msg="this innops (%s) does not report whether a step acted: install an innops "
                          "whose report has `changed`" % doc.get("version", "unknown version"))
            return result
        acted = [s["id"] for s in doc["steps"] if s.get("acts")]
        result.update(
            changed=bool(doc["changed"]),
            report=doc,
            status=doc.get("status"),
            executed=bool(doc.get("executed")),
            acted=acted,
            run_dir=doc.get("run_dir"),
            bench=doc.get("bench"),
            msg=doc.get("message") or summary(doc, acted),
        )
    if rc != 0:
        result["failed"] = True
        result["failure"] = FAILURES.get(rc, "exit %d" % rc)
        said = (result.get("report") or {}).get("message") or sentence
        result["msg"] = said or "innops exited %d and printed no message: see stderr" % rc
    elif doc is None:
        said = None
        result.update(failed=True, msg="innops exited 0 but printed no JSON report: see stderr")
    if result.get("failed"):
        result["msg"] = one_line(result["msg"])
        if not verbose:
            for key in DETAILS:
                if key != "stderr" or said:
                    result.pop(key, None)
    return result


def argument_spec():
    s = dict(type="str")
    b = dict(type="bool")
    i = dict(type="int")
    p = dict(type="path")
    return dict(
        procedure=dict(type="str", required=True,
                       choices=["inspect", "convert", "redo", "readonly", "recover", "run", "resume"]),
        binary=dict(type="str", default="innops"),
        chdir=p,
        socket=p, host=s, port=i, user=s, password=dict(type="str", no_log=True),
        defaults_file=p, defaults_extra_file=p, no_defaults=b,
        protocol=dict(type="str", choices=["TCP", "SOCKET"]),
        ssl_mode=dict(type="str", choices=["DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"]),
        ssl_ca=p, ssl_cert=p, ssl_key=p, sandbox=s, sandbox_root=p,
        service=s, start_cmd=s, stop_cmd=s, config_file=p,
        no_bench=b, bench_time=i, run_dir=p,
        tables=dict(type="list", elements="str"), all_myisam=b, strategy=s, online_above=s, cutover_lock_wait=i, drop_old_table=b, rollback=s,
        drop_kept=s, chunk_time=i, verify=dict(type="str", choices=["auto", "checksum", "hash"]),
        max_load=s, critical_load=s, restart=b,
        binlog=dict(type="str", choices=["replicate", "local"]), max_lag=i, critical_lag=i,
        replica=dict(type="list", elements="str"),
        size=s, advise=b, interval=i, offline=b,
        undo=b, min_redo=b, sql_read_only=b, no_preflush=b, preflush_timeout=i,
        out=p, copy_to=p, max_level=i, allow_level=i, drop_copy=b, verify_load=b, threads=i, mariadbd=p,
        datadir=p, in_place=b,
        playbook=p,
        sample=i,
    )


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        required_if=[("procedure", "run", ["playbook"]), ("procedure", "resume", ["run_dir"])],
        supports_check_mode=True,
    )
    params = module.params
    if module.check_mode and params["procedure"] == "resume":
        module.exit_json(changed=False, skipped=True,
                         msg="resume has no dry run: check mode does not continue %s" % params["run_dir"])
    binary = find_binary(params["binary"])
    if binary is None:
        module.fail_json(msg="the innops binary %r is neither on this host's PATH nor in %s: install it "
                             "(docs/fleet.md, install.yml) or give its path in binary"
                             % (params["binary"], " or ".join(INSTALL_DIRS)))
    elif not os.access(binary, os.X_OK):
        module.fail_json(msg="%s is not an executable innops binary: install innops there or fix binary" % binary)
    if params["chdir"] is not None and not os.path.isdir(params["chdir"]):
        module.fail_json(msg="chdir %s is not a directory on this host: create it or fix chdir" % params["chdir"])
    argv, env = build_command(binary, params, module.check_mode)
    rc, stdout, stderr = module.run_command(argv, cwd=params["chdir"], environ_update=env, check_rc=False)
    result = interpret(params, rc, stdout, stderr, verbose=module._verbosity >= 1)
    result["cmd"] = argv
    if result.get("run_dir") and not os.path.isabs(result["run_dir"]):
        # innops names it relative to the directory it ran in; the caller gets a path that works anywhere.
        result["run_dir"] = os.path.join(params["chdir"] or os.getcwd(), result["run_dir"])
    if result.get("failed"):
        result.pop("failed")
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
