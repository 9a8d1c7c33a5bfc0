#!/usr/bin/env python3
"""Build sessiondb's schema-21 fixture through Hermes' own SessionDB, and
record what Hermes' own reads return for it.

Usage:
    python3 make_fixture.py --hermes /path/to/hermes-agent [--out DIR]

(or HERMES_CHECKOUT=/path/to/hermes-agent python3 make_fixture.py).

Everything written to the file goes through Hermes' public SessionDB
methods, in the order Hermes' agent, gateway and slash commands call them.
Nothing here writes SQL to the file. What the script records, it records by
calling Hermes' own reads (SessionDB, the insights engine, the
`hermes sessions export` command) and writes their results as JSON.

Reproducibility: Hermes stamps rows with time.time(). The script replaces
time.time with a clock that starts where the scenario sets it and advances
by one second on every call, so ids, timestamps and every recorded value
are the same on every run. It also refuses network connections: a read that
tried one would be recording this machine, not Hermes.

Needs Python 3.11 with the standard library, plus, for Hermes' insights
engine, the Debian packages python3-requests and python3-yaml. See README.md.
"""

import argparse
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import sys
import tempfile
import time

BASE = 1767225600.0  # 2026-01-01T00:00:00Z
DAY = 86400.0


class Clock:
    """A time.time that returns self.now and then advances it by step."""

    def __init__(self, now, step=1.0):
        self.now, self.step = now, step

    def __call__(self):
        t = self.now
        self.now += self.step
        return t

    def at(self, offset):
        self.now = BASE + offset


NETWORK_ATTEMPTS = []


def _refuse(*args, **kwargs):
    NETWORK_ATTEMPTS.append(repr(args)[:200])
    raise OSError("make_fixture.py: network refused")


def block_network():
    socket.socket.connect = _refuse
    socket.socket.connect_ex = _refuse
    socket.create_connection = _refuse
    socket.getaddrinfo = _refuse


def compact(obj):
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def dump(path, obj):
    """obj as JSON, one top-level entry a line (small, and a diff shows
    which entry changed)."""
    if isinstance(obj, dict) and obj:
        body = ",\n".join(compact(k) + ":" + compact(v) for k, v in sorted(obj.items()))
        text = "{\n" + body + "\n}"
    elif isinstance(obj, list) and obj:
        text = "[\n" + ",\n".join(compact(v) for v in obj) + "\n]"
    else:
        text = compact(obj)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")


# ── The scenario ────────────────────────────────────────────────────────────

TOOL_CALL_READ = [{
    "id": "call_read_1", "type": "function",
    "function": {"name": "read_file", "arguments": "{\"path\": \"parser.py\"}"},
}]
TOOL_CALL_TERMINAL = [{
    "id": "call_term_1", "type": "function",
    "function": {"name": "terminal", "arguments": "{\"command\": \"pytest -q\"}"},
}]
PNG_1x1 = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlE"
           "QVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")


def usage(db, sid, model, provider, inp, out, cost, *, base_url=None, mode=None,
          status="estimated", source="official_docs_snapshot", cache_read=0,
          cache_write=0, reasoning=0, actual=None):
    """One API call's usage, as the conversation loop records it."""
    db.update_token_counts(
        sid, input_tokens=inp, output_tokens=out, cache_read_tokens=cache_read,
        cache_write_tokens=cache_write, reasoning_tokens=reasoning,
        estimated_cost_usd=cost, actual_cost_usd=actual, cost_status=status,
        cost_source=source, billing_provider=provider, billing_base_url=base_url,
        billing_mode=mode, model=model, api_call_count=1,
    )


