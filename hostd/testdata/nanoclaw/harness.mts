// Runs NanoClaw's own code (its router, permissions module and Chat SDK
// bridge, from a checkout named by $NANOCLAW_DIR) to settle what its
// approval rows hold, for hostd's cross-approval tests. See run.sh.
//
//   fixtures OUT_DIR      route messages through NanoClaw's Chat SDK bridge
//                         and router into a fresh v2.db until its permissions
//                         module stores an unknown-sender and an unknown-chat
//                         request; write each row to OUT_DIR as JSON
//   replay V2_DB OUT_JSON click Approve (or the first Connect) on every
//                         pending request in V2_DB (a file sessiondb wrote)
//                         through NanoClaw's response handlers, and write what
//                         NanoClaw did to OUT_JSON: members, wirings, sessions
//                         and the messages_in rows of each session
//   gate OUT_JSON         route the command gate's cases (gateEvents) through
//                         NanoClaw's router one by one and write, per case,
//                         the sessions it made, the messages_in and
//                         messages_out rows it wrote, the drops it audited,
//                         what it threw, and what NanoClaw's agent runner
//                         (container/agent-runner's formatter) makes of the
//                         message
//
// Nothing here reimplements NanoClaw: the harness builds the registry rows
// through NanoClaw's db functions, glues the channel adapter to the router
// as NanoClaw's src/index.ts does (onInbound builds the InboundEvent and
// calls routeInbound; onAction dispatches to the response handlers), and
// replaces the container runner with a stub, as NanoClaw's own tests do.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const NC = process.env.NANOCLAW_DIR;
if (!NC) throw new Error('NANOCLAW_DIR must name a NanoClaw checkout with its node_modules installed');
const nc = (p: string) => import(pathToFileURL(path.join(NC, p)).href);

// Paths on the command line are read from where we were started; then,
// as NanoClaw's DATA_DIR is <cwd>/data, we work in a folder of our own.
const [mode, ...args] = process.argv.slice(2);
const paths = args.map((a) => path.resolve(a));
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'nanoclaw-harness-'));
process.chdir(work);

const now = () => new Date().toISOString();

async function waitFor<T>(what: string, get: () => T | undefined): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const v = get();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function open(dbPath: string) {
  const { initDb, runMigrations } = await nc('src/db/index.js');
  const db = initDb(dbPath);
  runMigrations(db);
  return db;
}

// The glue of NanoClaw's src/index.ts between channel adapters and the
// router, awaiting what index.ts fires and forgets so the harness knows
// when routing is done.
async function dispatch(payload: Record<string, unknown>): Promise<boolean> {
  const { getResponseHandlers } = await nc('src/response-registry.js');
  for (const handler of getResponseHandlers()) {
    if (await handler(payload)) return true;
  }
  return false;
}

