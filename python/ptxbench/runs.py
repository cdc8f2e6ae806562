"""Readers for `ptxbench run --out DIR` folders:

    DIR/run.json                                  what the run was asked (schemas/run.schema.json)
    DIR/trajectories/<task>-<k>.json              one per trajectory (trajectory.schema.json)
    DIR/kernels/<trajectory>/turnN.cu             the kernel of each turn
    DIR/evaluations/<trajectory>/turnN.json       its record (evaluation-record.schema.json)
"""

import json
import os
from typing import Any, Dict, Iterator, List, Optional

__all__ = ["RunFolder", "Trajectory", "find_runs", "read_json"]


def read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class Trajectory:
    """One trajectory file of a run folder. .data is the whole JSON document."""

    def __init__(self, folder: "RunFolder", path: str):
        self.folder = folder
        self.path = path
        self.data = read_json(path)

    @property
    def info(self) -> Dict[str, Any]:
        return self.data["info"]

    @property
    def id(self) -> str:
        return self.info["id"]

    @property
    def task(self) -> str:
        return self.info["task"]

    @property
    def workload(self) -> str:
        return self.info.get("workload", "")

    @property
    def exit_status(self) -> str:
        return self.info["exit_status"]

    @property
    def finished(self) -> bool:
        """False for trajectories a `run --resume` would continue (running, infra_error)."""
        return self.exit_status not in ("running", "infra_error")

    @property
    def turns(self) -> List[Dict[str, Any]]:
        """The turns (spent or not), in order."""
        return self.info.get("turns", [])

    @property
    def infra_events(self) -> List[Dict[str, Any]]:
        return self.info.get("infra_events", [])

    @property
    def messages(self) -> List[Dict[str, Any]]:
        return self.data.get("messages", [])

    def turn(self, n: int) -> Dict[str, Any]:
        """The last entry for turn number n (an infra turn is followed by its retry)."""
        found = [t for t in self.turns if t.get("turn") == n]
        if not found:
            raise KeyError("trajectory %s has no turn %d" % (self.id, n))
        return found[-1]

    def evaluation(self, turn: Any) -> Optional[Dict[str, Any]]:
        """The evaluation record of a turn (a number or a turn dict); None if nothing was evaluated."""
        t = self.turn(turn) if isinstance(turn, int) else turn
        rel = t.get("evaluation_file", "")
        return read_json(os.path.join(self.folder.path, rel)) if rel else None

    def kernel(self, turn: Any) -> Optional[str]:
        """The CUDA source of a turn; None if no kernel was extracted."""
        t = self.turn(turn) if isinstance(turn, int) else turn
        rel = t.get("kernel_file", "")
        if not rel:
            return None
        with open(os.path.join(self.folder.path, rel), encoding="utf-8") as f:
            return f.read()

    def evaluations(self) -> Iterator[Dict[str, Any]]:
        for t in self.turns:
            rec = self.evaluation(t)
            if rec is not None:
                yield rec

    def __repr__(self) -> str:
        return "Trajectory(%r, %s, %d turns)" % (self.id, self.exit_status, len(self.turns))


class RunFolder:
    """A run folder; raises FileNotFoundError when `path` has no run.json."""

    def __init__(self, path: str):
        self.path = os.path.abspath(path)
        run_json = os.path.join(self.path, "run.json")
        if not os.path.isfile(run_json):
            raise FileNotFoundError("%s is not a ptxbench run folder (no run.json)" % path)
        self.run = read_json(run_json)

    @property
    def model(self) -> str:
        return self.run.get("model", {}).get("name", "")

    def trajectory_files(self) -> List[str]:
        d = os.path.join(self.path, "trajectories")
        if not os.path.isdir(d):
            return []
        return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".json"))

    def trajectories(self) -> List[Trajectory]:
        return [Trajectory(self, p) for p in self.trajectory_files()]

    def trajectory(self, trajectory_id: str) -> Trajectory:
        path = os.path.join(self.path, "trajectories", trajectory_id + ".json")
        if not os.path.isfile(path):
            raise KeyError("run %s has no trajectory %s" % (self.path, trajectory_id))
        return Trajectory(self, path)

    def evaluation_files(self) -> List[str]:
        """Every record under evaluations/, sorted."""
        out = []
        for root, _, files in os.walk(os.path.join(self.path, "evaluations")):
            out.extend(os.path.join(root, f) for f in files if f.endswith(".json"))
        return sorted(out)

    def evaluations(self) -> Iterator[Dict[str, Any]]:
        for p in self.evaluation_files():
            yield read_json(p)

    def __repr__(self) -> str:
        return "RunFolder(%r)" % self.path


def find_runs(*roots: str) -> List[RunFolder]:
    """The run folders at or under each root (a folder with run.json), as `report --runs` finds them."""
    found = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            if "run.json" in filenames:
                found.append(RunFolder(dirpath))
                dirnames[:] = []  # a run folder's subfolders are its own
            else:
                dirnames.sort()
    return found