def build(db, clock):
    """Write every session of the fixture. Returns the ids, in creation order."""
    ids = []
    sonnet, opus = "anthropic/claude-sonnet-4", "anthropic/claude-opus-4"

    def create(sid, source="cli", **kw):
        db.create_session(sid, source, **kw)
        ids.append(sid)
        return sid

    # ── An old session whose delegate outlives it: prune_sessions deletes the
    # parent and orphans the child, which keeps its _delegate_from marker.
    clock.at(0)
    create("h21-old-parent", model=sonnet, cwd="/home/dev/legacy")
    db.append_message("h21-old-parent", "user", "Summarise the changelog for release 2.3")
    db.append_message("h21-old-parent", "assistant", "I will ask a helper to read it.")
    create("h21-orphan-delegate", model=sonnet, parent_session_id="h21-old-parent",
           model_config={"max_iterations": 20, "_delegate_from": "h21-old-parent"})
    db.append_message("h21-orphan-delegate", "user", "Read CHANGELOG.md and list the breaking changes")
    db.append_message("h21-orphan-delegate", "assistant", "", tool_calls=TOOL_CALL_READ)
    db.append_message("h21-orphan-delegate", "tool", "## 2.3\n- drop python 3.9", tool_name="read_file",
                      tool_call_id="call_read_1", effect_disposition="none")
    db.append_message("h21-orphan-delegate", "assistant", "Breaking: Python 3.9 support was dropped.")
    usage(db, "h21-orphan-delegate", sonnet, "anthropic", 900, 60, 0.0036)
    db.end_session("h21-orphan-delegate", "agent_close")
    usage(db, "h21-old-parent", sonnet, "anthropic", 400, 30, 0.0017)
    db.end_session("h21-old-parent", "user_exit")

    # ── A compression chain, live: root → mid → tip, titles numbered.
    clock.at(1 * DAY)
    root, mid, tip = "h21-lineage-root", "h21-lineage-mid", "h21-lineage-tip"
    create(root, model=sonnet, system_prompt="You are Hermes, a coding agent.",
           model_config={"max_iterations": 90}, cwd="/home/dev/project")
    db.update_session_cwd(root, "/home/dev/project", git_branch="main", git_repo_root="/home/dev/project")
    db.set_session_title(root, "Refactor parser")
    db.append_message(root, "user", "Refactor the parser module into smaller functions")
    db.append_message(root, "assistant", "", tool_calls=TOOL_CALL_READ, finish_reason="tool_calls")
    db.append_message(root, "tool", "def parse(src):\n    ...", tool_name="read_file",
                      tool_call_id="call_read_1", effect_disposition="none")
    db.append_message(root, "assistant", "The parser has one 400-line function; I will split it.",
                      finish_reason="stop", token_count=42)
    usage(db, root, sonnet, "anthropic", 5200, 310, 0.0203, cache_read=4000)
    for parent, child, n in ((root, mid, 2), (mid, tip, 3)):
        assert db.try_acquire_compression_lock(parent, "pid:100:fixture")
        title = db.get_session_title(parent)
        db.end_session(parent, "compression")
        create(child, model=sonnet, model_config={"max_iterations": 90},
               parent_session_id=parent, cwd="/home/dev/project")
        db.update_session_cwd(child, "/home/dev/project", git_branch="main",
                              git_repo_root="/home/dev/project")
        db.set_session_title(child, db.get_next_title_in_lineage(title))
        db.release_compression_lock(parent, "pid:100:fixture")
        db.append_message(child, "user", f"[Summary of the conversation so far, part {n - 1}] "
                          "The parser is being split into tokenize, parse_expr and parse_stmt.")
        db.append_message(child, "assistant", f"Continuing the parser refactor, step {n}.")
        usage(db, child, sonnet, "anthropic", 3000 + 100 * n, 200, 0.0120 + 0.001 * n)
    db.append_message(tip, "user", "Now run the tests")
    db.append_message(tip, "assistant", "", tool_calls=TOOL_CALL_TERMINAL, finish_reason="tool_calls")
    db.append_message(tip, "tool", "12 passed", tool_name="terminal", tool_call_id="call_term_1",
                      effect_disposition="unknown")
    db.append_message(tip, "assistant", "All 12 tests pass.", finish_reason="stop")

    # ── A compression chain the user archived (set_session_archived archives
    # the whole chain from any of its sessions).
    clock.at(2 * DAY)
    aroot, atip = "h21-archived-root", "h21-archived-tip"
    create(aroot, model=sonnet, cwd="/home/dev/project-x")
    db.set_session_title(aroot, "Old experiment")
    db.append_message(aroot, "user", "Try the experimental tokenizer on the corpus")
    db.append_message(aroot, "assistant", "The experimental tokenizer is 3% slower.")
    usage(db, aroot, sonnet, "anthropic", 1500, 90, 0.0059)
    db.end_session(aroot, "compression")
    create(atip, model=sonnet, parent_session_id=aroot, cwd="/home/dev/project-x")
    db.set_session_title(atip, db.get_next_title_in_lineage("Old experiment"))
    db.append_message(atip, "user", "[Summary] Experimental tokenizer measured; abandon it.")
    db.append_message(atip, "assistant", "Agreed, abandoning the experiment.")
    db.end_session(atip, "user_exit")
    assert db.set_session_archived(atip, True)

    # ── In-place compaction: one session id for life, the summarised-away
    # turns kept as active=0, compacted=1.
    clock.at(3 * DAY)
    comp = create("h21-compacted", model=sonnet, cwd="/home/dev/project/api")
    db.update_session_cwd(comp, "/home/dev/project/api", git_branch="feature/api",
                          git_repo_root="/home/dev/project")
    db.set_session_title(comp, "Compacted API work")
    db.append_message(comp, "user", "Design the flamingo endpoint for the API")
    db.append_message(comp, "assistant", "", tool_calls=TOOL_CALL_READ, finish_reason="tool_calls")
    db.append_message(comp, "tool", "routes = {}", tool_name="read_file", tool_call_id="call_read_1",
                      effect_disposition="none")
    db.append_message(comp, "assistant", "The flamingo endpoint goes under /v2/flamingo.")
    db.append_message(comp, "user", "Add pagination to the flamingo endpoint")
    db.append_message(comp, "assistant", "Pagination added with a cursor parameter.")
    usage(db, comp, sonnet, "anthropic", 8000, 700, 0.0345)
    db.archive_and_compact(comp, [
        {"role": "user", "content": "[Compacted summary] We designed /v2/flamingo with cursor pagination."},
        {"role": "assistant", "content": "Understood; continuing from the summary."},
    ])
    db.append_message(comp, "user", "Write the OpenAPI description")
    db.append_message(comp, "assistant", "Here is the OpenAPI description of the endpoint.")
    usage(db, comp, sonnet, "anthropic", 1200, 400, 0.0096)

    # ── Rewind: the user takes back the last turns and asks again. The
    # rewound rows stay on disk as active=0, compacted=0.
    clock.at(4 * DAY)
    rew = create("h21-rewound", model=sonnet, cwd="/home/dev/project")
    db.append_message(rew, "user", "Pick a name for the build tool")
    db.append_message(rew, "assistant", "How about forge?")
    target = db.append_message(rew, "user", "Something with zeppelin in it")
    db.append_message(rew, "assistant", "zeppelin-build, then.")
    db.append_message(rew, "user", "Make it shorter")
    db.append_message(rew, "assistant", "zep.")
    db.rewind_to_message(rew, target)
    db.append_message(rew, "user", "Something with kite in it")
    db.append_message(rew, "assistant", "kitebuild, then.")
    usage(db, rew, sonnet, "anthropic", 700, 50, 0.0028)
    db.end_session(rew, "user_exit")

    # A rewind undone: restore_rewound makes the rows active again.
    res = create("h21-restored", model=sonnet, cwd="/home/dev/project")
    db.append_message(res, "user", "What is the default port?")
    db.append_message(res, "assistant", "8080.")
    target = db.append_message(res, "user", "And the admin port?")
    db.append_message(res, "assistant", "9090.")
    db.rewind_to_message(res, target)
    db.restore_rewound(res, target)
    db.end_session(res, "user_exit")

    # ── Multimodal messages: content as a list of parts.
    clock.at(5 * DAY)
    mm = create("h21-multimodal", model=opus, cwd="/home/dev/photos")
    db.append_message(mm, "user", [
        {"type": "text", "text": "What bird is in this picture?"},
        {"type": "image_url", "image_url": {"url": PNG_1x1}},
    ])
    db.append_message(mm, "assistant", "A brown pelican, standing on a pier.")
    db.append_message(mm, "user", [{"type": "image_url", "image_url": {"url": PNG_1x1, "detail": "low"}}])
    db.append_message(mm, "assistant", "The same pelican, now in flight.")
    usage(db, mm, opus, "anthropic", 2100, 80, 0.0375)
    db.end_session(mm, "user_exit")

    # ── A model switch mid-session (/model): usage rows for both routes.
    clock.at(6 * DAY)
    ms = create("h21-model-switch", model=sonnet, system_prompt="You are Hermes.",
                model_config={"max_iterations": 90, "reasoning_config": {"effort": "medium"}},
                cwd="/home/dev/project")
    db.set_session_title(ms, "Switch models")
    db.append_message(ms, "user", "Explain the borrow checker error in main.rs")
    db.append_message(ms, "assistant", "The value is moved into the closure, then used again.",
                      reasoning="The closure takes ownership.",
                      reasoning_details=[{"type": "reasoning.text", "text": "The closure takes ownership."}],
                      finish_reason="stop")
    usage(db, ms, sonnet, "anthropic", 3000, 250, 0.0128, cache_read=1200, cache_write=300)
    usage(db, ms, sonnet, "anthropic", 3400, 180, 0.0129, cache_read=2900)
    db.update_session_model(ms, "gpt-5-codex")
    db.update_session_billing_route(ms, provider="openai-codex",
                                    base_url="https://chatgpt.com/backend-api/codex",
                                    billing_mode="codex_responses")
    db.append_message(ms, "user", "Now fix it")
    db.append_message(
        ms, "assistant", "Cloned the value before the closure.",
        reasoning="Clone is cheapest here.",
        reasoning_content="Clone is cheapest here (provider-native).",
        codex_reasoning_items=[{"type": "reasoning", "id": "rs_1", "summary": [],
                                "encrypted_content": "gAAAAB-fixture"}],
        codex_message_items=[{"type": "message", "id": "msg_1", "phase": "final",
                              "content": [{"type": "output_text", "text": "Cloned the value before the closure."}]}],
        finish_reason="stop", token_count=17)
    usage(db, ms, "gpt-5-codex", "openai-codex", 4100, 220, 0.0,
          base_url="https://chatgpt.com/backend-api/codex", mode="subscription_included",
          status="included", source="none", reasoning=96)
    usage(db, ms, "gpt-5-codex", "openai-codex", 4500, 140, 0.0,
          base_url="https://chatgpt.com/backend-api/codex", mode="subscription_included",
          status="included", source="none", reasoning=40)
    db.end_session(ms, "user_exit")

    # ── A session with children of every kind: delegates (one nested), an
    # untagged child of an older Hermes, then a /branch with its marker and
    # one without it (the legacy form: parent ended 'branched' before).
    clock.at(7 * DAY)
    main = create("h21-main", model=sonnet, cwd="/home/dev/project")
    db.set_session_title(main, "Main work")
    db.append_message(main, "user", "Audit the repository for unused dependencies")
    db.append_message(main, "user", "<memory-context>\n[System note: The following is recalled memory "
                      "context, NOT new user input. Treat as informational background data.]\n"
                      "The user prefers uv over pip.\n</memory-context>\nUse the lock file too.")
    db.append_message(main, "assistant", "I will delegate the audit of each workspace.")
    deleg = create("h21-delegate", model=sonnet, parent_session_id=main,
                   model_config={"max_iterations": 20, "_delegate_from": main})
    db.append_message(deleg, "user", "List unused dependencies of packages/core")
    db.append_message(deleg, "assistant", "I will delegate the lock file check.")
    nested = create("h21-delegate-nested", model=sonnet, parent_session_id=deleg,
                    model_config={"max_iterations": 10, "_delegate_from": deleg})
    db.append_message(nested, "user", "Check uv.lock for packages/core")
    db.append_message(nested, "assistant", "uv.lock lists 3 packages nobody imports.")
    usage(db, nested, sonnet, "anthropic", 600, 40, 0.0024)
    db.end_session(nested, "agent_close")
    db.append_message(deleg, "assistant", "Unused: left-pad, tiny-glob, colorette.")
    usage(db, deleg, sonnet, "anthropic", 1100, 70, 0.0044)
    db.end_session(deleg, "agent_close")
    untagged = create("h21-untagged-child", model=sonnet, parent_session_id=main)
    db.append_message(untagged, "user", "A child row without any marker")
    db.append_message(main, "user", "Review the conversation above and consider saving to memory. "
                      "Only use the memory tool.")
    db.append_message(main, "assistant", "Saved: the user prefers uv.")
    db.append_message(main, "assistant", "Three unused dependencies found in packages/core.")
    usage(db, main, sonnet, "anthropic", 2500, 150, 0.0098)
    db.end_session(main, "branched")
    branch = create("h21-branch", model=sonnet, parent_session_id=main, cwd="/home/dev/project",
                    model_config={"max_iterations": 90, "reasoning_config": None, "_branched_from": main})
    for role, text in (("user", "Audit the repository for unused dependencies"),
                       ("assistant", "Three unused dependencies found in packages/core.")):
        db.append_message(branch, role, text)
    db.set_session_title(branch, db.get_next_title_in_lineage("Main work"))
    db.append_message(branch, "user", "Remove them on a branch")
    db.append_message(branch, "assistant", "Removed on branch deps-cleanup.")
    legacy = create("h21-branch-legacy", model=sonnet, parent_session_id=main, cwd="/home/dev/project")
    db.append_message(legacy, "user", "Try removing them with pip instead")
    db.append_message(legacy, "assistant", "pip cannot edit uv.lock; keep uv.")

    # ── A gateway session in a Telegram group: routing peer, observed group
    # messages with platform ids, a pending handoff, a compression cooldown,
    # a held compression lock, a routing entry, and totals the gateway sets
    # absolutely (no per-model rows).
    clock.at(8 * DAY)
    tg = "h21-telegram"
    key = "agent:main:telegram:group:-1001234:7"
    create(tg, source="telegram", user_id="tg-4242", session_key=key, chat_id="-1001234",
           chat_type="group", thread_id="7", model=sonnet)
    db.record_gateway_session_peer(
        tg, source="telegram", user_id="tg-4242", session_key=key, chat_id="-1001234",
        chat_type="group", thread_id="7", display_name="Ada (Dev chat)",
        origin_json=json.dumps({"platform": "telegram", "chat_id": "-1001234", "thread_id": "7",
                                "chat_name": "Dev chat", "user_name": "Ada"}))
    db.append_message(tg, "user", "[Bob] the deploy failed again", platform_message_id="tg-1001", observed=True)
    db.append_message(tg, "user", "[Carol] it is the migration step", platform_message_id="tg-1002", observed=True)
    db.append_message(tg, "user", "@hermes why did the deploy fail?", platform_message_id="tg-1003")
    db.append_message(tg, "assistant", "The migration step timed out; it needs a longer lock timeout.")
    db.update_token_counts(tg, input_tokens=5400, output_tokens=260, estimated_cost_usd=0.0201,
                           cost_status="estimated", cost_source="official_docs_snapshot",
                           billing_provider="anthropic", model=sonnet, api_call_count=2, absolute=True)
    db.set_expiry_finalized(tg, False)
    assert db.request_handoff(tg, "discord")
    db.record_compression_failure_cooldown(tg, BASE + 30 * DAY, "summary model timed out")
    db.set_compression_fallback_streak(tg, 2)
    assert db.try_acquire_compression_lock(tg, "pid:4242:gateway", ttl_seconds=600)
    db.save_gateway_routing_entry(key, json.dumps({"session_id": tg, "session_key": key,
                                                   "platform": "telegram", "chat_type": "group"}))

    # ── An ended session in Chinese (trigram search) with an observed reply.
    clock.at(9 * DAY)
    cjk = create("h21-cjk", model=sonnet, cwd="/home/dev/project")
    db.set_session_title(cjk, "部署")
    db.append_message(cjk, "user", "请帮我部署大别山项目")
    db.append_message(cjk, "assistant", "好的，我来部署大别山项目。")
    usage(db, cjk, sonnet, "anthropic", 800, 60, 0.0033)
    db.end_session(cjk, "user_exit")

    # The old parent goes the way Hermes' retention takes it: prune_sessions
    # deletes it and orphans its delegate.
    clock.at(10 * DAY)
    assert db.prune_sessions(older_than_days=None, started_before=BASE + 1) == 1
    ids.remove("h21-old-parent")
    return ids