async function fixtures(outDir: string) {
  const db = await open(path.join(work, 'data', 'v2.db'));
  const { createAgentGroup } = await nc('src/db/agent-groups.js');
  const { createMessagingGroup, createMessagingGroupAgent } = await nc('src/db/messaging-groups.js');
  const { upsertUser } = await nc('src/modules/permissions/db/users.js');
  const { grantRole } = await nc('src/modules/permissions/db/user-roles.js');
  const { upsertUserDm } = await nc('src/modules/permissions/db/user-dms.js');
  const { setDeliveryAdapter } = await nc('src/delivery.js');
  const { routeInbound } = await nc('src/router.js');
  const { registerChannelAdapter, initChannelAdapters } = await nc('src/channels/channel-registry.js');
  const { createChatSdkBridge } = await nc('src/channels/chat-sdk-bridge.js');
  const { Message } = await nc('node_modules/chat/dist/index.js');
  await nc('src/modules/permissions/index.js');

  // One agent group; a Telegram group chat wired to it that asks about
  // unknown senders; the owner telegram:1 with a known DM chat.
  createAgentGroup({ id: 'ag-1', name: 'Helper', folder: 'helper', agent_provider: null, created_at: now() });
  createMessagingGroup({
    id: 'mg-team', channel_type: 'telegram', platform_id: '-100123', name: 'Team chat', is_group: 1,
    unknown_sender_policy: 'request_approval', created_at: now(),
  });
  createMessagingGroupAgent({
    id: 'mga-team', messaging_group_id: 'mg-team', agent_group_id: 'ag-1', engage_mode: 'pattern',
    engage_pattern: '.', sender_scope: 'all', ignored_message_policy: 'drop', session_mode: 'shared',
    priority: 0, created_at: now(),
  });
  upsertUser({ id: 'telegram:1', kind: 'telegram', display_name: 'Owner', created_at: now() });
  grantRole({ user_id: 'telegram:1', role: 'owner', agent_group_id: null, granted_by: null, granted_at: now() });
  createMessagingGroup({
    id: 'mg-owner-dm', channel_type: 'telegram', platform_id: '1', name: 'Owner', is_group: 0,
    unknown_sender_policy: 'strict', created_at: now(),
  });
  upsertUserDm({ user_id: 'telegram:1', channel_type: 'telegram', messaging_group_id: 'mg-owner-dm', resolved_at: now() });

  const cards: unknown[] = [];
  setDeliveryAdapter({
    async deliver(channelType: string, platformId: string, threadId: string | null, kind: string, content: string) {
      cards.push({ channelType, platformId, threadId, kind, content: JSON.parse(content) });
      return `pm-${cards.length}`;
    },
  });

  // A Chat SDK adapter for Telegram that talks to no platform: the bridge
  // and the Chat SDK around it are NanoClaw's and the SDK's own code.
  let chat: any;
  const pending: Promise<unknown>[] = [];
  const telegram: any = {
    name: 'telegram',
    userName: 'helper_bot',
    botUserId: '999',
    async initialize(c: unknown) {
      chat = c;
    },
    channelIdFromThreadId: (threadId: string) => threadId.split(':')[1],
    isDM: (threadId: string) => !threadId.split(':')[1].startsWith('-'),
    encodeThreadId: (d: { chatId: string }) => `telegram:${d.chatId}`,
    decodeThreadId: (id: string) => ({ chatId: id.split(':')[1] }),
    async handleWebhook() {
      return new Response('ok');
    },
    async postMessage() {
      return { id: 'x', threadId: '', raw: {} };
    },
    async editMessage() {
      return { id: 'x', threadId: '', raw: {} };
    },
    async deleteMessage() {},
    async addReaction() {},
    async removeReaction() {},
    async startTyping() {},
    async fetchMessages() {
      return { messages: [] };
    },
    async fetchThread(id: string) {
      return { id, channelId: id.split(':')[1], metadata: {} };
    },
    parseMessage(raw: any) {
      return raw;
    },
    renderFormatted(ast: any) {
      return JSON.stringify(ast);
    },
  };
  registerChannelAdapter('telegram', { factory: () => createChatSdkBridge({ adapter: telegram, supportsThreads: false }) });
  await initChannelAdapters((adapter: any) => ({
    onInbound(platformId: string, threadId: string | null, message: any) {
      return routeInbound({
        channelType: adapter.channelType,
        platformId,
        threadId,
        message: {
          id: message.id,
          kind: message.kind,
          content: JSON.stringify(message.content),
          timestamp: message.timestamp,
          isMention: message.isMention,
          isGroup: message.isGroup,
        },
      });
    },
    onInboundEvent(event: any) {
      return routeInbound(event);
    },
    onMetadata() {},
    onAction(questionId: string, value: string, userId: string) {
      return dispatch({ questionId, value, userId, channelType: adapter.channelType, platformId: '', threadId: null });
    },
  }));

  const post = (chatId: string, id: string, from: { id: string; name: string; user: string }, text: string, sent: string) =>
    chat.processMessage(
      telegram,
      `telegram:${chatId}`,
      new Message({
        id,
        threadId: `telegram:${chatId}`,
        text,
        formatted: { type: 'root', children: [{ type: 'paragraph', children: [{ type: 'text', value: text }] }] },
        raw: { message_id: Number(id), chat: { id: Number(chatId) } },
        author: { userId: from.id, userName: from.user, fullName: from.name, isBot: false, isMe: false },
        metadata: { dateSent: new Date(sent), edited: false },
        attachments: [],
      }),
      { waitUntil: (p: Promise<unknown>) => pending.push(p) },
    );

  // Eve, unknown, writes in the team chat: her message is dropped and the
  // owner is asked about her.
  await post('-100123', '41', { id: '5', name: 'Eve', user: 'eve' }, 'can I join?', '2026-05-18T10:00:00.000Z');
  await Promise.all(pending);
  const sender = await waitFor('the sender approval', () => db.prepare('SELECT * FROM pending_sender_approvals').get());

  // Bob writes the bot a DM from a chat it has never seen: the owner is
  // asked what to do with the chat.
  await post('7', '9', { id: '7', name: 'Bob', user: 'bob' }, 'hello bot', '2026-05-18T10:01:00.000Z');
  await Promise.all(pending);
  const channel = await waitFor('the channel approval', () => db.prepare('SELECT * FROM pending_channel_approvals').get());

  const pkg = JSON.parse(fs.readFileSync(path.join(NC, 'package.json'), 'utf8'));
  const made = { nanoclaw: pkg.version, made_by: 'hostd/testdata/nanoclaw/run.sh fixtures' };
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'sender-approval.json'), JSON.stringify({ ...made, pending_sender_approvals: sender }, null, 2) + '\n');
  fs.writeFileSync(path.join(outDir, 'channel-approval.json'), JSON.stringify({ ...made, pending_channel_approvals: channel }, null, 2) + '\n');
  fs.writeFileSync(path.join(outDir, 'cards.json'), JSON.stringify({ ...made, cards }, null, 2) + '\n');
}

