"""The client against a real `ptxbench serve` (a token, workers; without a GPU they skip the GPU
layers). Every answer is checked against schemas/openapi.json."""

import http.server
import json
import os
import threading
import unittest

import _support as S
from ptxbench import Client, HTTPError, Store, Unreachable, WaitTimeout, schema


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        S.binary()  # skips when PTXBENCH_BIN is unset
        cls.server = S.Server(token="py-client-token")
        cls.client = Client(cls.server.url, token=cls.server.token, timeout=30)
        cls.api = schema.load("openapi")
        with open(S.KERNEL, encoding="utf-8") as f:
            cls.source = f.read()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def assertMatches(self, doc, component):
        s = {"$ref": "#/components/schemas/" + component} if not component.endswith(".json") \
            else {"$ref": component}
        errs = schema.Validator(self.api).errors(doc, s)
        self.assertEqual(errs, [], "%s: %s" % (component, errs))

    def test_health(self):
        h = self.client.health()
        self.assertMatches(h, "Health")
        self.assertEqual(h["status"], "ok")

    def test_tasks(self):
        tasks = self.client.tasks()
        for t in tasks:
            self.assertMatches(t, "Task")
        self.assertIn(S.TASK, [t["name"] for t in tasks])
        one = self.client.task(S.TASK)
        self.assertMatches(one, "TaskWithWorkloads")
        self.assertIn(93, [w["axes"]["M"] for w in one["workloads"]])
        with self.assertRaises(HTTPError) as e:
            self.client.task("no_such_task")
        self.assertEqual(e.exception.status, 404)

    def test_submit_wait_record(self):
        sub = self.client.submit(self.source, S.TASK, workload=S.WORKLOAD,
                                 options={"trials": 1, "sanitize": "never"}, tag={"test": "py"})
        self.assertMatches(sub, "Submitted")
        job = self.client.job(sub["id"])
        self.assertMatches(job, "Job")
        self.assertEqual(job["task"], S.TASK)
        rec = self.client.wait(sub["id"], timeout=300, poll=5)
        self.assertEqual(schema.validate(rec, "evaluation-record"), [])
        self.assertMatches(rec, "evaluation-record.schema.json")
        self.assertEqual(rec["service"]["job_id"], sub["id"])
        self.assertEqual(rec["task"]["axes"]["M"], 93)
        self.assertEqual(self.client.record(sub["id"]), rec)
        self.assertMatches(self.client.job(sub["id"]), "Job")
        self.assertIn(self.client.job(sub["id"])["state"], ("done", "failed"))
        # The store the service writes, read back.
        with Store(self.server.db) as s:
            jobs = {j["id"]: j for j in s.jobs()}
            self.assertIn(sub["id"], jobs)
            self.assertEqual(jobs[sub["id"]]["result"]["status"], rec["status"])
            self.assertEqual(jobs[sub["id"]]["request"]["task"], S.TASK)
            self.assertTrue(s.workers())

    def test_pending_and_wait_timeout(self):
        # A queued job: result() without waiting answers None (202), wait() gives up on time.
        sub = self.client.submit(self.source, S.TASK, workload=S.WORKLOAD,
                                 options={"trials": 1, "sanitize": "never"})
        rec = self.client.result(sub["id"])
        if rec is None:
            with self.assertRaises(WaitTimeout):
                self.client.wait(sub["id"], timeout=0.001)
        self.assertIsNotNone(self.client.wait(sub["id"], timeout=300, poll=5))

    def test_bad_requests(self):
        with self.assertRaises(HTTPError) as e:
            self.client.submit(self.source, "no_such_task")
        self.assertEqual(e.exception.status, 400)
        self.assertIn("no_such_task", e.exception.message)
        self.assertMatches(e.exception.body, "Error")
        with self.assertRaises(HTTPError) as e:
            self.client.submit(self.source, S.TASK, options={"trials": 0})
        self.assertEqual(e.exception.status, 400)
        with self.assertRaises(HTTPError) as e:
            self.client.submit("", S.TASK)
        self.assertEqual(e.exception.status, 400)
        with self.assertRaises(HTTPError) as e:
            self.client.job("0" * 32)
        self.assertEqual(e.exception.status, 404)
        with self.assertRaises(HTTPError) as e:
            self.client.result("not-an-id")
        self.assertEqual(e.exception.status, 404)

    def test_token(self):
        with self.assertRaises(HTTPError) as e:
            Client(self.server.url, token="wrong").health()
        self.assertEqual(e.exception.status, 401)
        old = os.environ.get("PTXBENCH_SERVE_TOKEN")
        os.environ["PTXBENCH_SERVE_TOKEN"] = self.server.token
        try:
            self.assertEqual(Client(self.server.url).health()["status"], "ok")
        finally:
            if old is None:
                del os.environ["PTXBENCH_SERVE_TOKEN"]
            else:
                os.environ["PTXBENCH_SERVE_TOKEN"] = old

    def test_unreachable(self):
        with self.assertRaises(Unreachable):
            Client("http://127.0.0.1:%d" % S.free_port(), timeout=5).health()


class NoWorkersTest(unittest.TestCase):
    """--no-workers: jobs stay queued; the pending answer and the job's state say so."""

    def test_queued(self):
        S.binary()
        server = S.Server(token="t2", workers=False)
        try:
            c = Client(server.url, token="t2")
            sub = c.submit("extern \"C\" int run() { return 0; }\n", S.TASK)
            self.assertIsNone(c.result(sub["id"], wait=0.2))
            job = c.job(sub["id"])
            self.assertEqual(job["state"], "queued")
            self.assertEqual(c.health()["queue"]["queued"], 1)
            with self.assertRaises(WaitTimeout) as e:
                c.wait(sub["id"], timeout=0.5, poll=0.2)
            self.assertEqual(e.exception.state, "queued")
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main()


class OutageTest(unittest.TestCase):
    """A storage outage (503 with Retry-After: nothing was queued) is waited out, as
    `ptxbench submit` does; a 503 without it, or past `outage_wait`, is raised (issue 35)."""

    def serve(self, answers):
        calls = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                status, headers = answers[min(len(calls), len(answers) - 1)]
                calls.append(self.path)
                body = json.dumps({"ok": True} if status == 200 else {"error": "storage"}).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.shutdown)
        return "http://127.0.0.1:%d" % server.server_address[1], calls

    def test_a_short_outage_is_waited_out(self):
        url, calls = self.serve([(503, {"Retry-After": "0"}), (503, {"Retry-After": "0"}),
                                 (200, {})])
        self.assertEqual(Client(url, timeout=5).health(), {"ok": True})
        self.assertEqual(len(calls), 3)

    def test_a_503_without_retry_after_or_past_the_wait_is_raised(self):
        url, calls = self.serve([(503, {})])
        with self.assertRaises(HTTPError) as e:
            Client(url, timeout=5).health()
        self.assertEqual(e.exception.status, 503)
        self.assertEqual(len(calls), 1)
        url, calls = self.serve([(503, {"Retry-After": "1"})])
        with self.assertRaises(HTTPError):
            Client(url, timeout=5, outage_wait=0.5).health()
        self.assertEqual(len(calls), 1)
