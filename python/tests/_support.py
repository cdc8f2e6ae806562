"""Shared by the tests: the ptxbench binary ($PTXBENCH_BIN), the repository's paths, and the
outputs the binary makes once per test process (an eval record, a replay run, a report)."""

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(PYTHON_DIR)
SCHEMAS = os.path.join(REPO, "schemas")
TASKS = os.path.join(REPO, "tasks")
KERNEL = os.path.join(REPO, "controls", "gemm", "naive_correct.cu")
TASK, WORKLOAD = "gemm_n128_k2048", "M=93"

sys.path.insert(0, PYTHON_DIR)  # the package of this checkout, also without PYTHONPATH
os.environ.setdefault("PTXBENCH_SCHEMAS", SCHEMAS)

_scratch = None
_outputs = {}


def binary():
    """$PTXBENCH_BIN (ctest sets it to the built ptxbench); the test is skipped when unset."""
    path = os.environ.get("PTXBENCH_BIN")
    if not path:
        raise unittest.SkipTest("PTXBENCH_BIN is not set (ctest sets it to the built ptxbench)")
    if not os.access(path, os.X_OK):
        raise AssertionError("PTXBENCH_BIN=%s is not an executable" % path)
    return path


def scratch():
    global _scratch
    if _scratch is None:
        _scratch = tempfile.mkdtemp(prefix="ptxbench-py-")
        atexit.register(shutil.rmtree, _scratch, True)
    return _scratch


def cache_dir():
    return os.path.join(scratch(), "cache")


def run_bin(*args, ok=(0,), timeout=600):
    """Runs the binary; fails the test with its output when the exit code is not in `ok`."""
    env = dict(os.environ, PTXBENCH_CACHE=cache_dir())  # run and import have no --cache-dir
    p = subprocess.run([binary()] + list(args), cwd=REPO, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True, timeout=timeout)
    if p.returncode not in ok:
        raise AssertionError("ptxbench %s: exit %d\n%s" % (" ".join(args), p.returncode, p.stdout[-4000:]))
    return p


NO_STORE = "built without SQLite"


def skip_without_store(returncode, output):
    """A lean build (no SQLite headers) has no store and no single-host queue: it says so in one
    line and exits 3. The tests that need either are then skipped, visibly, with that line."""
    if returncode == 3 and NO_STORE in output:
        raise unittest.SkipTest(output.strip().splitlines()[-1])


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def eval_record():
    """The record of `eval` on the naive GEMM control (exit 0 on a GPU, 3 without one)."""
    if "eval" not in _outputs:
        out = os.path.join(scratch(), "eval.json")
        run_bin("eval", KERNEL, "--task", TASK, "--workload", WORKLOAD, "--json", out,
                "--tasks-dir", TASKS, "--cache-dir", cache_dir(), "--quiet", ok=(0, 3))
        _outputs["eval"] = out
    return _outputs["eval"]


def replay_run():
    """A run folder made by `run` on its bundled replay (exit 3 without a GPU: the trajectory
    stops at its first INFRA_ERROR turn, interrupted)."""
    if "run" not in _outputs:
        out = os.path.join(scratch(), "run")
        run_bin("run", "--out", out, "--overwrite", "--tasks-dir", TASKS, "--quiet", ok=(0, 3))
        _outputs["run"] = out
    return _outputs["run"]


def report_json():
    """`report --json` of the replay run (unfinished without a GPU, hence --include-unfinished)."""
    if "report" not in _outputs:
        out = os.path.join(scratch(), "report.json")
        run_bin("report", "--runs", replay_run(), "--json", out, "--resamples", "100",
                "--include-unfinished", "--no-published")
        _outputs["report"] = out
    return _outputs["report"]


def store_of_run():
    """The replay run and the eval record imported into a fresh store."""
    if "store" not in _outputs:
        db = os.path.join(scratch(), "store.db")
        p = run_bin("import", "--db", db, replay_run(), eval_record(), ok=(0, 3))
        skip_without_store(p.returncode, p.stdout)
        if p.returncode != 0:
            raise AssertionError("ptxbench import: exit 3\n" + p.stdout[-4000:])
        _outputs["store"] = db
    return _outputs["store"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`ptxbench serve` on a free loopback port, with a token; stopped by stop()."""

    def __init__(self, token="test-token", workers=True):
        self.token = token
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.db = os.path.join(scratch(), "serve-%d.db" % self.port)
        self.log = open(os.path.join(scratch(), "serve-%d.log" % self.port), "w+")
        env = dict(os.environ, PTXBENCH_SERVE_TOKEN=token, PTXBENCH_CACHE=cache_dir())
        args = [binary(), "serve", "--db", self.db, "--port", str(self.port), "--tasks-dir",
                TASKS, "--cache-dir", cache_dir()]
        if not workers:
            args.append("--no-workers")
        self.proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                skip_without_store(self.proc.returncode, self.output())
                raise AssertionError("ptxbench serve exited %d:\n%s" % (self.proc.returncode, self.output()))
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    pass
            except OSError:
                time.sleep(0.1)
                continue
            # With workers, health is ok once one of them is alive (until then 503).
            if not workers or self.healthy():
                return
            time.sleep(0.1)
        self.stop()
        raise AssertionError("ptxbench serve did not listen within 30 s:\n" + self.output())

    def healthy(self):
        req = urllib.request.Request(self.url + "/v1/health",
                                     headers={"Authorization": "Bearer " + self.token})
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-4000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: serve stops its workers and exits
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class StandInService:
    """An evaluation service that judges every kernel INCORRECT (the candidate's verdict, which
    counts) at once, keeping what was submitted; stopped by stop()."""

    def __init__(self):
        import http.server
        import threading
        submitted = self.submitted = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def reply(self, status, doc):
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                submitted.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.reply(202, {"id": "e%d" % len(submitted)})

            def do_GET(self):
                self.reply(200, {"status": "INCORRECT", "reason": "numerical", "arch": "sm_90a",
                                 "message": "C: 12 of 11904 elements outside tolerance"})

            def log_message(self, *args):
                pass

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.http.server_address[1]
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def stop(self):
        self.http.shutdown()
