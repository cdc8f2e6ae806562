"""`ptxbench mcp` (issue 39) driven as a coding agent's CLI drives it: JSON-RPC 2.0 lines on its
standard input and output, against a real `ptxbench serve`. Without a GPU every evaluation ends
INFRA_ERROR no_gpu, which must come back as the machine's (outcome infra, the turn given back),
never as the candidate's."""

import json
import os
import select
import shutil
import subprocess
import unittest

import _support as S


class McpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        S.binary()  # skips when PTXBENCH_BIN is unset
        cls.server = S.Server(token="mcp-test-token")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
        self.start(self.server.url, self.server.token)

    def start(self, url, token):
        self.workspace = os.path.join(S.scratch(), "mcp-workspace-%s" % self._testMethodName)
        os.makedirs(self.workspace, exist_ok=True)
        shutil.copy(S.KERNEL, os.path.join(self.workspace, "kernel.cu"))
        env = dict(os.environ, PTXBENCH_SERVE_TOKEN=token, PTXBENCH_CACHE=S.cache_dir())
        self.proc = subprocess.Popen(
            [S.binary(), "mcp", "--evaluator", url, "--task", S.TASK, "--workload",
             S.WORKLOAD, "--kernel", "kernel.cu", "--max-evaluations", "2"],
            cwd=self.workspace, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self.next_id = 0

    def tearDown(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f and not f.closed:
                f.close()

    def send(self, method, params=None, notification=False):
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if not notification:
            self.next_id += 1
            message["id"] = self.next_id
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        return message.get("id")

    def answer(self, timeout=300):
        # Bounded: a server that does not answer fails the test instead of hanging it.
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.proc.kill()
            self.fail("no answer within %d s; stderr:\n%s" % (timeout, self.proc.stderr.read()))
        line = self.proc.stdout.readline()
        if not line:  # its stderr is read only then: the read ends when the process has
            self.fail("the server closed its output; stderr:\n" + self.proc.stderr.read())
        return json.loads(line)

    def call(self, method, params=None):
        id_ = self.send(method, params)
        a = self.answer()
        self.assertEqual(a["id"], id_, a)
        return a

    def test_a_session(self):
        init = self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "test", "version": "0"}})
        init = init["result"]
        self.assertEqual(init["protocolVersion"], "2025-06-18")
        self.assertIn("tools", init["capabilities"])
        self.send("notifications/initialized", notification=True)  # never answered

        tools = self.call("tools/list")["result"]["tools"]
        self.assertEqual([t["name"] for t in tools], ["evaluate_kernel"])
        self.assertEqual(tools[0]["inputSchema"]["properties"], {})

        # A malformed line gets JSON-RPC's parse error, and the server goes on.
        self.proc.stdin.write("{not json\n")
        self.proc.stdin.flush()
        bad = self.answer()
        self.assertEqual(bad["error"]["code"], -32700)
        self.assertIsNone(bad["id"])
        self.assertEqual(self.call("ping")["result"], {})
        self.assertEqual(self.call("no/such/method")["error"]["code"], -32601)

        statement = self.call("resources/read", {"uri": "ptxbench://task"})["result"]
        self.assertIn(S.TASK, statement["contents"][0]["text"])

        # The tool takes no arguments: the agent cannot pick another task.
        other = self.call("tools/call", {"name": "evaluate_kernel",
                                         "arguments": {"task": "gemm_n7168_k5120"}})["result"]
        self.assertTrue(other["isError"])
        self.assertIn("takes no arguments", other["content"][0]["text"])

        # Two calls at once: the second is refused while the first is in flight; the first
        # ends no_gpu here, the machine's verdict, and its turn is given back.
        first = self.send("tools/call", {"name": "evaluate_kernel", "arguments": {}})
        second = self.send("tools/call", {"name": "evaluate_kernel", "arguments": {}})
        answers = {a["id"]: a for a in (self.answer(), self.answer())}
        refused = answers[second]["result"]
        self.assertTrue(refused["isError"])
        self.assertIn("in flight", refused["content"][0]["text"])
        judged = answers[first]["result"]
        summary = judged["structuredContent"]
        self.assertEqual(summary["status"], "INFRA_ERROR", judged)
        self.assertEqual(summary["outcome"], "infra")
        self.assertEqual(summary["evaluations_left"], 2)
        self.assertTrue(judged["isError"])
        self.assertIn("INFRA_ERROR", judged["content"][0]["text"])

        # The end of input ends the server, which says how many evaluations counted.
        self.proc.stdin.close()
        self.assertEqual(self.proc.wait(60), 0)
        self.assertIn("0 evaluations", self.proc.stderr.read())

    def test_an_unreadable_kernel_is_not_a_turn(self):
        os.remove(os.path.join(self.workspace, "kernel.cu"))
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "test", "version": "0"}})
        r = self.call("tools/call", {"name": "evaluate_kernel", "arguments": {}})["result"]
        self.assertTrue(r["isError"])
        self.assertIn("not counted", r["content"][0]["text"])


class McpBudgetTest(McpTest):
    """Against a stand-in service that judges every kernel INCORRECT (the candidate's verdict,
    which counts): the run's budget of two evaluations ends it."""

    @classmethod
    def setUpClass(cls):
        S.binary()
        cls.service = S.StandInService()
        cls.submitted = cls.service.submitted

    @classmethod
    def tearDownClass(cls):
        cls.service.stop()

    def setUp(self):
        self.start(self.service.url, "unused")

    test_a_session = None  # the real service's session is McpTest's
    test_an_unreadable_kernel_is_not_a_turn = None

    def test_the_budget_ends_the_run(self):
        args = {"name": "evaluate_kernel", "arguments": {}}
        left = []
        for _ in range(2):
            r = self.call("tools/call", args)["result"]
            self.assertFalse(r["isError"], r)
            self.assertEqual(r["structuredContent"]["status"], "INCORRECT")
            self.assertEqual(r["structuredContent"]["outcome"], "incorrect")
            left.append(r["structuredContent"]["evaluations_left"])
        self.assertEqual(left, [1, 0])
        spent = self.call("tools/call", args)["result"]
        self.assertTrue(spent["isError"])
        self.assertIn("budget of 2 evaluations is spent", spent["content"][0]["text"])
        # What reached the service: the workspace's file on the run's own task, twice.
        with open(S.KERNEL, encoding="utf-8") as f:
            source = f.read()
        self.assertEqual([(d["task"], d["source"] == source) for d in self.submitted],
                         [(S.TASK, True)] * 2)
        self.assertEqual(len({d["workload"] for d in self.submitted}), 1)  # M=93's id, fixed
        self.proc.stdin.close()
        self.assertEqual(self.proc.wait(60), 0)
        self.assertIn("2 evaluations", self.proc.stderr.read())


if __name__ == "__main__":
    unittest.main()
