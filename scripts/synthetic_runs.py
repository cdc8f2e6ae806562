#!/usr/bin/env python3
"""Writes synthetic run folders (10 runs x 1250 trajectories x 8 turns = 100 000 turns, random
outcomes and speedups, seeded) for measuring `ptxbench import` and `ptxbench report` at scale:

  scripts/synthetic_runs.py /tmp/big/runs
  ptxbench import /tmp/big/runs --db /tmp/big/store.db
  time ptxbench report --db /tmp/big/store.db --no-published --html /tmp/big/r.html
"""
import json
import os
import random
import sys

OUTCOMES = ["extraction", "compile", "runtime", "incorrect", "correct", "verified"]


def main(root, runs=10, trajectories=1250, turns=8, seed=7):
    random.seed(seed)
    for r in range(runs):
        d = os.path.join(root, f"run{r}")
        os.makedirs(os.path.join(d, "trajectories"), exist_ok=True)
        with open(os.path.join(d, "run.json"), "w") as f:
            json.dump({"model": {"name": f"model{r % 5}", "provider": "openai"}, "arch": "sm_90a",
                       "pack": "full", "started_at": f"2026-12-03T00:00:{r:02d}Z",
                       "tasks": ["gemm_n7168_k5120"]}, f)
        for k in range(trajectories):
            rows = []
            for t in range(1, turns + 1):
                o = random.choice(OUTCOMES)
                row = {"turn": t, "outcome": o, "spent": True,
                       "status": "PASSED" if o in ("correct", "verified") else "INCORRECT",
                       "usage": {"prompt_tokens": 1000 * t, "completion_tokens": 500,
                                 "reasoning_tokens": 0},
                       "evaluation_file": "", "kernel_file": ""}
                if o in ("correct", "verified"):
                    row["speedup"] = random.random() * 1.5
                rows.append(row)
            tid = f"task{k % 4}-{k}"
            with open(os.path.join(d, "trajectories", tid + ".json"), "w") as f:
                json.dump({"info": {"id": tid, "task": f"task{k % 4}", "index": k,
                                    "exit_status": "turn_limit", "turns": rows},
                           "messages": []}, f)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "synthetic-runs"))
