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
FAMILIES = {"gemm", "mha_fwd", "mha_bwd"}  # families with a C++ implementation

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


def attention_definition(name, family, rows):
    const = {k: v for k, v in rows[0]["axes"].items() if k != "S"}
    causal = name.endswith("_causal")
    const["causal"] = 1 if causal else 0
    mask = ("; causal: key j is visible to query i iff j <= i" if causal else "; no mask")
    if family == "mha_fwd":
        what = ("O = softmax(Q K^T / sqrt(D)) V and LSE = ln sum_j exp(Q_i K_j^T / sqrt(D)) "
                "(natural log) for Q, K, V, O [B,H,S,D] bf16 and LSE [B,H,S] fp32")
        flops, baseline = 4, "cudnn_sdpa_fwd"
    else:
        what = ("dQ, dK, dV of the forward O = softmax(Q K^T / sqrt(D)) V given dO, with O and "
                "LSE from the reference forward; Q, K, V, O, dO, dQ, dK, dV [B,H,S,D] bf16, "
                "LSE [B,H,S] fp32")
        flops, baseline = 10, "cudnn_sdpa_bwd"
    factor = f"{flops // 2}" if causal else f"{flops}"
    return {
        "name": name,
        "family": family,
        "description": (f"{what}, with B={const['B']}, H={const['H']}, D={const['D']} fixed and "
                        f"S varying{mask}; all tensors contiguous, fp32 accumulation."),
        "constant_axes": const,
        "variable_axes": ["S"],
        "tolerance": {"rule": "published", "atol": 1e-2, "rtol": 1e-2},
        # causal: half the score matrix (the published convention)
        "flops": f"{factor}*B*H*S*S*D",
        "required_families": GEMM_REQUIRED,
        "baseline": baseline,
    }


def main(csv_path):
    groups = {}
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            if row["family"] not in FAMILIES:
                continue
            axes = {k: int(v) for k, v in (p.split("=") for p in row["axes"].split(";"))}
            groups.setdefault((row["family"], row["definition"]), []).append(
                {"axes": axes, "uuid": row["upstream_workload_uuid"], "headline": row["headline"] == "yes"})
    for (family, name), rows in sorted(groups.items()):
        if family == "gemm":
            definition, axis = gemm_definition(name, rows), "M"
        else:
            definition, axis = attention_definition(name, family, rows), "S"
        (ROOT / "tasks/definitions" / f"{name}.json").write_text(json.dumps(definition, indent=2) + "\n")
        with open(ROOT / "tasks/workloads" / f"{name}.jsonl", "w") as out:
            for r in sorted(rows, key=lambda r: r["axes"][axis]):
                w = {"id": r["uuid"], "axes": {axis: r["axes"][axis]}}
                if r["headline"]:
                    w["headline"] = True
                out.write(json.dumps(w) + "\n")
    print(f"wrote {len(groups)} definitions")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "tasks/upstream-workloads.csv"))
