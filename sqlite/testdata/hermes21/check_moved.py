#!/usr/bin/env python3
"""Hermes reads back what sessiondb moved: the fixture exported and imported
into a fresh state.db, copied to PostgreSQL and back, and Hermes' own export
imported, each compared with the original through Hermes' own reads.

Usage:
    python3 check_moved.py --hermes /path/to/hermes-agent [--sessiondb BIN]
        [--postgres postgres://...] [--json]

Moves (each into a state.db Hermes has just made, in a temporary folder):

  export-import   sessiondb export of state.db, sessiondb import of the file
  postgres        sessiondb copy state.db -> a fresh schema -> the fresh file
                  (with --postgres: a database URL; the schema is dropped
                  afterwards with psql when psql is there)
  hermes-export   reads/cli_sessions_export.jsonl (Hermes' own export)
                  imported by sessiondb, compared with Hermes' own
                  import_sessions of the same lines

For every session the script compares, through Hermes' SessionDB:
get_messages_as_conversation (the conversation Hermes resumes), the same
with include_inactive, get_messages with include_inactive (every row and
column but the id, which Hermes' import renumbers), get_session (every
column; an import resets the live gateway state, as Hermes' own import
does, so those columns are compared with Hermes' defaults instead), the
session_model_usage rows, and Hermes' insights split by model. It prints
the figures per move and every difference; the exit status is 1 when any
move differs. The checkout is only read.

Needs Go (to build sessiondb) unless --sessiondb names a binary, and for
the insights the Debian packages python3-requests and python3-yaml.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import pathlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

# The session columns Hermes' import_sessions leaves at their defaults.
LIVE_STATE = {
    "session_key": None, "chat_id": None, "chat_type": None, "thread_id": None, "display_name": None,
    "origin_json": None, "expiry_finalized": 0, "handoff_state": None, "handoff_platform": None,
    "handoff_error": None, "compression_failure_cooldown_until": None, "compression_failure_error": None,
    "compression_fallback_streak": 0, "rewind_count": 0,
}


class Failed(Exception):
    """A command of a move failed."""


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise Failed(f"{' '.join(os.path.basename(c) if c.startswith('/tmp/check-moved-') else c for c in cmd)}: "
                     f"exit {r.returncode}\n{r.stdout}{r.stderr}".strip())
    return r


def fresh(hs, path):
    """A state.db the current Hermes makes, empty."""
    hs.SessionDB(db_path=pathlib.Path(path)).close()
    return path


def reads(hs, path, ids, insights):
    """What Hermes' own reads return for each session of the file."""
    db = hs.SessionDB(db_path=pathlib.Path(path))
    try:
        out = {}
        for sid in ids:
            out[sid] = {
                "conversation": db.get_messages_as_conversation(sid),
                "conversation_inactive": db.get_messages_as_conversation(sid, include_inactive=True),
                "messages": [{k: v for k, v in m.items() if k != "id"}
                             for m in db.get_messages(sid, include_inactive=True)],
                "session": db.get_session(sid),
                "usage": [dict(r) for r in db._conn.execute(
                    "SELECT * FROM session_model_usage WHERE session_id = ? "
                    "ORDER BY model, billing_provider, billing_base_url, billing_mode", (sid,))],
            }
        extra = {}
        if insights:
            from agent.insights import InsightsEngine
            engine = InsightsEngine(db)
            cutoff = 0.0
            extra["insights"] = engine._compute_model_breakdown(engine._get_sessions(cutoff), cutoff)
        return out, extra
    finally:
        db.close()


def compare(want, got, reset_live):
    """The differences between two reads() results, as lines."""
    diffs = []
    (ws, wx), (gs, gx) = want, got
    for sid, w in ws.items():
        g = gs[sid]
        for key in ("conversation", "conversation_inactive", "messages", "usage"):
            if w[key] != g[key]:
                diffs.append(f"{sid}: {key} differs:\n  want {json.dumps(w[key])[:400]}\n  got  {json.dumps(g[key])[:400]}")
        ws_, gs_ = dict(w["session"] or {}), dict(g["session"] or {})
        if reset_live:
            for col, default in LIVE_STATE.items():
                if col in gs_ and gs_[col] != default:
                    diffs.append(f"{sid}: {col} = {gs_[col]!r} after an import, want Hermes' default {default!r}")
                ws_.pop(col, None)
                gs_.pop(col, None)
        for col in sorted(set(ws_) | set(gs_)):
            if ws_.get(col) != gs_.get(col):
                diffs.append(f"{sid}: session {col} = {gs_.get(col)!r}, want {ws_.get(col)!r}")
    if wx != gx:
        diffs.append(f"insights differ:\n  want {json.dumps(wx)[:600]}\n  got  {json.dumps(gx)[:600]}")
    return diffs