# ── What Hermes' reads return ───────────────────────────────────────────────

def calls(fn, cases):
    """[{"name", "args", "result"}] for fn(**args) of each (name, args)."""
    return [{"name": name, "args": args, "result": fn(**args)} for name, args in cases]


def record(db, ids, out):
    reads = os.path.join(out, "reads")
    os.makedirs(reads, exist_ok=True)
    per = lambda fn: {sid: fn(sid) for sid in ids}

    dump(os.path.join(reads, "get_session.json"), per(db.get_session))
    dump(os.path.join(reads, "get_messages.json"), {
        "active": per(db.get_messages),
        "include_inactive": per(lambda s: db.get_messages(s, include_inactive=True)),
    })
    tips = ["h21-lineage-tip", "h21-archived-tip", "h21-branch", "h21-delegate-nested"]
    dump(os.path.join(reads, "get_messages_as_conversation.json"), {
        "default": per(db.get_messages_as_conversation),
        "include_inactive": per(lambda s: db.get_messages_as_conversation(s, include_inactive=True)),
        "include_ancestors": {s: db.get_messages_as_conversation(s, include_ancestors=True) for s in tips},
    })
    dump(os.path.join(reads, "list_sessions_rich.json"), calls(db.list_sessions_rich, [
        ("default", {}),
        ("include_archived", {"include_archived": True}),
        ("archived_only", {"archived_only": True}),
        ("include_children", {"include_children": True, "include_archived": True, "limit": 100}),
        ("no_projection", {"project_compression_tips": False}),
        ("cwd_project", {"cwd_prefix": "/home/dev/project"}),
        ("cwd_project_slash", {"cwd_prefix": "/home/dev/project/"}),
        ("cwd_project_api", {"cwd_prefix": "/home/dev/project/api"}),
        ("min_messages_4", {"min_message_count": 4}),
        ("source_telegram", {"source": "telegram"}),
        ("exclude_telegram", {"exclude_sources": ["telegram"]}),
        ("order_by_last_active", {"order_by_last_active": True}),
        ("order_by_last_active_archived", {"order_by_last_active": True, "include_archived": True}),
        ("search_query_parser", {"order_by_last_active": True, "search_query": "parser"}),
        ("id_query_lineage_root", {"order_by_last_active": True, "id_query": "lineage-root"}),
        ("limit_offset", {"limit": 3, "offset": 2}),
    ]))
    dump(os.path.join(reads, "session_count.json"), calls(db.session_count, [
        ("default", {}),
        ("include_archived", {"include_archived": True}),
        ("archived_only", {"archived_only": True}),
        ("exclude_children", {"exclude_children": True}),
        ("exclude_children_archived", {"exclude_children": True, "include_archived": True}),
        ("cwd_project", {"cwd_prefix": "/home/dev/project"}),
        ("min_messages_4", {"min_message_count": 4}),
        ("source_telegram", {"source": "telegram"}),
    ]))
    dump(os.path.join(reads, "message_count.json"), {"total": db.message_count(), "per_session": per(db.message_count)})
    dump(os.path.join(reads, "lineage.json"), {
        "get_compression_lineage": per(db.get_compression_lineage),
        "get_compression_tip": per(db.get_compression_tip),
        "resolve_resume_session_id": per(db.resolve_resume_session_id),
    })
    dump(os.path.join(reads, "export.json"), {
        "export_session": per(db.export_session),
        # A lineage export differs from export_session only on a chain.
        "export_session_lineage": {s: db.export_session_lineage(s) for s in (
            "h21-lineage-root", "h21-lineage-mid", "h21-lineage-tip", "h21-archived-root",
            "h21-archived-tip", "h21-branch")},
    })
    cli_export(db, reads)
    queries = ["parser", "flamingo", "zeppelin", "kite", "pelican", "read_file", "大别山", "deploy", "部署大别山"]
    search = []
    for q in queries:
        for sort in (None, "newest", "oldest"):
            search.append({"name": f"{q}/{sort or 'rank'}", "args": {"query": q, "sort": sort},
                           "result": db.search_messages(q, sort=sort)})
        search.append({"name": f"{q}/include_inactive", "args": {"query": q, "include_inactive": True},
                       "result": db.search_messages(q, include_inactive=True)})
    search.append({"name": "deploy/role_user", "args": {"query": "deploy", "role_filter": ["user"]},
                   "result": db.search_messages("deploy", role_filter=["user"])})
    search.append({"name": "deploy/exclude_telegram", "args": {"query": "deploy", "exclude_sources": ["telegram"]},
                   "result": db.search_messages("deploy", exclude_sources=["telegram"])})
    dump(os.path.join(reads, "search_messages.json"), search)

    dump(os.path.join(reads, "gateway.json"), {
        "get_handoff_state": db.get_handoff_state("h21-telegram"),
        "list_pending_handoffs": db.list_pending_handoffs(),
        "get_compression_failure_cooldown": db.get_compression_failure_cooldown("h21-telegram"),
        "get_compression_fallback_streak": db.get_compression_fallback_streak("h21-telegram"),
        "get_compression_lock_holder": db.get_compression_lock_holder("h21-telegram"),
        "load_gateway_routing_entries": db.load_gateway_routing_entries(),
        "list_gateway_sessions": db.list_gateway_sessions(active_only=False),
    })
    record_insights(db, reads)


