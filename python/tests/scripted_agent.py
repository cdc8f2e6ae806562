"""A scripted coding agent for the tests of `ptxbench run --agent-command` (issue 39).

It does what a coding CLI does with the workspace that ptxbench prepared: reads .mcp.json,
starts the MCP server it names, speaks MCP to it over stdio, writes kernel.cu and calls
evaluate_kernel. What it saw goes to the JSON file $SCRIPTED_AGENT_LOG (outside the workspace).

    scripted_agent.py KERNEL SCENARIO
      play     evaluate until the run says it is over (a malformed line and a second call while
               one is in flight on the way)
      quit     evaluate once, then exit
      sleep    never evaluate: sleep until killed (the wall-time budget)
      spend    never evaluate: print a Codex CLI usage event per second, as `codex exec --json`
               does after each turn (the token budget)
      signal   never evaluate: send SIGINT to the run that started it (its shell's parent),
               and say whether the confinement let it
      snoop    never evaluate: try to read and write the run folder around the workspace,
               and say what the confinement allowed
"""

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time


class Server:
    def __init__(self, config):
        env = dict(os.environ, **config.get("env", {}))
        self.proc = subprocess.Popen([config["command"]] + config["args"], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.next_id = 0

    def send_line(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def send(self, method, params=None):
        self.next_id += 1
        self.send_line(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                   "params": params or {}}))
        return self.next_id

    def answer(self, timeout=600):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            raise RuntimeError("the MCP server did not answer")
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the MCP server closed its output")
        return json.loads(line)

    def call(self, method, params=None):
        self.send(method, params)
        return self.answer()

    def close(self):
        self.proc.stdin.close()
        return self.proc.wait(60)


def evaluate(server):
    return server.call("tools/call", {"name": "evaluate_kernel", "arguments": {}})["result"]


def snoop():
    """What an agent that has read our source would try: the run folder is two levels up."""
    tried = {}

    def attempt(name, action):
        try:
            action()
            tried[name] = "allowed"
        except OSError as e:
            tried[name] = "denied: " + (e.strerror or str(e))

    def write(path, text):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def read(path):
        with open(path, encoding="utf-8") as f:
            f.read()

    attempt("read_run_json", lambda: read(os.path.join("..", "..", "run.json")))
    attempt("list_workspaces", lambda: os.listdir(".."))
    attempt("write_evaluation", lambda: write(os.path.join("..", "..", "evaluations",
                                                           "forged.json"), "{}"))
    attempt("write_workspace", lambda: write("note.txt", "mine"))
    attempt("write_tmpdir", lambda: write(os.path.join(os.environ["TMPDIR"], "t"), "x"))
    return tried


def main():
    kernel, scenario = sys.argv[1], sys.argv[2]
    seen = {"cwd": os.getcwd(), "files": sorted(os.listdir(".")), "answers": []}
    log = os.environ["SCRIPTED_AGENT_LOG"]

    def save():
        with open(log, "w", encoding="utf-8") as f:
            json.dump(seen, f, indent=1)

    if scenario == "spend":
        save()
        while True:
            print(json.dumps({"type": "turn.completed", "usage": {
                "input_tokens": 3000, "cached_input_tokens": 2000, "output_tokens": 500}}),
                  flush=True)
            time.sleep(1)
    if scenario == "signal":
        with open("/proc/%d/stat" % os.getppid(), encoding="utf-8") as f:
            run = int(f.read().rsplit(")", 1)[1].split()[1])  # the shell's parent
        try:
            os.kill(run, signal.SIGINT)
            seen["signal"] = "allowed"
            save()
            time.sleep(60)  # working on, as an agent would, while the run stops
        except OSError as e:
            seen["signal"] = "denied: " + (e.strerror or str(e))
        save()
        return
    if scenario == "snoop":
        seen["snoop"] = snoop()
        save()
        return
    if scenario == "sleep":
        save()
        time.sleep(3600)
        return
    with open(".mcp.json", encoding="utf-8") as f:
        config = json.load(f)["mcpServers"]["ptxbench"]
    server = Server(config)
    seen["initialize"] = server.call("initialize", {"protocolVersion": "2025-06-18",
                                                    "capabilities": {}})
    seen["tools"] = server.call("tools/list")
    seen["task"] = server.call("resources/read", {"uri": "ptxbench://task"})
    shutil.copy(kernel, "kernel.cu")
    save()
    if scenario == "quit":
        seen["answers"].append(evaluate(server))
        seen["server_exit"] = server.close()
        save()
        return
    server.send_line("{not json")
    seen["malformed"] = server.answer()
    # Two calls at once: the second is refused while the first is judged.
    first = server.send("tools/call", {"name": "evaluate_kernel", "arguments": {}})
    server.send("tools/call", {"name": "evaluate_kernel", "arguments": {}})
    answers = {}
    for _ in range(2):
        a = server.answer()
        answers[a["id"]] = a["result"]
    seen["answers"].append(answers.pop(first))
    seen["concurrent"] = list(answers.values())[0]
    save()
    while "The run is over" not in seen["answers"][-1]["content"][0]["text"]:
        seen["answers"].append(evaluate(server))
        save()
    seen["server_exit"] = server.close()
    save()


if __name__ == "__main__":
    main()
