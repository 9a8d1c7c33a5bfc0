#!/usr/bin/env python3
"""Run Hermes v6's SessionDB and `sessiondb bench` on one workload, interleaved.

Issue 20's comparison in one command: each round runs Hermes v6's own
SessionDB (hermes_v6_workload.py, its default: WAL, synchronous FULL), then
`sessiondb bench --workload` at --synchronous full, then at the default,
normal, one after another, so a noisy minute falls on all three. It prints a
line per run, then each figure's ratio to Hermes by round with the median,
and with --json the whole of it as one JSON object.

  python3 ../shared/bench/workload.py --dump /tmp/workload.jsonl
  go build -tags sqlite_fts5 -o /tmp/sessiondb ./cmd/sessiondb
  python3 cmd/sessiondb/internal/bench/hermes/compare_v6.py \\
      --hermes /tmp/hermes6 --sessiondb /tmp/sessiondb --workload /tmp/workload.jsonl --rounds 3

--hermes is a Hermes checkout at schema 6 (hermes_v6_workload.py says how to
make one). The targets printed beside the ratios are issue 20's.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# (name, how to read it from one run's output, better when higher, target
# against Hermes at FULL: (run it applies to, the bound))
FIGURES = [
    ("append msgs/s", lambda d: d["append"]["msgs_per_s"], True),
    ("4 processes msgs/s", lambda d: d["concurrent"]["aggregate_msgs_per_s"], True),
    ("search p50 ms", lambda d: d["search"]["p50_ms"], False),
    ("search p95 ms", lambda d: d["search"]["p95_ms"], False),
]
TARGETS = {
    ("full", "append msgs/s"): ">= 1.0",
    ("full", "4 processes msgs/s"): ">= 1.0",
    ("full", "search p50 ms"): "<= 0.5",
    ("normal", "append msgs/s"): ">= 1.3",
}


def run(cmd):
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    d = json.loads(out)
    return d.get("sqlite", d)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hermes", required=True, help="a Hermes checkout at schema 6")
    ap.add_argument("--sessiondb", required=True, help="the sessiondb binary (the cgo build: -tags sqlite_fts5)")
    ap.add_argument("--workload", required=True, help="the JSONL workload.py wrote")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="print the runs and ratios as one JSON object")
    a = ap.parse_args()

    runs = {"hermes": [], "full": [], "normal": []}
    for r in range(1, a.rounds + 1):
        for name, cmd in [
            ("hermes", [sys.executable, os.path.join(HERE, "hermes_v6_workload.py"), "--hermes", a.hermes, "--workload", a.workload]),
            ("full", [a.sessiondb, "bench", "--workload", a.workload, "--synchronous", "full", "--quiet", "--json"]),
            ("normal", [a.sessiondb, "bench", "--workload", a.workload, "--synchronous", "normal", "--quiet", "--json"]),
        ]:
            d = run(cmd)
            runs[name].append(d)
            line = "  ".join(f"{f}: {get(d):,.1f}" for f, get, _ in FIGURES)
            floor = d.get("search", {}).get("ratio_vs_floor")
            if floor:
                line += f"  search p50 / bare FTS5 floor: {floor:.2f}"
            print(f"round {r} {name:6} {line}", file=sys.stderr, flush=True)

    ratios = {}
    for mode in ("full", "normal"):
        for f, get, _ in FIGURES:
            by_round = [get(o) / get(h) for o, h in zip(runs[mode], runs["hermes"])]
            ratios[f"{mode}: {f}"] = {"by_round": [round(x, 3) for x in by_round],
                                      "median": round(statistics.median(by_round), 3),
                                      "target": TARGETS.get((mode, f), "")}
    if a.json:
        print(json.dumps({"runs": runs, "ratios": ratios}))
        return
    print("ours / Hermes v6 (FULL)           by round              median  target")
    for k, v in ratios.items():
        print(f"{k:32} {', '.join(f'{x:.2f}' for x in v['by_round']):20} {v['median']:7.2f}  {v['target']}")


if __name__ == "__main__":
    main()
