#!/usr/bin/env python3
"""Run Hermes' own state tests on files sessiondb made, then `sessiondb
doctor` on every file those tests wrote.

Usage:
    python3 run_hermes_tests.py --hermes /path/to/hermes-agent [--sessiondb BIN]
        [--modes hermes,empty,written,examples] [--python /usr/bin/python3]

Each mode runs tests/test_hermes_state.py and tests/hermes_state/ of the
checkout with sessiondb_pytest_plugin.py, which makes every state.db a test
opens (where none exists yet) start as a copy of one template:

  hermes    no template: Hermes makes its own files (the control run)
  empty     a store `sessiondb import` made from no input
  written   the examples imported by sessiondb, then every session deleted
            by `sessiondb delete`: written into, and empty again
  examples  the examples imported and left in (tests that count rows fail
            on the extra sessions; read those failures as such)

Then `sessiondb doctor` runs on each file the tests opened that still
exists (writable, so that it checks the search index too; a file whose only
problem is its 0644 mode, which Hermes leaves, is counted apart). The report gives, per mode, pytest's figures, the failing
tests, and doctor's figures with the first lines of each failure; --json
prints it as JSON. The checkout is only read (no bytecode, no pytest cache).
The exit status is 0 when every mode ran, whatever it found.

Needs pytest for the Python given, and Go (to build sessiondb) unless
--sessiondb names a binary.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
MODES = ("hermes", "empty", "written", "examples")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def sessiondb(binary, db, *args):
    r = run([binary, "--db", db, *args])
    if r.returncode != 0:
        sys.exit(f"{binary} --db {db} {' '.join(args)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r.stdout


def template(mode, binary, examples, work):
    """The file every test's state.db starts from; "" for the control run."""
    if mode == "hermes":
        return ""
    path = os.path.join(work, f"template-{mode}.db")
    if mode == "empty":
        sessiondb(binary, path, "import", os.devnull)
        return path
    sessiondb(binary, path, "import", examples)
    if mode == "written":
        with open(examples, encoding="utf-8") as f:
            ids = [json.loads(line)["id"] for line in f if line.strip()]
        for sid in ids:
            sessiondb(binary, path, "delete", sid, "--yes")
        left = sessiondb(binary, path, "--json", "sessions", "--children", "--archived", "--limit", "1000")
        if json.loads(left):
            sys.exit(f"sessions left in {path} after deleting every one: {left[:200]}")
    return path


def pytest_figures(junit):
    """(figures, failing test ids) from pytest's JUnit XML."""
    root = ET.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    fig = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    failing = []
    for s in suites:
        for k in fig:
            fig[k] += int(s.get(k, 0))
        for case in s.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failing.append(f"{case.get('classname')}::{case.get('name')}")
    fig["passed"] = fig["tests"] - fig["failures"] - fig["errors"] - fig["skipped"]
    return fig, failing


MODE_PROBLEM = "problem: the file is readable by others"


def doctor(binary, paths):
    """doctor on each file, writable so that it checks the search index too
    (the tests are over; the files are theirs). A file whose one problem is
    its mode (Hermes leaves the umask's 0644) counts apart."""
    def one(p):
        r = run([binary, "--db", p, "doctor"])
        return p, r.returncode, (r.stdout + r.stderr).strip().splitlines()

    ok, mode_only, failed = 0, 0, []
    with ThreadPoolExecutor(max_workers=2) as pool:
        for p, code, lines in pool.map(one, paths):
            problems = [l for l in lines if l.startswith("problem:")]
            if code == 0:
                ok += 1
            elif problems and all(l.startswith(MODE_PROBLEM) for l in problems):
                mode_only += 1
            else:
                failed.append({"path": p, "exit": code, "output": lines[:12]})
    return {"files": len(paths), "ok": ok, "mode_only": mode_only, "failed": failed}


def run_mode(mode, args, binary, work):
    mdir = os.path.join(work, mode)
    os.makedirs(mdir)
    log = os.path.join(mdir, "paths.log")
    junit = os.path.join(mdir, "junit.xml")
    env = dict(os.environ)
    env.update({
        "SESSIONDB_TEMPLATE": template(mode, binary, args.examples, work),
        "SESSIONDB_PATHS_LOG": log,
        "HERMES_HOME": os.path.join(mdir, "hermes-home"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join(p for p in (HERE, args.hermes, env.get("PYTHONPATH", "")) if p),
    })
    cmd = [args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "sessiondb_pytest_plugin",
           f"--basetemp={os.path.join(mdir, 'tmp')}", f"--junitxml={junit}",
           "tests/test_hermes_state.py", "tests/hermes_state/"]
    r = run(cmd, cwd=args.hermes, env=env)
    if not os.path.exists(junit):
        sys.exit(f"pytest wrote no report (exit {r.returncode}):\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    fig, failing = pytest_figures(junit)
    paths = []
    if os.path.exists(log):
        with open(log, encoding="utf-8") as f:
            for p in dict.fromkeys(line.strip() for line in f):
                if p and os.path.isfile(p) and os.path.getsize(p) > 0:
                    paths.append(p)
    return {"mode": mode, "pytest": fig, "failing": failing, "doctor": doctor(binary, paths)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hermes", default=os.environ.get("HERMES_CHECKOUT"), help="a Hermes checkout")
    ap.add_argument("--sessiondb", help="the sessiondb binary (default: go build ./cmd/sessiondb)")
    ap.add_argument("--python", default="/usr/bin/python3", help="a Python with pytest")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--examples", default=os.path.join(REPO, "examples", "conversations.jsonl"))
    ap.add_argument("--keep", action="store_true", help="keep the working folder and say where")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args()
    if not args.hermes or not os.path.isfile(os.path.join(args.hermes, "hermes_state.py")):
        ap.error("--hermes (or $HERMES_CHECKOUT) must name a Hermes checkout")
    args.hermes = os.path.abspath(args.hermes)
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            ap.error(f"unknown mode {m!r}; modes are {', '.join(MODES)}")

    work = tempfile.mkdtemp(prefix="hermes-tests-")
    try:
        binary = args.sessiondb
        if not binary:
            binary = os.path.join(work, "sessiondb")
            r = run(["go", "build", "-o", binary, "./cmd/sessiondb"], cwd=REPO)
            if r.returncode != 0:
                sys.exit(f"go build: {r.stderr}")
        binary = os.path.abspath(binary)
        report = [run_mode(m, args, binary, work) for m in modes]
    finally:
        if args.keep:
            print(f"working folder: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)

    if args.json:
        print(json.dumps(report, indent=1))
        return
    for r in report:
        p, d = r["pytest"], r["doctor"]
        print(f"{r['mode']}: {p['passed']} passed, {p['failures']} failed, {p['errors']} errors, "
              f"{p['skipped']} skipped; doctor: {d['ok']} of {d['files']} files pass, "
              f"{d['mode_only']} only readable by others (0644), {len(d['failed'])} fail")
        for t in r["failing"]:
            print(f"  FAILED {t}")
        for f in d["failed"]:
            print(f"  doctor exit {f['exit']} on {f['path']}")
            for line in f["output"]:
                print(f"    {line}")


if __name__ == "__main__":
    main()