def record_insights(db, reads):
    """The per-model split of Hermes' insights: its breakdown of the last
    365 days, and the rows its two queries read."""
    try:
        from agent.insights import InsightsEngine
    except ImportError as e:
        sys.exit(f"Hermes' insights engine does not import ({e}): on Debian, "
                 "apt-get install python3-requests python3-yaml and run /usr/bin/python3")

    engine = InsightsEngine(db)
    cutoff = time.time() - 365 * DAY
    sessions = engine._get_sessions(cutoff)
    dump(os.path.join(reads, "insights.json"), {
        "cutoff": cutoff,
        "sessions": sessions,
        "model_usage_rows": engine._get_model_usage(cutoff),
        "model_breakdown": engine._compute_model_breakdown(sessions, cutoff),
        "session_model_usage": [dict(r) for r in db._conn.execute(
            "SELECT * FROM session_model_usage ORDER BY session_id, model, billing_provider")],
    })


def cli_export(db, reads):
    """What `hermes sessions export -` prints. The command's JSONL branch
    without a filter or --redact is db.export_all(source=None), each
    session one json.dumps(..., ensure_ascii=False) line; hermes_cli.main
    needs packages Debian lacks (rich), so that branch's two calls run here
    instead of the command."""
    with open(os.path.join(reads, "cli_sessions_export.jsonl"), "w", encoding="utf-8") as f:
        for s in db.export_all(source=None):
            f.write(json.dumps(s, ensure_ascii=False) + "\n")


