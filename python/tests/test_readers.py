"""The run-folder and store readers on a replay run made by the binary."""

import os
import unittest

import _support as S
from ptxbench import RunFolder, Store, StoreError, find_runs


class RunFolderTest(unittest.TestCase):
    def test_replay_run(self):
        run = RunFolder(S.replay_run())
        self.assertEqual(run.run["schema"], "ptxbench.run/1")
        self.assertEqual(run.model, "replay")
        trajectories = run.trajectories()
        self.assertEqual(len(trajectories), 1)
        t = trajectories[0]
        self.assertEqual(t.task, run.run["tasks"][0])
        self.assertEqual(run.trajectory(t.id).id, t.id)
        self.assertTrue(t.turns)
        first = t.turn(1)
        self.assertEqual(first["status"], "COMPILE_ERROR")  # the replay's first kernel
        rec = t.evaluation(1)
        self.assertEqual(rec["status"], first["status"])
        self.assertEqual(rec["evaluation_id"], first["evaluation_id"])
        self.assertIn("extern \"C\"", t.kernel(1))
        self.assertEqual(len(list(t.evaluations())), len(run.evaluation_files()))
        with self.assertRaises(KeyError):
            t.turn(99)
        with self.assertRaises(KeyError):
            run.trajectory("nope")
        self.assertEqual([r.path for r in find_runs(os.path.dirname(run.path))], [run.path])

    def test_not_a_run_folder(self):
        with self.assertRaises(FileNotFoundError):
            RunFolder(S.TASKS)


class StoreTest(unittest.TestCase):
    def test_imported_run(self):
        run = RunFolder(S.replay_run())
        with Store(S.store_of_run()) as s:
            self.assertGreaterEqual(s.schema_version, 3)
            runs = s.runs()
            self.assertEqual(len(runs), 1)
            self.assertEqual(runs[0]["run"]["schema"], "ptxbench.run/1")
            self.assertEqual(runs[0]["model_name"], "replay")
            trajectories = s.trajectories(run_id=runs[0]["id"])
            self.assertEqual([t["task"] for t in trajectories], run.run["tasks"])
            turns = s.turns(run_id=runs[0]["id"])
            self.assertEqual([u["status"] for u in turns],
                             [u["status"] for u in run.trajectories()[0].turns])
            evaluations = s.evaluations()
            self.assertEqual(len(evaluations), len(run.evaluation_files()) + 1)  # + the eval record
            lone = [e for e in evaluations if e["run_id"] is None]
            self.assertEqual(len(lone), 1)
            self.assertEqual(lone[0]["task"], S.TASK)
            self.assertEqual(s.evaluation(lone[0]["evaluation_id"])["schema"], "ptxbench.evaluation/1")
            light = s.evaluations(status="COMPILE_ERROR", with_records=False)
            self.assertTrue(light)
            self.assertNotIn("record", light[0])
            self.assertEqual(s.jobs(), [])
            with self.assertRaises(KeyError):
                s.evaluation("nope")

    def test_not_a_store(self):
        import sqlite3
        path = os.path.join(S.scratch(), "other.db")
        sqlite3.connect(path).execute("CREATE TABLE IF NOT EXISTS t (x)").connection.close()
        with self.assertRaises(StoreError):
            Store(path)
        with self.assertRaises(FileNotFoundError):
            Store(os.path.join(S.scratch(), "none.db"))


if __name__ == "__main__":
    unittest.main()
