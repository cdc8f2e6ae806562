#!/usr/bin/env python3
"""A scripted OpenAI-compatible model server for runs on machines without cpp-httplib (the GPU
image): it answers POST .../chat/completions (streamed or not) from replay files in
ptxbench's format (agent/replay/*.json), choosing the file by the task named in the task
message and the reply by the turn (assistant messages so far + 1). It lets `ptxbench run
--model ...` drive real HTTP, many trajectories at once, on a real GPU, with no model.

  scripts/scripted_model_server.py --replay agent/replay/default.json \
      --replay agent/replay/attention.json --port-file /tmp/port [--fault-every 4]

--fault-every N answers every N-th request with 429 and Retry-After: 1 (the client must wait
and retry). The CI tests use the C++ server of tests/agent/ instead.
"""
import argparse
import json
import os
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TASK_LINE = re.compile(r"## Task `([^`]+)`")


def load_replay(path, source_dir):
    with open(path) as f:
        j = json.load(f)
    replies = []
    for t in j["turns"]:
        text = t.get("text", "")
        if "kernel" in t:
            with open(os.path.join(source_dir, t["kernel"])) as k:
                text += "\n\n```cuda\n" + k.read() + "```\n"
        replies.append(text)
    return j["task"], replies


class Script:
    def __init__(self, replays, fault_every):
        self.replays = replays
        self.fault_every = fault_every
        self.lock = threading.Lock()
        self.count = 0
        self.faults = 0

    def next_is_fault(self):
        with self.lock:
            self.count += 1
            fault = self.fault_every > 0 and self.count % self.fault_every == 0
            self.faults += fault
            return fault

    def reply_for(self, messages):
        task = None
        for m in messages:
            if m.get("role") == "user":
                hit = TASK_LINE.search(m.get("content", ""))
                if hit:
                    task = hit.group(1)
                    break
        turn = 1 + sum(1 for m in messages if m.get("role") == "assistant")
        replies = self.replays.get(task)
        if replies is None:
            return f"The scripted server has no replay for task {task!r}."
        if turn > len(replies):
            return f"The replay for {task} has no reply for turn {turn}."
        return replies[turn - 1]


def make_handler(script):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # quiet: the run's own progress lines say enough
            pass

        def send(self, status, body, headers=()):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            try:
                req = json.loads(self.rfile.read(length))
            except ValueError:
                return self.send(400, json.dumps({"error": {"message": "request is not JSON"}}))
            if not self.path.split("?")[0].endswith("/chat/completions"):
                return self.send(404, json.dumps({"error": {"message": "unknown path"}}))
            if script.next_is_fault():
                return self.send(429, json.dumps({"error": {"message": "scripted rate limit"}}),
                                 [("Retry-After", "1")])
            messages = req.get("messages", [])
            text = script.reply_for(messages)
            prompt = sum(len(m.get("content", "")) for m in messages) // 4
            usage = {"prompt_tokens": prompt, "completion_tokens": len(text) // 4,
                     "total_tokens": prompt + len(text) // 4}
            model = req.get("model", "scripted-model")
            if not req.get("stream"):
                body = {"id": "scripted", "object": "chat.completion", "model": model,
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": text}}],
                        "usage": usage}
                return self.send(200, json.dumps(body))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()

            def event(obj):
                self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
                self.wfile.flush()

            base = {"id": "scripted", "object": "chat.completion.chunk", "model": model}
            for i in range(0, len(text), 400):
                event({**base, "choices": [{"index": 0, "delta": {"content": text[i:i + 400]},
                                            "finish_reason": None}]})
            event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            event({**base, "choices": [], "usage": usage})
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--replay", action="append", required=True, help="replay file (repeatable)")
    ap.add_argument("--source-dir", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--fault-every", type=int, default=0)
    a = ap.parse_args()
    replays = {}
    for path in a.replay:
        task, replies = load_replay(path, a.source_dir)
        replays[task] = replies
    script = Script(replays, a.fault_every)
    server = ThreadingHTTPServer(("127.0.0.1", a.port), make_handler(script))
    server.daemon_threads = True
    port = server.server_address[1]
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(a.port_file + ".tmp", a.port_file)
    print(f"scripted model server on 127.0.0.1:{port} for {sorted(replays)}", flush=True)
    def stop(*_):  # SIGTERM too: a background job of a script ignores SIGINT
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    print(f"scripted model server: {script.count} requests, {script.faults} faults", flush=True)


if __name__ == "__main__":
    sys.exit(main())