def record_import(hs, work, reads, ids):
    """Hermes' own import of its own export: import_sessions() of the lines
    `hermes sessions export -` printed (cli_sessions_export.jsonl), into a
    state.db Hermes has just made, and what its reads return for the
    result (imported by sessiondb, the same lines must read the same)."""
    path = os.path.join(work, "imported.db")
    db = hs.SessionDB(db_path=__import__("pathlib").Path(path))
    with open(os.path.join(reads, "cli_sessions_export.jsonl"), encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    result = db.import_sessions(lines)
    per = lambda fn: {sid: fn(sid) for sid in ids}
    q = lambda sql: [dict(r) for r in db._conn.execute(sql)]
    dump(os.path.join(reads, "import_sessions.json"), {
        "result": result,
        "get_session": per(db.get_session),
        "get_messages": per(lambda s: db.get_messages(s, include_inactive=True)),
        "get_messages_as_conversation": per(db.get_messages_as_conversation),
        # The stored rows as they are (content and JSON columns as text).
        "session_rows": q("SELECT * FROM sessions ORDER BY id"),
        "message_rows": q("SELECT * FROM messages ORDER BY id"),
        "session_model_usage": q("SELECT * FROM session_model_usage ORDER BY session_id, model"),
    })
    db.close()


WRITES = [
    # (name, method, args, clock offset from BASE or None)
    ("delete_main", "delete_session", {"session_id": "h21-main"}, None),
    ("delete_delegate", "delete_session", {"session_id": "h21-delegate"}, None),
    ("delete_lineage_mid", "delete_session", {"session_id": "h21-lineage-mid"}, None),
    ("delete_multimodal", "delete_session", {"session_id": "h21-multimodal"}, None),
    ("delete_missing", "delete_session", {"session_id": "h21-missing"}, None),
    ("clear_multimodal", "clear_messages", {"session_id": "h21-multimodal"}, None),
    # started_before = 1767830401 (h21-main's start + 1 s): h21-main and
    # every ended cli session before it, not its delegates.
    ("prune_cli_1_day", "prune_sessions", {"older_than_days": 1, "source": "cli"}, 1767830401.0 + DAY - BASE),
    ("archive_lineage_mid", "set_session_archived", {"session_id": "h21-lineage-mid", "archived": True}, None),
    ("unarchive_archived_tip", "set_session_archived", {"session_id": "h21-archived-tip", "archived": False}, None),
    ("archive_main", "set_session_archived", {"session_id": "h21-main", "archived": True}, None),
    ("archive_branch", "set_session_archived", {"session_id": "h21-branch", "archived": True}, None),
    ("archive_missing", "set_session_archived", {"session_id": "h21-missing", "archived": True}, None),
]


def record_writes(hs, work, out, clock):
    """Hermes' own deletes, prune and archive, each on a fresh copy of
    state.db: the call's result, then what the file holds (every session's
    parent and archived flag, messages and usage rows by session) and what
    this Python's SQLite says of it (integrity_check and FTS5's own
    integrity-check of both full-text tables)."""
    cases = []
    for name, method, args, offset in WRITES:
        path = os.path.join(work, f"write-{name}.db")
        shutil.copyfile(os.path.join(out, "state.db"), path)
        clock.at(offset if offset is not None else 11 * DAY)
        db = hs.SessionDB(db_path=__import__("pathlib").Path(path))
        result = getattr(db, method)(**args)
        db.close()
        c = sqlite3.connect(path)
        q = lambda sql: c.execute(sql).fetchall()
        fts = {}
        for t in ("messages_fts", "messages_fts_trigram"):
            try:
                c.execute(f"INSERT INTO {t}({t}) VALUES('integrity-check')")
                fts[t] = "ok"
            except sqlite3.DatabaseError as e:
                fts[t] = str(e)
        cases.append({
            "name": name, "call": method, "args": args, "result": result,
            "sessions": {sid: {"parent_session_id": parent, "archived": archived}
                         for sid, parent, archived in q("SELECT id, parent_session_id, archived FROM sessions ORDER BY id")},
            "messages": dict(q("SELECT session_id, count(*) FROM messages GROUP BY session_id ORDER BY session_id")),
            "session_model_usage": dict(q("SELECT session_id, count(*) FROM session_model_usage GROUP BY session_id ORDER BY session_id")),
            "integrity_check": [r[0] for r in q("PRAGMA integrity_check")],
            "fts_integrity_check": fts,
        })
        c.close()
    dump(os.path.join(out, "reads", "writes.json"), cases)


def make_empty(hs, work, out):
    """A state.db the current Hermes makes and closes with nothing in it:
    the fresh file an import or a copy keeps every field in."""
    path = os.path.join(work, "empty.db")
    hs.SessionDB(db_path=__import__("pathlib").Path(path)).close()
    for suffix in ("-wal", "-shm", "-journal"):
        if os.path.exists(path + suffix):
            sys.exit(f"empty.db{suffix} left after close")
    shutil.copyfile(path, os.path.join(out, "empty.db"))
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hermes", default=os.environ.get("HERMES_CHECKOUT"),
                    help="a Hermes checkout (default: $HERMES_CHECKOUT)")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)),
                    help="where state.db and reads/ go (default: beside this script)")
    args = ap.parse_args()
    if not args.hermes or not os.path.isfile(os.path.join(args.hermes, "hermes_state.py")):
        ap.error("--hermes (or $HERMES_CHECKOUT) must name a Hermes checkout holding hermes_state.py")
    hermes = os.path.abspath(args.hermes)
    out = os.path.abspath(args.out)

    work = tempfile.mkdtemp(prefix="hermes21-fixture-")
    try:
        home = os.path.join(work, "home")
        os.makedirs(home)
        # Hermes resolves its default state.db from $HERMES_HOME when
        # hermes_state is imported; the CLI export reads that file.
        os.environ["HERMES_HOME"] = home
        os.environ.pop("HERMES_SESSION_SOURCE", None)
        sys.path.insert(0, hermes)
        os.chdir(work)
        block_network()
        clock = Clock(BASE)
        time.time = clock
        import hermes_state as hs

        if hs.SCHEMA_VERSION != 21:
            sys.exit(f"this fixture is for schema 21; {hermes} is at {hs.SCHEMA_VERSION}")
        path = os.path.join(home, "state.db")
        db = hs.SessionDB(db_path=__import__("pathlib").Path(path))
        ids = build(db, clock)
        db.close()
        for suffix in ("-wal", "-shm", "-journal"):
            if os.path.exists(path + suffix):
                sys.exit(f"state.db{suffix} left after close")
        shutil.rmtree(os.path.join(out, "reads"), ignore_errors=True)
        os.makedirs(out, exist_ok=True)
        shutil.copyfile(path, os.path.join(out, "state.db"))

        # Reads run on the working copy, opened again as Hermes opens it.
        clock.at(11 * DAY)
        db = hs.SessionDB(db_path=__import__("pathlib").Path(path))
        record(db, ids, out)
        db.close()
        record_import(hs, work, os.path.join(out, "reads"), ids)
        record_writes(hs, work, out, clock)
        empty_digest = make_empty(hs, work, out)
        if NETWORK_ATTEMPTS:
            sys.exit(f"Hermes tried the network: {NETWORK_ATTEMPTS}")
        with open(os.path.join(out, "state.db"), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        git = os.popen(f"git -C {hermes} rev-parse HEAD 2>/dev/null").read().strip()
        dump(os.path.join(out, "reads", "meta.json"), {
            "hermes_commit": git,
            "schema_version": hs.SCHEMA_VERSION,
            "python": sys.version.split()[0],
            "sqlite": sqlite3.sqlite_version,
            "sessions": ids,
            "state_db_sha256": digest,
            "empty_db_sha256": empty_digest,
        })
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
