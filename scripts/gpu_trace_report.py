#!/usr/bin/env python3
"""Who was on the GPU during each witness window (issue 37), from a PTXBENCH_GPU_TRACE file.

Every evaluation process appends its GPU holds and releases, its children's starts, messages
and ends, and its witness windows (src/run/gpu_trace.h). For each window this prints, from the
other evaluation processes: the holds that overlap it (a broken lock if any), and the children
alive during it with what each had last said and whether its evaluation held the GPU then.

  scripts/gpu_trace_report.py TRACE.jsonl [--records DIR]
"""
import argparse
import collections
import json


def load(path):
    events = []
    with open(path) as f:
        for line in f:
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    events.sort(key=lambda e: e["t"])
    return events


def intervals(events):
    """Per pid: holds [(start, end, mode)], children [(start, end, name, says[(t, ev)])],
    windows [(begin, end, sm)]."""
    holds, children, windows = (collections.defaultdict(list) for _ in range(3))
    open_hold, open_child, open_window = {}, {}, {}
    for e in events:
        pid, t, ev = f'{e["pid"]}/{e.get("tid", 0)}', e["t"], e["ev"]
        if ev == "hold":
            open_hold[pid] = (t, e.get("mode"))
        elif ev == "release" and pid in open_hold:
            s, mode = open_hold.pop(pid)
            holds[pid].append((s, t, mode))
        elif ev == "child_start":
            open_child[pid] = [t, None, e.get("name"), []]
        elif ev == "child_says" and pid in open_child:
            open_child[pid][3].append((t, e.get("event")))
        elif ev == "child_exit" and pid in open_child:
            c = open_child.pop(pid)
            c[1] = t
            children[pid].append(tuple(c))
        elif ev == "window_begin":
            open_window[pid] = t
        elif ev == "window_end" and pid in open_window:
            windows[pid].append((open_window.pop(pid), t, e.get("sm_util_pct")))
    end = events[-1]["t"] if events else 0
    for pid, (s, mode) in open_hold.items():
        holds[pid].append((s, end, mode))
    return holds, children, windows


def overlap(a0, a1, b0, b1):
    return max(0.0, min(a1, b1) - max(a0, b0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--lead", type=float, default=0.5,
                    help="seconds before a window also looked at (GPM's counters lag)")
    args = ap.parse_args()
    events = load(args.trace)
    holds, children, windows = intervals(events)
    gpm = [e for e in events if e["ev"] == "gpm"]
    t0 = events[0]["t"] if events else 0
    broken = 0
    not_alone = 0
    total = 0
    for pid, ws in sorted(windows.items()):
        for (b, e, sm) in ws:
            lo = b - args.lead
            mine = [h for h in holds[pid] if h[0] <= b and h[1] >= e]
            total += 1
            not_alone += not any(h[2] == "alone" for h in mine)
            print(f"window pid {pid} {b - t0:8.3f}-{e - t0:8.3f} s sm {sm}: own hold "
                  f"{[(round(h[0] - t0, 3), round(h[1] - t0, 3), h[2]) for h in mine] or 'NONE'}")
            for g in gpm:
                if lo - 0.5 <= g["t"] <= e + 0.5:
                    print(f"   gpm {g['t'] - t0:8.3f} sm {g.get('sm')} tensor {g.get('tensor')} "
                          f"dram {g.get('dram')} any {g.get('any_context')}")
            for other in sorted(set(holds) | set(children)):
                if other == pid:
                    continue
                for (s, x, mode) in holds[other]:
                    if overlap(s, x, lo, e) > 0:
                        broken += overlap(s, x, b, e) > 0
                        print(f"   pid {other} held {mode} {s - t0:8.3f}-{x - t0:8.3f}")
                for (s, x, name, says) in children[other]:
                    if x is None or overlap(s, x, lo, e) <= 0:
                        continue
                    held = any(overlap(hs, hx, max(s, lo), min(x, e)) > 0
                               for (hs, hx, _) in holds[other])
                    said = [f"{ev}@{t - t0:.3f}" for (t, ev) in says if lo - 2 <= t <= e]
                    print(f"   pid {other} child {name} alive {s - t0:8.3f}-{x - t0:8.3f} "
                          f"{'held' if held else 'UNHELD'} says {said[:8]}")
    print(f"windows: {total}; outside their own alone hold: {not_alone}; "
          f"holds of others inside windows: {broken}")


if __name__ == "__main__":
    main()
