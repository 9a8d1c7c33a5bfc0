"""A pytest plugin for Hermes' own state tests: every state.db a test opens
with hermes_state.SessionDB, where no file exists yet, starts as a copy of
a file sessiondb made ($SESSIONDB_TEMPLATE), instead of the empty file
Hermes would create. Every path a SessionDB opens is appended to
$SESSIONDB_PATHS_LOG, so run_hermes_tests.py can run `sessiondb doctor` on
each file afterwards. Without $SESSIONDB_TEMPLATE the plugin only logs
(the control run: Hermes makes its own files).

Load it with `-p sessiondb_pytest_plugin` and this folder on PYTHONPATH.
It patches SessionDB once the test modules are collected, so hermes_state
is imported exactly when the suite itself imports it.
"""

import functools
import os
import shutil
from pathlib import Path


def _patch():
    import hermes_state

    cls = hermes_state.SessionDB
    if getattr(cls, "_sessiondb_patched", False):
        return
    original = cls.__init__
    template = os.environ.get("SESSIONDB_TEMPLATE", "")
    log = os.environ.get("SESSIONDB_PATHS_LOG", "")

    # wraps keeps the original's source visible to inspect (one Hermes test
    # reads SessionDB.__init__'s source).
    @functools.wraps(original)
    def __init__(self, db_path=None, read_only=False):
        # Hermes reads its module default at call time; so do we.
        path = Path(db_path or hermes_state.DEFAULT_DB_PATH)
        if template and not read_only and not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(template, path)
            os.chmod(path, 0o600)
        if log:
            with open(log, "a", encoding="utf-8") as f:
                f.write(f"{path}\n")
        return original(self, db_path=db_path, read_only=read_only)

    cls.__init__ = __init__
    cls._sessiondb_patched = True


def pytest_collection_finish(session):
    _patch()
