#!/usr/bin/env python3
"""Replay the shared benchmark workload against Hermes v6's own SessionDB.

The baseline that `sessiondb bench --workload` is compared with: the same
records (../shared/bench/workload.py), replayed through the SessionDB of a
Hermes checkout at schema 6, printing one JSON object with the keys
`sessiondb bench` prints (append, search, get_messages, concurrent,
db_bytes), so the two line up key by key.

It is run by hand (CI cannot fetch Hermes, and Python packages are not
reachable here; hermes_state.py at v6 needs only the standard library):

  git clone https://github.com/thanhdatbui/hermes-agent /tmp/hermes6
  git -C /tmp/hermes6 checkout 30ec12970b10d8efd55f509fb7da33d5d8614b74   # the last schema-6 commit
  python3 ../shared/bench/workload.py --dump /tmp/workload.jsonl
  python3 hermes_v6_workload.py --hermes /tmp/hermes6 --workload /tmp/workload.jsonl

Hermes v6 opens its file in WAL mode and leaves synchronous at Python's
sqlite3 default, FULL; --synchronous normal sets NORMAL after it opens, to
compare with sessiondb's default. The store is made in a temporary folder
(or --dir) and removed afterwards unless --keep.
"""

import argparse
import json
import multiprocessing as mp
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path


def load(path):
    sessions, messages, queries, getm, csess, cmsgs = [], [], [], None, {}, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            t = r.get("type")
            if t == "session":
                sessions.append(r)
            elif t == "message":
                messages.append(r)
            elif t == "query":
                queries.append(r)
            elif t == "get_messages":
                getm = r["session_id"]
            elif t == "concurrent_session":
                csess[r["worker"]] = r["session_id"]
            elif t == "concurrent_message":
                cmsgs.setdefault(r["worker"], []).append(r)
    return sessions, messages, queries, getm, csess, cmsgs


def open_db(hermes, path, synchronous):
    sys.path.insert(0, hermes)
    os.environ.setdefault("HERMES_HOME", str(Path(path).parent))
    import hermes_state  # noqa: E402  (the checkout's own module)

    db = hermes_state.SessionDB(db_path=Path(path))
    if synchronous:
        db._conn.execute("PRAGMA synchronous=" + synchronous)
    return hermes_state, db


def append(db, m):
    db.append_message(
        m["session_id"], m["role"], content=m.get("content"),
        tool_name=m.get("tool_name"), tool_calls=m.get("tool_calls"),
        tool_call_id=m.get("tool_call_id"))


def worker(args):
    hermes, path, synchronous, sid, msgs, start_at = args
    _, db = open_db(hermes, path, synchronous)
    errors = 0
    while time.time() < start_at:
        time.sleep(0.001)
    t0 = time.perf_counter()
    for m in msgs:
        try:
            append(db, m)
        except Exception:  # counted, as sessiondb's bench counts its errors
            errors += 1
    db.close()
    return time.perf_counter() - t0, errors


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hermes", required=True, help="a Hermes checkout at schema 6")
    ap.add_argument("--workload", required=True, help="the JSONL workload.py wrote")
    ap.add_argument("--synchronous", choices=["full", "normal"], default="full")
    ap.add_argument("--dir", help="folder for the store (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the store")
    a = ap.parse_args()
    sync = None if a.synchronous == "full" else "NORMAL"
    sessions, messages, queries, getm, csess, cmsgs = load(a.workload)
    d = a.dir or tempfile.mkdtemp(prefix="hermes-v6-bench-")
    path = os.path.join(d, "state.db")
    hs, db = open_db(a.hermes, path, sync)
    if hs.SCHEMA_VERSION != 6:
        sys.exit(f"{a.hermes} is at schema {hs.SCHEMA_VERSION}, not 6")
    out = {"impl": "hermes-v6", "driver": "python sqlite3", "sqlite_version": sqlite3.sqlite_version,
           "python_version": sys.version.split()[0], "synchronous": a.synchronous}

    for s in sessions:
        db.create_session(s["id"], s["source"], model=s.get("model"))
    n = len(messages)
    deciles, t0 = [], time.perf_counter()
    last, step = t0, max(1, n // 10)
    for i, m in enumerate(messages, 1):
        append(db, m)
        if i % step == 0:
            now = time.perf_counter()
            deciles.append(round(step / (now - last), 1))
            last = now
    secs = time.perf_counter() - t0
    out["append"] = {"messages": n, "seconds": round(secs, 3), "msgs_per_s": round(n / secs, 1),
                     "msgs_per_s_by_decile": deciles}

    for q in queries:  # warm-up pass
        db.search_messages(q["q"], limit=20)
    times, by_kind, per_query, zero = [], {}, [], 0
    for q in queries:
        ids, ts = None, []
        for _ in range(3):
            t = time.perf_counter()
            hits = db.search_messages(q["q"], limit=20)
            ts.append((time.perf_counter() - t) * 1000)
            ids = [h["id"] for h in hits]
        times += ts
        by_kind.setdefault(q["kind"], []).extend(ts)
        zero += not ids
        per_query.append({"idx": q["idx"], "kind": q["kind"], "q": q["q"], "ids": ids})
    out["search"] = {"p50_ms": round(pct(times, 0.5), 2), "p95_ms": round(pct(times, 0.95), 2),
                     "max_ms": round(max(times), 2),
                     "p50_ms_by_kind": {k: round(pct(v, 0.5), 2) for k, v in sorted(by_kind.items())},
                     "zero_hit_queries": zero, "per_query": per_query}

    if getm:
        rows = len(db.get_messages(getm))
        ts = []
        for _ in range(21):
            t = time.perf_counter()
            db.get_messages(getm)
            ts.append((time.perf_counter() - t) * 1000)
        out["get_messages"] = {"rows": rows, "p50_ms": round(statistics.median(ts[1:]), 2)}

    if csess:
        # A fresh file, as sessiondb's bench uses for its processes.
        cpath = os.path.join(d, "concurrent.db")
        _, cdb = open_db(a.hermes, cpath, sync)
        for w, sid in sorted(csess.items()):
            cdb.create_session(sid, "cli")
        cdb.close()
        start_at = time.time() + 1.0
        jobs = [(a.hermes, cpath, sync, csess[w], cmsgs.get(w, []), start_at) for w in sorted(csess)]
        t0 = time.time()
        with mp.get_context("spawn").Pool(len(jobs)) as pool:
            res = pool.map(worker, jobs)
        wall = time.time() - start_at
        total = sum(len(j[4]) for j in jobs)
        conn = sqlite3.connect(cpath)
        stored = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        conn.close()
        out["concurrent"] = {"procs": len(jobs), "total_wall_s": round(wall, 3),
                             "aggregate_msgs_per_s": round(total / wall, 1),
                             "errors_total": sum(e for _, e in res),
                             "rows_stored": stored, "rows_expected": total}
    db.close()
    out["db_bytes"] = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
                          if f.startswith("state.db"))
    print(json.dumps(out))
    if not a.keep and not a.dir:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