async function replay(dbPath: string, outJSON: string) {
  const db = await open(dbPath);
  const { setDeliveryAdapter } = await nc('src/delivery.js');
  const { openInboundDb } = await nc('src/session-manager.js');
  await nc('src/modules/permissions/index.js');
  const sent: unknown[] = [];
  setDeliveryAdapter({
    async deliver(channelType: string, platformId: string, threadId: string | null, kind: string, content: string) {
      sent.push({ channelType, platformId, threadId, kind, content: JSON.parse(content) });
      return undefined;
    },
  });
  const handled: unknown[] = [];
  // A click from the approver the request names, as a Telegram adapter
  // reports it: the raw platform user id.
  const click = async (questionId: string, value: string, approver: string) => {
    const [channelType, userId] = [approver.slice(0, approver.indexOf(':')), approver.slice(approver.indexOf(':') + 1)];
    handled.push({ questionId, value, claimed: await dispatch({ questionId, value, userId, channelType, platformId: '', threadId: null }) });
  };
  for (const r of db.prepare('SELECT * FROM pending_sender_approvals').all() as any[]) {
    await click(r.id, 'approve', r.approver_user_id);
  }
  for (const r of db.prepare('SELECT * FROM pending_channel_approvals').all() as any[]) {
    const connect = JSON.parse(r.options_json).find((o: any) => o.value.startsWith('connect:'));
    await click(r.messaging_group_id, connect.value, r.approver_user_id);
  }
  const sessions = db.prepare('SELECT * FROM sessions ORDER BY created_at').all() as any[];
  const out = {
    handled,
    sent,
    members: db.prepare('SELECT user_id, agent_group_id, added_by FROM agent_group_members ORDER BY user_id').all(),
    users: db.prepare('SELECT id, kind, display_name FROM users ORDER BY id').all(),
    wirings: db.prepare('SELECT messaging_group_id, agent_group_id, engage_mode, engage_pattern, sender_scope FROM messaging_group_agents').all(),
    pending: {
      senders: db.prepare('SELECT COUNT(*) AS n FROM pending_sender_approvals').get(),
      channels: db.prepare('SELECT COUNT(*) AS n FROM pending_channel_approvals').get(),
    },
    sessions: sessions.map((s) => {
      const inbound = openInboundDb(s.agent_group_id, s.id);
      try {
        return {
          id: s.id,
          agent_group_id: s.agent_group_id,
          messaging_group_id: s.messaging_group_id,
          messages_in: inbound
            .prepare('SELECT id, kind, timestamp, channel_type, platform_id, thread_id, content, trigger FROM messages_in ORDER BY seq')
            .all(),
        };
      } finally {
        inbound.close();
      }
    }),
  };
  fs.writeFileSync(outJSON, JSON.stringify(out, null, 2) + '\n');
}

// The command gate's cases: who writes what where. Each event is in the
// shape sessiondb's router takes (hostd.Event); the harness hands NanoClaw
// the InboundEvent an adapter would, its content the chat shape our router
// writes ({sender, senderId, text, isMention, isGroup}).
type GateEvent = {
  channel_type: string;
  platform_id: string;
  message_id: string;
  sender: { id: string; name: string };
  text: string;
  is_group: boolean;
  is_mention: boolean;
};

