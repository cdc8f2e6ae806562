"""`ptxbench run --agent-command` (issue 39): a coding agent in the loop's seat. A scripted
agent (scripted_agent.py) does what a coding CLI does with the workspace: starts the MCP server
its .mcp.json names and calls evaluate_kernel. Each call must become a turn of a trajectory in
the loop's own format, with the run's budgets enforced from outside the agent."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import _support as S

AGENT = os.path.join(S.HERE, "scripted_agent.py")


def trajectory(run):
    folder = os.path.join(run, "trajectories")
    (name,) = os.listdir(folder)
    t = S.load(os.path.join(folder, name))
    t["id"] = name[:-len(".json")]
    return t


class AgentRunTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        S.binary()
        cls.service = S.StandInService()
        # Not the shared scratch folder: other tests count the runs found under it.
        cls.runs = tempfile.mkdtemp(prefix="ptxbench-agent-runs-")

    @classmethod
    def tearDownClass(cls):
        cls.service.stop()
        shutil.rmtree(cls.runs, True)

    def run_agent(self, scenario, *extra, evaluator=None, ok=(0,), name=""):
        out = os.path.join(self.runs, self._testMethodName + name)
        self.log = os.path.join(S.scratch(), "agent-log-%s.json" % self._testMethodName)
        env = dict(os.environ, SCRIPTED_AGENT_LOG=self.log, PTXBENCH_CACHE=S.cache_dir())
        command = "%s %s %s %s" % (sys.executable, AGENT, S.KERNEL, scenario)
        # Confined, the agent reads the system and its workspace: its script, its kernel and
        # its interpreter are named, and its log's folder is writable.
        reads = [os.path.dirname(AGENT), S.KERNEL, sys.prefix, sys.base_prefix]
        confinement = [a for r in reads for a in ("--agent-read", r)]
        if "--agent-unconfined" not in extra:
            confinement += ["--agent-write", os.path.dirname(self.log)]
        args = [S.binary(), "run", "--agent-command", command, "--agent-name", "scripted",
                "--task", S.TASK, "--workload", S.WORKLOAD, "--tasks-dir", S.TASKS,
                "--evaluator", evaluator or self.service.url, "--out", out, "--quiet"
                ] + confinement + list(extra)
        p = subprocess.run(args, cwd=S.REPO, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=600)
        self.assertIn(p.returncode, ok, p.stdout[-4000:])
        return out

    def seen(self):
        return S.load(self.log)

    def test_each_call_is_a_turn_until_the_budget_ends_the_run(self):
        before = len(self.service.submitted)
        run = self.run_agent("play", "--turns", "2")
        t = trajectory(run)
        self.assertEqual(t["info"]["exit_status"], "turn_limit")
        turns = t["info"]["turns"]
        self.assertEqual([x["outcome"] for x in turns], ["incorrect", "incorrect"])
        with open(S.KERNEL, encoding="utf-8") as f:
            kernel = f.read()
        with open(os.path.join(run, turns[0]["kernel_file"]), encoding="utf-8") as f:
            self.assertEqual(f.read(), kernel)  # the file as handed in, no extraction
        # What reached the service: the workspace's file on the run's task, once per turn.
        sent = self.service.submitted[before:]
        self.assertEqual([(d["task"], d["source"] == kernel) for d in sent], [(S.TASK, True)] * 2)
        seen = self.seen()
        # The workspace: the task, the rules, the MCP configurations; nothing of the harness.
        self.assertEqual(os.path.realpath(seen["cwd"]),
                         os.path.realpath(os.path.join(run, "workspaces", t["id"])))
        for name in ("AGENTS.md", "CLAUDE.md", "TASK.md", "PROMPT.md", "kernel.cu", ".mcp.json",
                     ".codex", ".tmp"):  # .tmp: its TMPDIR, inside what it may write
            self.assertIn(name, seen["files"])
        self.assertEqual(len(seen["files"]), 8, seen["files"])
        self.assertEqual(seen["tools"]["result"]["tools"][0]["name"], "evaluate_kernel")
        self.assertIn("128", seen["task"]["result"]["contents"][0]["text"])
        self.assertEqual(seen["malformed"]["error"]["code"], -32700)  # and the server went on
        self.assertTrue(seen["concurrent"]["isError"])
        self.assertIn("in flight", seen["concurrent"]["content"][0]["text"])
        first, last = seen["answers"][0], seen["answers"][-1]
        self.assertEqual(first["structuredContent"]["outcome"], "incorrect")
        self.assertEqual(first["structuredContent"]["evaluations_left"], 1)
        self.assertIn("The run is over for this task (turn_limit)", last["content"][0]["text"])
        self.assertEqual(len(seen["answers"]), 2)
        # The trajectory's token is worthless after the run: its socket is gone.
        workspace = os.path.join(run, "workspaces", t["id"])
        config = S.load(os.path.join(workspace, ".mcp.json"))["mcpServers"]["ptxbench"]
        with socket.socket(socket.AF_UNIX) as s:
            with self.assertRaises(OSError):
                s.connect(config["args"][-1])
        # The report reads the run as it reads a model's.
        report = os.path.join(S.scratch(), "agent-report.json")
        S.run_bin("report", "--runs", run, "--json", report, "--no-published")
        self.assertIn("scripted", json.dumps(S.load(report)))

    def test_an_agent_that_exits_ends_its_trajectory_without_a_turn(self):
        run = self.run_agent("quit", "--turns", "3")
        t = trajectory(run)
        self.assertEqual(t["info"]["exit_status"], "agent_exit")
        self.assertEqual([x["outcome"] for x in t["info"]["turns"]], ["incorrect"])
        self.assertEqual(self.seen()["answers"][0]["structuredContent"]["evaluations_left"], 2)
        # Finished: a resume with the options from run.json keeps it as it is.
        p = subprocess.run([S.binary(), "run", "--resume", "--out", run, "--evaluator",
                            self.service.url], cwd=S.REPO,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("1 finished", p.stdout)

    def test_the_wall_budget_stops_an_agent_that_never_evaluates(self):
        run = self.run_agent("sleep", "--agent-wall", "2")
        t = trajectory(run)
        self.assertEqual(t["info"]["exit_status"], "wall_limit")
        self.assertEqual(t["info"]["turns"], [])

    def test_the_token_budget_stops_an_agent_by_its_reported_usage(self):
        # 3,500 tokens a second as its CLI reports them; a budget of 10,000 ends it in ~3 s.
        run = self.run_agent("spend", "--agent-tokens", "10000", "--agent-wall", "120")
        t = trajectory(run)
        self.assertEqual(t["info"]["exit_status"], "token_limit")
        self.assertEqual(t["info"]["turns"], [])
        model = S.load(os.path.join(run, "run.json"))["model"]
        self.assertEqual(model["token_budget"], 10000)

    def test_ctrl_c_ends_a_turn_that_waits_for_the_agent(self):
        # The agent would sleep for an hour; the run's stop must not wait for its wall time.
        out = os.path.join(self.runs, "interrupted")
        self.log = os.path.join(S.scratch(), "agent-log-interrupted.json")
        env = dict(os.environ, SCRIPTED_AGENT_LOG=self.log, PTXBENCH_CACHE=S.cache_dir())
        command = "%s %s %s sleep" % (sys.executable, AGENT, S.KERNEL)
        reads = [os.path.dirname(AGENT), S.KERNEL, sys.prefix, sys.base_prefix]
        args = [S.binary(), "run", "--agent-command", command, "--task", S.TASK,
                "--workload", S.WORKLOAD, "--tasks-dir", S.TASKS, "--evaluator",
                self.service.url, "--out", out, "--quiet", "--agent-wall", "3600",
                "--agent-write", os.path.dirname(self.log)]
        args += [a for r in reads for a in ("--agent-read", r)]
        p = subprocess.Popen(args, cwd=S.REPO, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 60
        while not os.path.exists(self.log) and time.monotonic() < deadline:
            time.sleep(0.1)  # the agent is up and sleeping
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        output, _ = p.communicate(timeout=120)
        self.assertLess(time.monotonic() - t0, 60, output)
        t = trajectory(out)
        # Not the agent's turn and not finished: --resume starts the agent again.
        self.assertEqual(t["info"]["exit_status"], "infra_error", output)
        self.assertEqual(t["info"]["turns"][0]["outcome"], "infra")
        self.assertFalse(t["info"]["turns"][0]["spent"])

    def test_the_agent_reaches_its_workspace_and_not_the_run_folder(self):
        run = self.run_agent("snoop")
        tried = self.seen()["snoop"]
        for denied in ("read_run_json", "list_workspaces", "write_evaluation"):
            self.assertTrue(tried[denied].startswith("denied"), tried)
        self.assertEqual(tried["write_workspace"], "allowed", tried)
        self.assertEqual(tried["write_tmpdir"], "allowed", tried)
        self.assertFalse(os.path.exists(os.path.join(run, "evaluations", "forged.json")))
        model = S.load(os.path.join(run, "run.json"))["model"]
        self.assertTrue(model["confinement"]["confined"])
        # The control: unconfined (a choice the run's identity records), the same agent reads
        # the run folder, so the test above can fail.
        run = self.run_agent("snoop", "--agent-unconfined", name="-unconfined")
        self.assertEqual(self.seen()["snoop"]["read_run_json"], "allowed")
        self.assertFalse(S.load(os.path.join(run, "run.json"))["model"]["confinement"]["confined"])

    def test_the_agent_cannot_signal_the_run(self):
        # An agent that stops the run (Ctrl-C's signal) turns its pending turn into the
        # harness's failure; Landlock's signal scope (ABI 6 and later) keeps it from that.
        doctor = json.loads(subprocess.run([S.binary(), "doctor", "--json"], stdout=subprocess.PIPE,
                                           stderr=subprocess.DEVNULL, text=True).stdout)
        abi = doctor.get("sandbox landlock", {}).get("version", "abi 0")
        if int(abi.split()[-1]) < 6:
            self.skipTest("Landlock on this machine does not scope signals (%s)" % abi)
        run = self.run_agent("signal")
        self.assertTrue(self.seen()["signal"].startswith("denied"), self.seen())
        self.assertEqual(trajectory(run)["info"]["exit_status"], "agent_exit")
        # The control: unconfined, the same agent stops the run.
        run = self.run_agent("signal", "--agent-unconfined", name="-unconfined", ok=(0, 3, 130))
        self.assertEqual(self.seen()["signal"], "allowed")
        self.assertEqual(trajectory(run)["info"]["exit_status"], "infra_error")

    def test_a_readable_path_that_holds_the_run_folder_is_refused(self):
        out = os.path.join(self.runs, "refused")
        p = subprocess.run([S.binary(), "run", "--agent-command", "true", "--agent-read",
                            self.runs, "--task", S.TASK, "--workload", S.WORKLOAD,
                            "--tasks-dir", S.TASKS, "--evaluator", self.service.url,
                            "--out", out, "--quiet"], cwd=S.REPO, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn("holds the run folder", p.stdout)

    def test_without_a_gpu_the_turn_is_the_machines(self):
        server = S.Server(token="agent-run-token")
        try:
            os.environ["PTXBENCH_SERVE_TOKEN"] = server.token
            run = self.run_agent("play", "--turns", "2", evaluator=server.url, ok=(0, 3))
        finally:
            os.environ.pop("PTXBENCH_SERVE_TOKEN", None)
            server.stop()
        t = trajectory(run)
        self.assertEqual(t["info"]["exit_status"], "infra_error")  # --resume retries it
        (turn,) = t["info"]["turns"]
        self.assertEqual(turn["outcome"], "infra")
        self.assertFalse(turn["spent"])
        last = self.seen()["answers"][-1]["content"][0]["text"]
        self.assertIn("could not judge this kernel (not your fault", last)


if __name__ == "__main__":
    unittest.main()
