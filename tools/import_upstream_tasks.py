#!/usr/bin/env python3
"""Writes tasks/definitions/*.json and tasks/workloads/*.jsonl from the upstream task list.

The upstream list (shared/tasks/upstream-workloads.csv) is the source of truth for names, shapes
and workload identifiers; this script turns its rows for the families we implement into our
data files. Re-run it when the list changes:  tools/import_upstream_tasks.py ../shared/tasks/upstream-workloads.csv
"""
import csv
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FAMILIES = {"gemm"}  # families with a C++ implementation so far

GEMM_REQUIRED = {"sm_90a": ["gmma"], "sm_100a": ["tcgen05"]}


def gemm_definition(name, rows):
    const = {k: v for k, v in rows[0]["axes"].items() if k != "M"}
    return {
        "name": name,
        "family": "gemm",
        "description": (
            f"C[M,N] = A[M,K] x B[N,K]^T with N={const['N']} and K={const['K']} fixed and M varying; "
            "A, B and C are bf16, row-major and contiguous; products are accumulated in fp32 and "
            "C is rounded to bf16 once."),
        "constant_axes": const,
        "variable_axes": ["M"],
        "tolerance": {"rule": "published", "atol": 1e-2, "rtol": 1e-2},
        "flops": "2*M*N*K",
        "required_families": GEMM_REQUIRED,
        "baseline": "cublaslt_bf16_fp32acc",
    }


def main(csv_path):
    groups = {}
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            if row["family"] not in FAMILIES:
                continue
            axes = {k: int(v) for k, v in (p.split("=") for p in row["axes"].split(";"))}
            groups.setdefault(row["definition"], []).append(
                {"axes": axes, "uuid": row["upstream_workload_uuid"], "headline": row["headline"] == "yes"})
    for name, rows in sorted(groups.items()):
        definition = gemm_definition(name, rows)
        (ROOT / "tasks/definitions" / f"{name}.json").write_text(json.dumps(definition, indent=2) + "\n")
        with open(ROOT / "tasks/workloads" / f"{name}.jsonl", "w") as out:
            for r in sorted(rows, key=lambda r: r["axes"]["M"]):
                w = {"id": r["uuid"], "axes": {"M": r["axes"]["M"]}}
                if r["headline"]:
                    w["headline"] = True
                out.write(json.dumps(w) + "\n")
    print(f"wrote {len(groups)} definitions")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "tasks/upstream-workloads.csv"))