function gateEvents(): GateEvent[] {
  const who: Record<string, string> = {
    '1': 'Olive (owner)',
    '2': 'Gus (global admin)',
    '3': 'Ada (admin of ag-1)',
    '4': 'Otto (admin of ag-2)',
    '5': 'Mem (member of ag-1)',
    '6': 'Stan (nobody)',
  };
  const evs: GateEvent[] = [];
  let n = 0;
  const ev = (chat: string, from: string, text: string, mention = false) =>
    evs.push({
      channel_type: 'telegram',
      platform_id: chat,
      message_id: String(++n),
      sender: { id: from, name: who[from] },
      text,
      is_group: true,
      is_mention: mention,
    });
  // The side chat first, so the sessions a gated command makes show: a
  // member's filtered command and a stranger's admin command, neither
  // addressed to the agent (kept as context: mention, accumulate).
  ev('-100200', '5', '/login');
  ev('-100200', '6', '/clear');
  ev('-100200', '5', 'just chatting');
  ev('-100200', '5', '/compact', true);
  // The team chat (every message engages both agent groups): who may
  // clear, and what counts as which command.
  for (const from of ['1', '2', '3', '4', '5', '6']) ev('-100123', from, '/clear');
  for (const text of [
    '/compact', '/context', '/cost', '/files', '/CLEAR all of it', '  /Compact\tnow', '\u00a0/context', '\ufeff/cost',
    '/files\u00a0x', '/help', '/login', '/LOGOUT', '/doctor', '/config', '/remote-control', '/remote-control on',
    '/start', '/clearly', '/clear-all', '/usr/bin/env is odd', 'hello /clear', '/', ' ', '\u0085/clear',
    '/f\u0130les', '/\u212aost', 'x/clear',
  ])
    ev('-100123', '6', text);
  ev('-100123', '1', '/login');
  ev('-100123', '2', '/remote-control');
  return evs;
}

