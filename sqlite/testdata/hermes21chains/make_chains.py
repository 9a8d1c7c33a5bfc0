#!/usr/bin/env python3
"""Build a state.db of compression chains through Hermes' own SessionDB
(schema 21) and record Hermes' own listing of it by last activity.

Usage:
    python3 make_chains.py --hermes /path/to/hermes-agent [--out DIR]

Everything written to the file goes through Hermes' public SessionDB
methods (create_session, append_message, end_session). What the script
records it records by calling list_sessions_rich(order_by_last_active=True),
Hermes' own read. Hermes stamps rows with time.time(): the script replaces
it with a clock set per step, advancing a second a call, so every run
writes the same file. Needs Python 3.11 and its standard library only.
"""

import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

BASE = 1767225600.0  # 2026-01-01T00:00:00Z
DAY = 86400.0


class Clock:
    """A time.time that returns self.now and then advances it a second."""

    def __init__(self):
        self.now = BASE

    def __call__(self):
        t = self.now
        self.now += 1.0
        return t

    def at(self, days):
        self.now = BASE + days * DAY


def build(db, clock):
    """The scenario: each chain's newest activity is somewhere else on it."""
    say = lambda sid, text: db.append_message(sid, "user", text)

    # old → old-2: the root is the oldest session here, its continuation
    # speaks last of all.
    clock.at(0)
    db.create_session("ch-old", "cli")
    say("ch-old", "the chain's first words")
    db.end_session("ch-old", "compression")
    db.create_session("ch-old-2", "cli", parent_session_id="ch-old")
    say("ch-old-2", "carried on")

    # b → b-2, whose /branch child and delegate speak after it: neither is
    # part of the chain.
    clock.at(1)
    db.create_session("ch-b", "cli")
    say("ch-b", "a chain with other children")
    db.end_session("ch-b", "compression")
    db.create_session("ch-b-2", "cli", parent_session_id="ch-b")
    say("ch-b-2", "the continuation")
    clock.at(7)
    db.create_session("ch-b-branch", "cli", parent_session_id="ch-b-2",
                      model_config={"_branched_from": "ch-b-2"})
    say("ch-b-branch", "a branch speaks later")
    clock.at(8)
    db.create_session("ch-b-delegate", "cli", parent_session_id="ch-b-2",
                      model_config={"_delegate_from": "ch-b-2"})
    say("ch-b-delegate", "a delegate speaks later still")

    # mid and quiet: plain sessions in between.
    clock.at(2)
    db.create_session("ch-mid", "cli")
    say("ch-mid", "a plain session")
    clock.at(4)
    db.create_session("ch-quiet", "telegram")
    say("ch-quiet", "another plain session")

    # late → late-c, a child made while its parent was live, that spoke
    # before the parent ended by compression: the chain takes its message.
    clock.at(3)
    db.create_session("ch-late", "cli")
    db.create_session("ch-late-c", "cli", parent_session_id="ch-late")
    clock.at(6)
    say("ch-late-c", "the child speaks before its parent ends")
    db.end_session("ch-late", "compression")

    # three hops: long → long-2 → long-3, the middle one newest.
    clock.at(5)
    db.create_session("ch-long", "cli")
    db.end_session("ch-long", "compression")
    db.create_session("ch-long-2", "cli", parent_session_id="ch-long")
    db.end_session("ch-long-2", "compression")
    db.create_session("ch-long-3", "cli", parent_session_id="ch-long-2")
    clock.at(9)
    say("ch-long-2", "the middle of a chain speaks last")

    clock.at(10)
    say("ch-old-2", "the tip speaks last")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hermes", default=os.environ.get("HERMES_CHECKOUT"), help="a Hermes checkout at schema 21")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)), help="where state.db and listing.json go")
    args = ap.parse_args()
    if not args.hermes or not os.path.isfile(os.path.join(args.hermes, "hermes_state.py")):
        ap.error("--hermes (or $HERMES_CHECKOUT) must name a Hermes checkout holding hermes_state.py")
    hermes, out = os.path.abspath(args.hermes), os.path.abspath(args.out)
    work = tempfile.mkdtemp(prefix="hermes21-chains-")
    try:
        os.environ["HERMES_HOME"] = work
        sys.path.insert(0, hermes)
        clock = Clock()
        time.time = clock
        import hermes_state as hs

        if hs.SCHEMA_VERSION != 21:
            sys.exit(f"this fixture is for schema 21; {hermes} is at {hs.SCHEMA_VERSION}")
        path = os.path.join(work, "state.db")
        db = hs.SessionDB(db_path=__import__("pathlib").Path(path))
        build(db, clock)
        db.close()
        os.makedirs(out, exist_ok=True)
        shutil.copyfile(path, os.path.join(out, "state.db"))
        db = hs.SessionDB(db_path=__import__("pathlib").Path(path))
        listings = {}
        for name, kw in (("order_by_last_active", {}), ("telegram", {"source": "telegram"}), ("cli", {"source": "cli"})):
            rows = db.list_sessions_rich(order_by_last_active=True, limit=50, **kw)
            listings[name] = [{"id": r["id"], "last_active": r["last_active"]} for r in rows]
        db.close()
        with open(os.path.join(out, "state.db"), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        commit = subprocess.run(["git", "-C", hermes, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        with open(os.path.join(out, "listing.json"), "w") as f:
            json.dump({"hermes_commit": commit, "schema_version": hs.SCHEMA_VERSION, "sqlite": sqlite3.sqlite_version,
                       "state_db_sha256": digest, "list_sessions_rich": listings}, f, indent=1, sort_keys=True)
            f.write("\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
