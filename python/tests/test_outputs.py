"""Every schema validates real outputs of the binary, and rejects broken copies of them."""

import copy
import glob
import os
import unittest

import _support as S
from ptxbench import schema


class OutputsMatchSchemasTest(unittest.TestCase):
    def assertValid(self, doc, name, what):
        errs = schema.validate(doc, name)
        self.assertEqual(errs, [], "%s does not match %s" % (what, name))

    def assertInvalid(self, doc, name, needle=""):
        errs = schema.validate(doc, name)
        self.assertTrue(errs, "a broken %s was accepted" % name)
        if needle:
            self.assertIn(needle, " ".join(errs))

    def test_eval_record(self):
        rec = S.load(S.eval_record())
        self.assertValid(rec, "evaluation-record", "eval --json")
        self.assertEqual(rec["task"]["definition"], S.TASK)
        self.assertEqual(rec["task"]["axes"]["M"], 93)
        broken = copy.deepcopy(rec)
        broken["status"] = "FAILED"
        self.assertInvalid(broken, "evaluation-record", "FAILED")
        broken = copy.deepcopy(rec)
        del broken["correctness"]
        self.assertInvalid(broken, "evaluation-record", "correctness")
        broken = copy.deepcopy(rec)
        broken["candidate"]["bytes"] = "2470"
        self.assertInvalid(broken, "evaluation-record")
        broken = copy.deepcopy(rec)
        broken["schema"] = "ptxbench.evaluation/2"
        self.assertInvalid(broken, "evaluation-record")

    def test_run_folder(self):
        run = S.replay_run()
        self.assertValid(S.load(os.path.join(run, "run.json")), "run", "run.json")
        trajectories = glob.glob(os.path.join(run, "trajectories", "*.json"))
        records = glob.glob(os.path.join(run, "evaluations", "**", "*.json"), recursive=True)
        self.assertTrue(trajectories)
        self.assertTrue(records)
        for p in trajectories:
            self.assertValid(S.load(p), "trajectory", p)
        for p in records:
            self.assertValid(S.load(p), "evaluation-record", p)
        t = S.load(trajectories[0])
        broken = copy.deepcopy(t)
        broken["info"]["turns"][0]["outcome"] = "great"
        self.assertInvalid(broken, "trajectory", "great")
        broken = copy.deepcopy(t)
        broken["trajectory_format"] = "mini-swe-agent-2"
        self.assertInvalid(broken, "trajectory")
        r = S.load(os.path.join(run, "run.json"))
        broken = dict(r, concurrency=0)
        self.assertInvalid(broken, "run", "less than")
        broken = {k: v for k, v in r.items() if k != "tasks"}
        self.assertInvalid(broken, "run", "tasks")

    def test_report(self):
        rep = S.load(S.report_json())
        self.assertTrue(rep, "the report has no group")
        self.assertValid(rep, "report", "report --json")
        broken = copy.deepcopy(rep)
        broken[0]["by_turn_limit"][0]["correct"]["share"] = "none"
        self.assertInvalid(broken, "report", "share")
        self.assertInvalid({"groups": rep}, "report")

    def test_records_from_the_gpu_runs_in_docs(self):
        # PASSED records from the H200 (docs/gpu-runs): the layers a machine without a GPU
        # never writes (correctness, timing, dynamic instructions) are checked here.
        found = 0
        for p in glob.glob(os.path.join(S.REPO, "docs", "gpu-runs", "**", "*.json"), recursive=True):
            doc = S.load(p)
            kind = {"ptxbench.evaluation/1": "evaluation-record",
                    "ptxbench.run/1": "run"}.get(doc.get("schema")) if isinstance(doc, dict) else None
            if isinstance(doc, dict) and "trajectory_format" in doc:
                kind = "trajectory"
            if kind:
                found += 1
                self.assertValid(doc, kind, p)
        if not found:
            self.skipTest("no records under docs/gpu-runs")


if __name__ == "__main__":
    unittest.main()