async function gate(outJSON: string) {
  const db = await open(path.join(work, 'data', 'v2.db'));
  const { createAgentGroup } = await nc('src/db/agent-groups.js');
  const { createMessagingGroup, createMessagingGroupAgent } = await nc('src/db/messaging-groups.js');
  const { upsertUser } = await nc('src/modules/permissions/db/users.js');
  const { grantRole } = await nc('src/modules/permissions/db/user-roles.js');
  const { addMember } = await nc('src/modules/permissions/db/agent-group-members.js');
  const { setDeliveryAdapter } = await nc('src/delivery.js');
  const { routeInbound } = await nc('src/router.js');
  const { openInboundDb, openOutboundDb } = await nc('src/session-manager.js');
  // The agent runner's own reading of a message (it clears its session on
  // any text that starts with /clear, whatever the host's gate let through).
  const { isClearCommand, categorizeMessage } = await nc('container/agent-runner/src/formatter.js');
  await nc('src/modules/permissions/index.js');

  // Two agent groups; the team chat wired to both (every message engages),
  // the side chat to ag-1 on a mention, keeping the rest as context; both
  // public, so strangers get through the access gate.
  createAgentGroup({ id: 'ag-1', name: 'Helper', folder: 'helper', agent_provider: null, created_at: now() });
  createAgentGroup({ id: 'ag-2', name: 'Other', folder: 'other', agent_provider: null, created_at: now() });
  for (const [id, platform, name] of [['mg-team', '-100123', 'Team chat'], ['mg-side', '-100200', 'Side chat']]) {
    createMessagingGroup({
      id, channel_type: 'telegram', platform_id: platform, name, is_group: 1, unknown_sender_policy: 'public', created_at: now(),
    });
  }
  const wire = (id: string, mg: string, ag: string, mode: string, ignored: string, priority: number) =>
    createMessagingGroupAgent({
      id, messaging_group_id: mg, agent_group_id: ag, engage_mode: mode, engage_pattern: mode === 'pattern' ? '.' : null,
      sender_scope: 'all', ignored_message_policy: ignored, session_mode: 'shared', priority, created_at: now(),
    });
  wire('mga-team-1', 'mg-team', 'ag-1', 'pattern', 'drop', 1);
  wire('mga-team-2', 'mg-team', 'ag-2', 'pattern', 'drop', 0);
  wire('mga-side-1', 'mg-side', 'ag-1', 'mention', 'accumulate', 0);
  const user = (id: string, name: string) => upsertUser({ id, kind: 'telegram', display_name: name, created_at: now() });
  const grant = (id: string, role: string, ag: string | null) =>
    grantRole({ user_id: id, role, agent_group_id: ag, granted_by: null, granted_at: now() });
  user('telegram:1', 'Olive');
  grant('telegram:1', 'owner', null);
  user('telegram:2', 'Gus');
  grant('telegram:2', 'admin', null);
  user('telegram:3', 'Ada');
  grant('telegram:3', 'admin', 'ag-1');
  user('telegram:4', 'Otto');
  grant('telegram:4', 'admin', 'ag-2');
  user('telegram:5', 'Mem');
  addMember({ user_id: 'telegram:5', agent_group_id: 'ag-1', added_by: null, added_at: now() });

  const sent: unknown[] = [];
  setDeliveryAdapter({
    async deliver(channelType: string, platformId: string, threadId: string | null, kind: string, content: string) {
      sent.push({ channelType, platformId, threadId, kind, content: JSON.parse(content) });
      return undefined;
    },
  });

  // Every row of every session, keyed by session and row id.
  const snapshot = () => {
    const rows = new Map<string, any>();
    const sessions = db.prepare('SELECT id, agent_group_id, messaging_group_id FROM sessions').all() as any[];
    for (const s of sessions) {
      rows.set(`session ${s.id}`, { agent_group_id: s.agent_group_id, messaging_group_id: s.messaging_group_id });
      for (const [table, open] of [['messages_in', openInboundDb], ['messages_out', openOutboundDb]] as const) {
        const f = open(s.agent_group_id, s.id);
        try {
          const cols = table === 'messages_in' ? 'id, kind, channel_type, platform_id, thread_id, content, trigger' : 'id, kind, channel_type, platform_id, thread_id, content';
          for (const r of f.prepare(`SELECT ${cols} FROM ${table} ORDER BY seq`).all() as any[]) {
            rows.set(`${table} ${s.id} ${r.id}`, { table, agent_group_id: s.agent_group_id, messaging_group_id: s.messaging_group_id, ...r });
          }
        } finally {
          f.close();
        }
      }
    }
    return rows;
  };
  const dropped = () => (db.prepare('SELECT COALESCE(SUM(message_count), 0) AS n FROM unregistered_senders').get() as any).n as number;

  const cases: unknown[] = [];
  for (const e of gateEvents()) {
    const before = snapshot();
    const droppedBefore = dropped();
    // NanoClaw's adapters fire routeInbound and log what it throws
    // (src/index.ts): the error is recorded with the case.
    let error: string | null = null;
    const content = JSON.stringify({ sender: e.sender.name, senderId: `telegram:${e.sender.id}`, text: e.text, isMention: e.is_mention, isGroup: e.is_group });
    const row = { kind: 'chat', content, channel_type: e.channel_type };
    await routeInbound({
      channelType: e.channel_type,
      platformId: e.platform_id,
      threadId: null,
      message: {
        id: e.message_id,
        kind: 'chat',
        content,
        timestamp: '2026-05-18T10:00:00.000Z',
        isMention: e.is_mention,
        isGroup: e.is_group,
      },
    }).catch((err: Error) => {
      error = err.message;
    });
    const after = snapshot();
    const made = (kind: string) =>
      [...after].filter(([k]) => k.startsWith(kind + ' ') && !before.has(k)).map(([, v]) => v);
    cases.push({
      event: e,
      sessions: made('session'),
      messages_in: made('messages_in').map(({ table, id, ...r }) => r),
      messages_out: made('messages_out').map(({ table, ...r }) => ({ ...r, id: String(r.id).replace(/-\d+-[a-z0-9]+$/, '-…') })),
      dropped: dropped() - droppedBefore,
      error,
      agent_runner: { clears: isClearCommand(row), category: categorizeMessage(row).category },
    });
  }
  const pkg = JSON.parse(fs.readFileSync(path.join(NC, 'package.json'), 'utf8'));
  fs.writeFileSync(outJSON, JSON.stringify({ nanoclaw: pkg.version, made_by: 'hostd/testdata/nanoclaw/run.sh gate', cases, sent }, null, 2) + '\n');
}

try {
  if (mode === 'fixtures' && paths.length === 1) await fixtures(paths[0]);
  else if (mode === 'replay' && paths.length === 2) await replay(paths[0], paths[1]);
  else if (mode === 'gate' && paths.length === 1) await gate(paths[0]);
  else throw new Error('usage: harness.mts fixtures OUT_DIR | replay V2_DB OUT_JSON | gate OUT_JSON');
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
process.exit(0);
