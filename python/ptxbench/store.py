"""A read-only reader of the SQLite results store (`--db`, `ptxbench import`, `ptxbench serve`).

Tables (src/store/store.cc, schema versions 1-3 in PRAGMA user_version): runs, trajectories,
turns, evaluations (record_json is the full record), jobs and workers (the service's queue).
Rows come back as dicts; *_json columns are also given parsed, without the suffix.

    from ptxbench import Store
    with Store("results/ptxbench.db") as s:
        for e in s.evaluations(status="PASSED"):
            print(e["task"], e["speedup"], e["record"]["instructions"]["arch_tag"])
"""

import json
import os
import sqlite3
import urllib.parse
from typing import Any, Dict, List, Optional

__all__ = ["Store", "StoreError", "APPLICATION_ID"]

APPLICATION_ID = 0x50545842  # "PTXB": what ptxbench writes in PRAGMA application_id
KNOWN_SCHEMA_VERSION = 3


class StoreError(Exception):
    """The file is not a ptxbench store, or one this reader does not know."""


class Store:
    def __init__(self, path: str):
        if not os.path.isfile(path):
            raise FileNotFoundError("no results store at %s" % path)
        self.path = path
        uri = "file:%s?mode=ro" % urllib.parse.quote(os.path.abspath(path))
        self.db = sqlite3.connect(uri, uri=True)
        self.db.row_factory = sqlite3.Row
        app = self.db.execute("PRAGMA application_id").fetchone()[0]
        if app != APPLICATION_ID:
            self.db.close()
            raise StoreError("%s is not a ptxbench results store (application_id %d)" % (path, app))
        self.schema_version = self.db.execute("PRAGMA user_version").fetchone()[0]

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def query(self, sql: str, params: Any = ()) -> List[Dict[str, Any]]:
        """Any read-only SQL; rows as dicts, *_json columns parsed."""
        return [_row(r) for r in self.db.execute(sql, params)]

    def _select(self, table: str, where: Dict[str, Any], order: str, columns: str = "*"):
        clauses = [("%s = ?" % k) for k, v in where.items() if v is not None]
        params = [v for v in where.values() if v is not None]
        sql = "SELECT %s FROM %s" % (columns, table)
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        return self.query(sql + " ORDER BY " + order, params)

    # -- runs and their results ---------------------------------------------------------

    def runs(self, model_name: Optional[str] = None, arch: Optional[str] = None) -> List[Dict[str, Any]]:
        """The runs; "run" is run.json as it was imported."""
        return self._select("runs", {"model_name": model_name, "arch": arch}, "started_at, id")

    def trajectories(self, run_id: Optional[str] = None, task: Optional[str] = None) -> List[Dict[str, Any]]:
        return self._select("trajectories", {"run_id": run_id, "task": task}, "run_id, trajectory_id")

    def turns(self, run_id: Optional[str] = None, trajectory_id: Optional[str] = None) -> List[Dict[str, Any]]:
        return self._select("turns", {"run_id": run_id, "trajectory_id": trajectory_id},
                            "run_id, trajectory_id, seq")

    def evaluations(self, task: Optional[str] = None, status: Optional[str] = None,
                    run_id: Optional[str] = None, with_records: bool = True) -> List[Dict[str, Any]]:
        """The stored evaluations; "record" is the full record unless with_records is False."""
        cols = "*" if with_records else ", ".join(
            c for c in self._columns("evaluations") if c != "record_json")
        return self._select("evaluations", {"task": task, "status": status, "run_id": run_id},
                            "created_at, evaluation_id", cols)

    def evaluation(self, evaluation_id: str) -> Dict[str, Any]:
        """One evaluation record by its key (evaluations.evaluation_id)."""
        row = self.db.execute("SELECT record_json FROM evaluations WHERE evaluation_id = ?",
                              (evaluation_id,)).fetchone()
        if row is None:
            raise KeyError("no evaluation %s in %s" % (evaluation_id, self.path))
        return json.loads(row[0])

    # -- the service's queue --------------------------------------------------------------

    def jobs(self, state: Optional[str] = None) -> List[Dict[str, Any]]:
        """The service's jobs (schema version 2 and later); "request" includes the source,
        "result" is the record of a finished job."""
        if not self._has_table("jobs"):
            return []
        return self._select("jobs", {"state": state}, "submitted_at, id")

    def job(self, job_id: str) -> Dict[str, Any]:
        rows = self._select("jobs", {"id": job_id}, "id") if self._has_table("jobs") else []
        if not rows:
            raise KeyError("no job %s in %s" % (job_id, self.path))
        return rows[0]

    def workers(self) -> List[Dict[str, Any]]:
        return self._select("workers", {}, "id") if self._has_table("workers") else []

    def _has_table(self, name: str) -> bool:
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?",
                               (name,)).fetchone() is not None

    def _columns(self, table: str) -> List[str]:
        return [r[1] for r in self.db.execute("PRAGMA table_info(%s)" % table)]


def _row(r: sqlite3.Row) -> Dict[str, Any]:
    d = dict(r)
    for k in list(d):
        if k.endswith("_json") and isinstance(d[k], str):
            try:
                d[k[:-5]] = json.loads(d[k])
            except ValueError:
                d[k[:-5]] = None
    return d
