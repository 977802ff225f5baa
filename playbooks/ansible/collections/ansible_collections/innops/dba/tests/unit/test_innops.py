# -*- coding: utf-8 -*-
"""Unit tests of the module's two pure functions: the command line it builds and how it reads innops's output.

Run with the Python that has ansible-core (the module imports AnsibleModule):
    target/ansible-venv/bin/python -m unittest discover -s playbooks/ansible/collections/ansible_collections/innops/dba/tests/unit
tests/fleet.rs runs them, and runs the module for real against sandboxes.
"""

import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "plugins", "modules"))

import innops  # noqa: E402  (the module file, found on the path above)


def params(**kw):
    """The module's parameters as AnsibleModule fills them: every option present, None where unset."""
    p = {name: None for name in innops.argument_spec()}
    p["binary"] = "innops"
    p.update(kw)
    return p


def report(steps, changed, status="done", executed=True, message=None):
    doc = {"procedure": "redo", "target": "t", "server": "s", "status": status, "executed": executed,
           "notes": [], "steps": steps, "changed": changed, "bench": {"before": None, "after": None,
                                                                      "change": None}, "version": "0.1.0"}
    if executed:
        doc["run_dir"] = "innops-runs/x-redo"
    if message:
        doc["message"] = message
    return json.dumps(doc)


class BuildCommand(unittest.TestCase):
    def test_a_real_run_executes_without_a_prompt_and_check_mode_does_not(self):
        p = params(procedure="convert", all_myisam=True, socket="/run/s.sock")
        argv, _ = innops.build_command("/bin/innops", p, check_mode=False)
        self.assertEqual(argv, ["/bin/innops", "convert", "--socket", "/run/s.sock", "--all-myisam",
                                "--execute", "--yes", "--format", "json"])
        argv, _ = innops.build_command("/bin/innops", p, check_mode=True)
        self.assertNotIn("--execute", argv)
        self.assertNotIn("--yes", argv)

    def test_the_password_goes_to_the_environment_never_to_the_command_line(self):
        p = params(procedure="inspect", host="db1", port=3306, user="dba", password="s3cr3t")
        argv, env = innops.build_command("innops", p, check_mode=False)
        self.assertEqual(env, {"MYSQL_PWD": "s3cr3t"})
        self.assertFalse(any("s3cr3t" in a for a in argv), argv)
        self.assertEqual(argv[argv.index("--port") + 1], "3306")

    def test_read_only_procedures_never_get_execute(self):
        for p in [params(procedure="inspect", sample=0), params(procedure="redo", advise=True, interval=5)]:
            argv, _ = innops.build_command("innops", p, check_mode=False)
            self.assertNotIn("--execute", argv)
            self.assertTrue(innops.is_read_only(p))
        self.assertFalse(innops.is_read_only(params(procedure="redo", size="1G")))

    def test_unset_and_false_options_are_left_to_innops_defaults(self):
        p = params(procedure="readonly", undo=False, sql_read_only=True, no_bench=None)
        argv, _ = innops.build_command("innops", p, check_mode=True)
        self.assertEqual(argv, ["innops", "readonly", "--sql-read-only", "--format", "json"])

    def test_lists_are_comma_separated_and_positionals_placed(self):
        argv, _ = innops.build_command("innops", params(procedure="convert", tables=["shop.a", "shop.*"]), True)
        self.assertEqual(argv[2:4], ["--tables", "shop.a,shop.*"])
        argv, _ = innops.build_command("innops", params(procedure="convert", all_myisam=True, verify="hash"), True)
        self.assertEqual(argv[2:5], ["--all-myisam", "--verify", "hash"])
        argv, _ = innops.build_command(
            "innops", params(procedure="convert", all_myisam=True, binlog="local", max_lag=2,
                             replica=["10.0.0.2:3306", "h=db3,P=3306,F=/etc/r.cnf"]), True)
        self.assertEqual(argv[2:11], ["--all-myisam", "--binlog", "local", "--max-lag", "2",
                                      "--replica", "10.0.0.2:3306", "--replica", "h=db3,P=3306,F=/etc/r.cnf"])
        argv, _ = innops.build_command("innops", params(procedure="run", playbook="/p/pb.toml"), True)
        self.assertEqual(argv[:3], ["innops", "run", "/p/pb.toml"])
        argv, _ = innops.build_command("innops", params(procedure="resume", run_dir="/r/1", service="systemd:m"),
                                       False)
        self.assertEqual(argv, ["innops", "resume", "--service", "systemd:m", "/r/1", "--yes", "--format", "json"])
        with self.assertRaises(ValueError):
            innops.build_command("innops", params(procedure="resume", run_dir="/r/1"), True)