def figures(r):
    ss = r[0].values()
    return {
        "sessions": len(r[0]),
        "messages": sum(len(s["messages"]) for s in ss),
        "hidden": sum(1 for s in ss for m in s["messages"] if not m.get("active")),
        "usage_rows": sum(len(s["usage"]) for s in ss),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hermes", default=os.environ.get("HERMES_CHECKOUT"), required=False)
    ap.add_argument("--sessiondb", help="the sessiondb binary (default: go build ./cmd/sessiondb)")
    ap.add_argument("--postgres", help="a PostgreSQL URL for the copy through a server (a fresh schema is made in it)")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args()
    if not args.hermes or not os.path.isfile(os.path.join(args.hermes, "hermes_state.py")):
        ap.error("--hermes (or $HERMES_CHECKOUT) must name a Hermes checkout holding hermes_state.py")

    work = tempfile.mkdtemp(prefix="check-moved-")
    try:
        os.environ["HERMES_HOME"] = os.path.join(work, "home")
        os.makedirs(os.environ["HERMES_HOME"])
        sys.dont_write_bytecode = True
        sys.path.insert(0, os.path.abspath(args.hermes))
        import hermes_state as hs
        try:
            import agent.insights  # noqa: F401
            insights = True
        except ImportError:
            insights = False

        binary = args.sessiondb
        if not binary:
            binary = os.path.join(work, "sessiondb")
            run(["go", "build", "-o", binary, "./cmd/sessiondb"], cwd=REPO)
        sdb = lambda db, *a: run([binary, "--db", db, *a])

        with open(os.path.join(HERE, "reads", "meta.json"), encoding="utf-8") as f:
            ids = json.load(f)["sessions"]
        orig = os.path.join(work, "orig.db")
        shutil.copyfile(os.path.join(HERE, "state.db"), orig)
        report, failed = {"hermes_commit": run(["git", "-C", args.hermes, "rev-parse", "HEAD"]).stdout.strip(),
                          "insights": insights, "moves": {}}, False
        before = reads(hs, orig, ids, insights)
        report["original"] = figures(before)

        def check(name, move, reset_live, want=before):
            """Runs move (which returns the moved file and a note) and
            compares the file with want through Hermes' reads."""
            nonlocal failed
            try:
                moved, note = move()
            except Failed as e:
                failed = True
                report["moves"][name] = {"sessions": 0, "messages": 0, "hidden": 0, "usage_rows": 0,
                                         "differences": [f"the move failed: {e}"], "note": ""}
                return
            after = reads(hs, moved, ids, insights)
            diffs = compare(want, after, reset_live)
            failed = failed or bool(diffs)
            report["moves"][name] = {**figures(after), "differences": diffs, "note": note}

        def export_import():
            # export, then import into a fresh file Hermes made.
            exported = os.path.join(work, "export.jsonl")
            sdb(orig, "export", "-o", exported)
            target = fresh(hs, os.path.join(work, "imported.db"))
            out = sdb(target, "--json", "import", exported).stdout
            return target, f"import: {json.loads(out)}"
        check("export-import", export_import, True)

        def through_postgres():
            schema = f"check_moved_{os.getpid()}_{int(time.time())}"
            sep = "&" if "?" in args.postgres else "?"
            url = f"{args.postgres}{sep}search_path={schema}"
            try:
                there = json.loads(run([binary, "--json", "copy", "--from", orig, "--to", url]).stdout)
                back = fresh(hs, os.path.join(work, "back.db"))
                home = json.loads(run([binary, "--json", "copy", "--from", url, "--to", back]).stdout)
            finally:
                if shutil.which("psql"):
                    subprocess.run(["psql", args.postgres, "-qc", f"DROP SCHEMA IF EXISTS {schema} CASCADE"], capture_output=True)
            return back, f"to: {there}; back: {home}"
        if args.postgres:
            check("postgres", through_postgres, False)

        # Hermes' own export, imported by sessiondb and by Hermes.
        lines = os.path.join(HERE, "reads", "cli_sessions_export.jsonl")
        theirs = fresh(hs, os.path.join(work, "theirs.db"))
        db = hs.SessionDB(db_path=pathlib.Path(theirs))
        with open(lines, encoding="utf-8") as f:
            result = db.import_sessions([json.loads(line) for line in f])
        db.close()

        def hermes_export():
            ours = fresh(hs, os.path.join(work, "ours.db"))
            sdb(ours, "import", lines)
            return ours, f"Hermes' import: imported {result['imported']}, errors {result['errors']}"
        check("hermes-export", hermes_export, False, want=reads(hs, theirs, ids, insights))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"Hermes {report['hermes_commit'][:9]}; the original: {report['original']}")
        for name, m in report["moves"].items():
            state = "identical" if not m["differences"] else f"{len(m['differences'])} differences"
            print(f"{name}: {m['sessions']} sessions, {m['messages']} messages ({m['hidden']} hidden), "
                  f"{m['usage_rows']} usage rows: {state}")
            for d in m["differences"]:
                print("  " + d)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