class Interpret(unittest.TestCase):
    def test_changed_is_innops_changed_and_lists_the_steps_that_acted(self):
        steps = [{"id": "preflight", "status": "done", "acts": False},
                 {"id": "resize", "status": "done", "acts": True},
                 {"id": "persist", "status": "skipped", "acts": False}]
        r = innops.interpret(params(procedure="redo", size="1G"), 0, report(steps, True), "")
        self.assertTrue(r["changed"])
        self.assertNotIn("failed", r)
        self.assertEqual(r["acted"], ["resize"])
        self.assertEqual(r["run_dir"], "innops-runs/x-redo")
        self.assertEqual(r["report"]["status"], "done")

    def test_a_rerun_where_every_step_was_already_done_is_not_a_change(self):
        steps = [{"id": "resize", "status": "skipped", "acts": False}]
        r = innops.interpret(params(procedure="redo", size="1G"), 0, report(steps, False), "")
        self.assertFalse(r["changed"])
        self.assertEqual(r["acted"], [])
        self.assertIn("nothing to change", r["msg"])

    def test_each_failing_exit_code_fails_with_innops_sentence(self):
        msg = "step preflight:shop.bad refused: shop.bad: fix it"
        r = innops.interpret(params(procedure="convert"), 1,
                             report([], False, status="refused", message=msg), "innops: " + msg + "\n")
        self.assertEqual((r["failed"], r["failure"], r["rc"], r["msg"]), (True, "refused", 1, msg))
        r = innops.interpret(params(procedure="redo", size="3X"), 2,
                             json.dumps({"error": "'3X' is not a size: write bytes", "exit": 2}),
                             "innops: '3X' is not a size: write bytes\n")
        self.assertEqual((r["failed"], r["failure"], r["msg"]), (True, "bad_input", "'3X' is not a size: write bytes"))
        self.assertNotIn("report", r)
        r = innops.interpret(params(procedure="redo", size="1G"), 3,
                             report([{"id": "persist", "status": "failed", "acts": True}], True, status="failed",
                                    message="step persist post-check failed: x"), "")
        self.assertEqual((r["failed"], r["failure"], r["changed"]), (True, "post_check_failed", True))

    def test_a_failure_is_one_line_of_innops_sentence_and_leaves_the_report_to_verbose(self):
        msg = "1 of 2 would be refused, every other one would go on: shop.bad: AUTO_INCREMENT column `id` is\n  not the first column of any index"
        steps = [{"id": "preflight", "status": "refused", "acts": False, "checks": ["x" * 9000]}]
        out = report(steps, False, status="refused", executed=False, message=msg)
        r = innops.interpret(params(procedure="convert"), 1, out, "step lines\ninnops: " + msg + "\n")
        self.assertEqual(r["msg"], "1 of 2 would be refused, every other one would go on: shop.bad: AUTO_INCREMENT "
                                   "column `id` is not the first column of any index")
        for key in ("report", "bench", "stderr"):
            self.assertNotIn(key, r)
        self.assertEqual((r["failure"], r["status"], r["acted"]), ("refused", "refused", []))
        self.assertLess(len(json.dumps(r)), 1000)
        r = innops.interpret(params(procedure="convert"), 1, out, "innops: " + msg + "\n", verbose=True)
        self.assertEqual((r["report"]["status"], "\n" in r["msg"]), ("refused", False))
        self.assertIn("innops: 1 of 2 would be refused", r["stderr"])
        # Without innops's sentence, stderr is the only account: it stays.
        r = innops.interpret(params(procedure="convert"), 101, "", "thread 'main' panicked\n")
        self.assertEqual(r["stderr"], "thread 'main' panicked\n")

    def test_output_that_is_not_innops_json_fails(self):
        r = innops.interpret(params(procedure="convert"), 0, "not json", "")
        self.assertTrue(r["failed"])
        r = innops.interpret(params(procedure="convert"), 101, "", "thread 'main' panicked\n")
        self.assertEqual((r["failed"], r["failure"]), (True, "exit 101"))

    def test_a_report_without_changed_is_refused_rather_than_guessed(self):
        doc = json.loads(report([{"id": "resize", "status": "done"}], True))
        del doc["changed"]
        r = innops.interpret(params(procedure="redo", size="1G"), 0, json.dumps(doc), "")
        self.assertTrue(r["failed"])
        self.assertIn("does not report whether a step acted", r["msg"])

    def test_advice_and_inspection_never_change_anything(self):
        advice = {"recommended_size": 100663296, "recommended": "96M", "command": None}
        r = innops.interpret(params(procedure="redo", advise=True), 0, json.dumps(advice), "")
        self.assertEqual((r["changed"], r["advice"]["recommended"]), (False, "96M"))
        self.assertIn("enough", r["msg"])
        r = innops.interpret(params(procedure="inspect"), 0, json.dumps({"target": "t", "hazards": []}), "")
        self.assertEqual((r["changed"], r["inspection"]["hazards"]), (False, []))


class FindBinary(unittest.TestCase):
    def setUp(self):
        self.path = os.environ.get("PATH")
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        os.environ["PATH"] = self.path
        shutil.rmtree(self.dir)

    def test_a_name_off_path_is_found_where_the_packages_install(self):
        # A connection whose PATH has none of the usual directories: /usr/bin (the .deb and .rpm's place) is
        # searched anyway. sh stands for innops, as every host has /usr/bin/sh.
        os.environ["PATH"] = self.dir
        self.assertIn(innops.find_binary("sh"), ["/usr/bin/sh", "/usr/local/bin/sh"])
        self.assertIsNone(innops.find_binary("innops-none-such"))

    def test_path_comes_before_the_install_directories(self):
        mine = os.path.join(self.dir, "sh")
        with open(mine, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(mine, 0o755)
        os.environ["PATH"] = self.dir
        self.assertEqual(innops.find_binary("sh"), mine)

    def test_a_path_is_taken_as_given(self):
        self.assertEqual(innops.find_binary("/opt/innops/bin/innops"), "/opt/innops/bin/innops")


if __name__ == "__main__":
    unittest.main()
