package examples

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite conversations.jsonl from the generator")

// TestGenerateExamples checks that conversations.jsonl is exactly what the
// generator below produces, so the file and its source never drift apart.
// With -update it rewrites the file instead.
func TestGenerateExamples(t *testing.T) {
	got := generate(t)
	if *update {
		if err := os.WriteFile("conversations.jsonl", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("conversations.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("conversations.jsonl is out of date: run go test ./examples -run TestGenerateExamples -update")
	}
	if string(want) != conversations {
		t.Fatal("the embedded copy differs from the file on disk")
	}
}

// TestConversationsShape checks the promises the package doc makes about the
// embedded file, record by record.
func TestConversationsShape(t *testing.T) {
	sc := bufio.NewScanner(Conversations())
	sc.Buffer(nil, 1<<20)
	ids := map[string]map[string]any{}
	titles := map[string]string{}
	sources := map[string]bool{}
	var order []string
	var toolRows, reasoningRows int
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("record %d: %v", len(order)+1, err)
		}
		id, _ := rec["id"].(string)
		if id == "" {
			t.Fatalf("record %d has no id", len(order)+1)
		}
		if p, ok := rec["parent_session_id"].(string); ok {
			if _, seen := ids[p]; !seen {
				t.Errorf("%s: parent %s must come earlier in the file", id, p)
			}
		}
		ids[id] = rec
		order = append(order, id)
		sources[rec["source"].(string)] = true
		if title, ok := rec["title"].(string); ok {
			titles[title] = id
		}
		msgs := rec["messages"].([]any)
		if got := int(rec["message_count"].(float64)); got != len(msgs) {
			t.Errorf("%s: message_count %d, %d messages", id, got, len(msgs))
		}
		calls := 0
		prev := rec["started_at"].(float64)
		for _, m := range msgs {
			m := m.(map[string]any)
			if tc, ok := m["tool_calls"].([]any); ok {
				calls += len(tc)
			}
			if m["role"] == "tool" {
				toolRows++
				if m["tool_call_id"] == nil || m["tool_name"] == nil {
					t.Errorf("%s: tool row without tool_call_id/tool_name", id)
				}
			}
			if m["reasoning"] != nil {
				reasoningRows++
			}
			ts := m["timestamp"].(float64)
			if ts < prev {
				t.Errorf("%s: message timestamps go back", id)
			}
			prev = ts
		}
		if got := int(rec["tool_call_count"].(float64)); got != calls {
			t.Errorf("%s: tool_call_count %d, %d tool calls", id, got, calls)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n := len(order); n < 6 || n > 10 {
		t.Errorf("%d conversations, want 6-10", n)
	}
	for _, s := range []string{"cli", "telegram", "slack", "cron"} {
		if !sources[s] {
			t.Errorf("no %s conversation", s)
		}
	}
	if toolRows == 0 || reasoningRows == 0 {
		t.Errorf("tool rows %d, reasoning rows %d: want both", toolRows, reasoningRows)
	}
	a, b := ids[titles["proj"]], ids[titles["proj #2"]]
	if a == nil || b == nil {
		t.Fatal(`want titles "proj" and "proj #2"`)
	}
	if a["end_reason"] != "compression" || b["parent_session_id"] != a["id"] || b["started_at"].(float64) < a["ended_at"].(float64) {
		t.Errorf("proj #2 must continue proj after a compression end: %v %v", a["end_reason"], b["parent_session_id"])
	}
}

// The generator. Everything below is data: sessions described turn by turn,
// with timestamps, counters, tokens and costs derived so the records are
// self-consistent (message_count, tool_call_count and token sums agree with
// the messages).

type price struct{ in, out, cacheRead float64 } // USD per million tokens

var prices = map[string]price{
	"anthropic/claude-sonnet-4.6": {3, 15, 0.3},
	"anthropic/claude-haiku-4.5":  {1, 5, 0.1},
	"openai/gpt-4.1-mini":         {0.4, 1.6, 0.1},
	"openai/gpt-5-codex":          {1.25, 10, 0.125},
	"qwen/qwen3-235b-a22b":        {0.2, 0.6, 0},
}

type turn struct {
	after     float64 // seconds after the previous message
	role      string
	content   *string
	calls     []call
	callID    string // tool rows: which call this answers
	tool      string
	reasoning string
	details   bool // also store reasoning_details (OpenRouter style)
	codex     bool // also store codex_reasoning_items (OpenAI Responses style)
	finish    string
}

type call struct{ id, name, args string }

type convo struct {
	id, source, user, model, title, parent, endReason string
	system                                            string
	config                                            map[string]any
	start                                             time.Time
	provider, baseURL, mode                           string
	actual                                            bool // the provider reported an actual cost
	cacheRead, cacheWrite                             int64
	turns                                             []turn
}

func text(s string) *string { return &s }

func user(after float64, s string) turn { return turn{after: after, role: "user", content: text(s)} }
func say(after float64, s string) turn {
	return turn{after: after, role: "assistant", content: text(s), finish: "stop"}
}
func think(after float64, reasoning string, calls ...call) turn {
	return turn{after: after, role: "assistant", content: text(""), calls: calls, reasoning: reasoning, finish: "tool_calls"}
}
func result(after float64, c call, s string) turn {
	return turn{after: after, role: "tool", content: text(s), callID: c.id, tool: c.name}
}

func at(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05", s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// codingPrompt is the system prompt of the terminal coding sessions; a
// continuation after compression carries it with the compressed context.
const codingPrompt = "You are a careful coding assistant working in the user's terminal. Prefer small, verified changes."

func conversationsData() []convo {
	dRead := call{"call_7Qm2dK1", "read_file", `{"path":"Dockerfile"}`}
	dBuild := call{"call_7Qm2dK2", "terminal", `{"command":"docker compose build api 2>&1 | tail -n 8"}`}
	dSize := call{"call_9Fz0aB4", "terminal", `{"command":"docker image ls api --format '{{.Tag}} {{.Size}}'"}`}

	pGrep := call{"toolu_01HkT9", "search_files", `{"pattern":"rate.NewLimiter","path":"internal/"}`}
	pTest := call{"toolu_01HkTa", "terminal", `{"command":"go test ./internal/ratelimit/ -run TestBurst -count=1"}`}
	pPatch := call{"toolu_01HkTb", "patch", `{"path":"internal/ratelimit/limiter.go","description":"key limiters by chat id, evict idle ones"}`}
	p2Test := call{"toolu_01JpW3", "terminal", `{"command":"go test -race ./... 2>&1 | tail -n 5"}`}
	p2Bench := call{"toolu_01JpW4", "terminal", `{"command":"go test -run '^$' -bench BenchmarkAllow -benchmem ./internal/ratelimit/"}`}

	wWeather := call{"call_Lx81", "weather", `{"location":"Lisbon, PT","days":3}`}
	wSearch := call{"call_Lx82", "web_search", `{"query":"Lisbon tram 28 queue early morning tips"}`}

	sHist := call{"toolu_02Sl4c", "slack_history", `{"channel":"#team-payments","since":"2026-06-16T09:00:00Z"}`}

	cSnap := call{"call_cr0n1", "terminal", `{"command":"restic -r /srv/backup snapshots --latest 3 --compact"}`}
	cDisk := call{"call_cr0n2", "terminal", `{"command":"df -h /srv/backup"}`}

	zSearch := call{"call_dbs01", "web_search", `{"query":"大别山 天堂寨 徒步 路线 两天"}`}

	kGet := call{"call_k8s01", "terminal", `{"command":"kubectl -n shop rollout status deploy/checkout --timeout=10s"}`}
	kDesc := call{"call_k8s02", "terminal", `{"command":"kubectl -n shop describe pod -l app=checkout | grep -A4 -i 'events\\|readiness'"}`}

	return []convo{
		{
			id: "20260315_092437_c9a6ff", source: "cli", user: "dana", model: "anthropic/claude-sonnet-4.6", title: "Fix Docker build",
			system: codingPrompt,
			config: map[string]any{"temperature": 0.2, "max_tokens": 8192},
			start:  at("2026-03-15 09:24:37"), provider: "anthropic", baseURL: "https://api.anthropic.com", mode: "api_key", endReason: "user_exit",
			cacheRead: 18400, cacheWrite: 4100,
			turns: []turn{
				user(4, "docker compose build fails with: failed to solve: process \"/bin/sh -c go build ./...\" did not complete successfully: exit code: 1. Can you look?"),
				think(6, "The failure is inside the builder stage. Read the Dockerfile and rerun the build to see the compiler's own message.", dRead, dBuild),
				result(1, dRead, "FROM golang:1.22-alpine AS build\nWORKDIR /src\nCOPY . .\nRUN go build -o /out/api ./cmd/api\n\nFROM alpine:3.20\nCOPY --from=build /out/api /usr/local/bin/api\nENTRYPOINT [\"api\"]"),
				result(38, dBuild, "#12 [build 4/4] RUN go build -o /out/api ./cmd/api\n#12 0.412 go: go.mod requires go >= 1.26 (running go 1.22.12; GOTOOLCHAIN=local)\n#12 ERROR: process \"/bin/sh -c go build -o /out/api ./cmd/api\" did not complete successfully: exit code: 1"),
				say(9, "The builder image is too old: go.mod asks for Go 1.26 but the Dockerfile builds with golang:1.22-alpine, and the image sets GOTOOLCHAIN=local so it will not download a newer toolchain.\n\nChange the first line to:\n\n    FROM golang:1.26-alpine AS build\n\nand rebuild with `docker compose build api`."),
				user(95, "Done, that fixed it. Can we also make the image smaller?"),
				think(5, "Measure first: check the current image size before suggesting anything.", dSize),
				result(2, dSize, "latest 412MB"),
				say(11, "It is 412 MB because the final stage is a full alpine with the module cache copied in through `COPY . .` layers. Three changes bring it to about 15 MB:\n\n1. Build a static binary: `RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/api ./cmd/api`.\n2. Use `gcr.io/distroless/static-debian12` as the final stage.\n3. Add a `.dockerignore` with `.git`, `bin/` and `*.test`.\n\nWant me to apply them?"),
				user(40, "Yes please, and run the build again."),
				say(7, "Applied. The new image is 14.8 MB and `docker compose up api` answers on :8080 as before."),
			},
		},
		{
			id: "20260402_140511_4e81b2", source: "cli", user: "dana", model: "anthropic/claude-sonnet-4.6", title: "proj",
			system: codingPrompt,
			config: map[string]any{"temperature": 0.2, "max_tokens": 8192},
			start:  at("2026-04-02 14:05:11"), provider: "anthropic", baseURL: "https://api.anthropic.com", mode: "api_key", endReason: "compression",
			cacheRead: 96200, cacheWrite: 12800,
			turns: []turn{
				user(3, "The telegram bot drops messages when a group gets busy. I think the rate limiter is global. Find where it's built."),
				think(5, "Search for the limiter constructor under internal/ to see whether one limiter is shared by every chat.", pGrep),
				result(1, pGrep, "internal/ratelimit/limiter.go:18:\tglobal = rate.NewLimiter(rate.Every(time.Second/30), 30)\ninternal/bot/send.go:41:\t// uses ratelimit.Allow() before every sendMessage"),
				say(8, "Confirmed: internal/ratelimit/limiter.go builds one limiter for the whole process (30 messages/s, burst 30), and every chat shares it. Telegram's own limit is per chat (about 1 message/s in a chat, 20/min in a group) plus ~30/s overall, so one busy group starves everyone else.\n\nPlan: a limiter per chat id in a map guarded by a mutex, evicting limiters idle for 10 minutes, and keep the global one as an outer bound."),
				user(60, "Sounds right. Write a failing test first."),
				think(6, "A burst test: 5 messages to chat A must not delay chat B's first message.", pTest),
				result(3, pTest, "--- FAIL: TestBurst (0.00s)\n    limiter_test.go:31: chat B waited 4 tokens behind chat A\nFAIL\nFAIL\tgithub.com/dana/tgbot/internal/ratelimit\t0.006s"),
				think(4, "The test fails for the right reason. Now the change itself.", pPatch),
				result(1, pPatch, "patched internal/ratelimit/limiter.go: +46 -9"),
				say(12, "Patched: `Limiter.Allow(chatID int64)` now takes the chat id, keeps a `map[int64]*entry` with the per-chat limiter and its last use, and a janitor goroutine drops entries idle for 10 minutes. The global limiter still caps the total. Call sites in internal/bot/send.go pass `msg.Chat.ID`."),
				user(300, "Run the whole suite with -race, then we can benchmark."),
			},
		},
		{
			id: "20260402_141202_d07a13", source: "cli", user: "dana", model: "anthropic/claude-sonnet-4.6", title: "proj #2",
			parent: "20260402_140511_4e81b2",
			system: codingPrompt + "\n\n[Context from the previous session, compressed] The user's telegram bot shared one global rate limiter across chats. We added per-chat limiters keyed by chat id with idle eviction after 10 minutes, kept the global limiter as an outer bound, and wrote TestBurst (now expected to pass). Next: run the suite with -race and benchmark Allow.",
			config: map[string]any{"temperature": 0.2, "max_tokens": 8192},
			start:  at("2026-04-02 14:12:02"), provider: "anthropic", baseURL: "https://api.anthropic.com", mode: "api_key", endReason: "user_exit",
			cacheRead: 41700, cacheWrite: 6300,
			turns: []turn{
				user(2, "Run the whole suite with -race, then we can benchmark."),
				think(4, "Run the tests with the race detector first; the janitor goroutine touches the map.", p2Test),
				result(41, p2Test, "ok  \tgithub.com/dana/tgbot/internal/bot\t1.204s\nok  \tgithub.com/dana/tgbot/internal/ratelimit\t1.087s\nok  \tgithub.com/dana/tgbot/internal/store\t0.391s"),
				think(3, "Race-clean. Benchmark Allow with many chats to see the cost of the mutex.", p2Bench),
				result(14, p2Bench, "BenchmarkAllow/1chat-2      \t 9231544\t   129.6 ns/op\t   0 B/op\t   0 allocs/op\nBenchmarkAllow/10000chats-2 \t 5120337\t   233.1 ns/op\t   0 B/op\t   0 allocs/op"),
				say(10, "All green under -race. Allow costs 130 ns with one chat and 233 ns with 10,000 chats, no allocations after the first message of a chat. That is far below Telegram's own limits, so the mutex is not worth sharding yet."),
				user(45, "Great. Commit it as 'ratelimit: per-chat limiters'."),
				say(6, "Committed as 3f2c9e1 \"ratelimit: per-chat limiters\" (3 files, +112 -14)."),
			},
		},
		{
			id: "20260509_081244_a3f9e0", source: "telegram", user: "tg:48213377", model: "openai/gpt-4.1-mini", title: "Lisbon weekend",
			system: "You are a friendly travel assistant chatting on Telegram. Keep answers short and practical.",
			config: map[string]any{"temperature": 0.7},
			start:  at("2026-05-09 08:12:44"), provider: "openrouter", baseURL: "https://openrouter.ai/api/v1", mode: "api_key", actual: true, endReason: "idle_timeout",
			turns: []turn{
				user(1, "Going to Lisbon next weekend, what's the weather looking like?"),
				think(2, "", wWeather),
				result(1, wWeather, `{"location":"Lisbon, PT","daily":[{"date":"2026-05-15","min_c":15,"max_c":24,"rain_mm":0},{"date":"2026-05-16","min_c":16,"max_c":26,"rain_mm":0},{"date":"2026-05-17","min_c":15,"max_c":21,"rain_mm":3.2}]}`),
				say(3, "Warm and mostly dry: 24-26 °C on Friday and Saturday, a little rain on Sunday (about 3 mm) and cooler at 21 °C. Bring a light jacket for the evenings by the river."),
				user(120, "Nice. Is tram 28 worth it or is the queue terrible?"),
				think(2, "", wSearch),
				result(2, wSearch, "Tram 28 queues at Martim Moniz reach 45-60 min by 10:00 in May. Boarding before 08:30 or at a middle stop (e.g. Graça) usually means a short wait. Pickpockets are common on crowded cars."),
				say(4, "Worth it once, early: board at Martim Moniz before 8:30 or hop on at Graça, and the wait is short. After 10:00 expect 45-60 minutes. Keep your phone and wallet in front pockets, crowded cars attract pickpockets."),
			},
		},
		{
			id: "20260617_090003_5b2c7d", source: "slack", user: "slack:U04QX7M2K", model: "anthropic/claude-haiku-4.5", title: "Standup digest: team-payments",
			system: "You summarise Slack threads for a busy engineering manager. Lists, not prose.",
			config: map[string]any{"temperature": 0.3, "max_tokens": 2048},
			start:  at("2026-06-17 09:00:03"), provider: "anthropic", baseURL: "https://api.anthropic.com", mode: "api_key", endReason: "user_exit",
			cacheRead: 2200,
			turns: []turn{
				user(2, "Summarise yesterday's #team-payments standup thread for me."),
				{after: 3, role: "assistant", content: text(""), calls: []call{sHist}, reasoning: "Fetch the channel history since yesterday 09:00 UTC, then group updates by person and pull out blockers.", details: true, finish: "tool_calls"},
				result(2, sHist, "[09:02] priya: refund webhook retries shipped, 0 dupes overnight\n[09:04] marco: blocked on PCI scan, waiting for security to rerun\n[09:05] lee: reconciliation job is 3x faster after batching; rollout today\n[09:09] priya: heads up, stripe API version bump needs a test pass before friday"),
				say(5, "Yesterday in #team-payments:\n• Done: refund webhook retries shipped, no duplicates overnight (Priya).\n• Done: reconciliation job 3x faster with batching, rolling out today (Lee).\n• Blocked: PCI scan waiting on security to rerun it (Marco).\n• Risk: Stripe API version bump needs a test pass before Friday (Priya).\n\nThe one thing that needs you: nudge security about Marco's PCI rescan."),
			},
		},
		{
			id: "20260701_020000_e1d442", source: "cron", model: "openai/gpt-4.1-mini", title: "Backup check 2026-07-01",
			system: "You run unattended maintenance checks. Report only facts you verified with a tool.",
			start:  at("2026-07-01 02:00:00"), provider: "openai", baseURL: "https://api.openai.com/v1", mode: "api_key", endReason: "cron_complete",
			turns: []turn{
				user(0.5, "Nightly job: check that last night's restic backup exists and the backup disk has room."),
				think(2, "", cSnap, cDisk),
				result(3, cSnap, "ID        Time                 Host   Tags  Size\n6f1a2c9e  2026-06-29 01:30:04  web-1        2.114 GiB\n81bd0e37  2026-06-30 01:30:05  web-1        2.118 GiB\nc94e7a10  2026-07-01 01:30:03  web-1        2.121 GiB"),
				result(0.3, cDisk, "Filesystem      Size  Used Avail Use% Mounted on\n/dev/sdb1       916G  702G  168G  81% /srv/backup"),
				say(3, "Backup OK: snapshot c94e7a10 was taken at 01:30 today (2.12 GiB, in line with the last two nights). Disk warning: /srv/backup is 81% full with 168 GB free; at about 4 GB a night of growth that is roughly 6 weeks. Consider `restic forget --keep-daily 14 --keep-weekly 8 --prune`."),
			},
		},
		{
			id: "20260823_113005_6c0b95", source: "telegram", user: "tg:51902214", model: "qwen/qwen3-235b-a22b", title: "大别山徒步计划",
			system: "你是一个在 Telegram 上聊天的旅行助手，回答简洁实用。",
			config: map[string]any{"temperature": 0.6},
			start:  at("2026-08-23 11:30:05"), provider: "openrouter", baseURL: "https://openrouter.ai/api/v1", mode: "api_key", actual: true, endReason: "idle_timeout",
			turns: []turn{
				user(1, "下周末想去大别山徒步，帮我规划两天的路线。"),
				{after: 3, role: "assistant", content: text(""), calls: []call{zSearch}, reasoning: "用户要两天的大别山徒步路线，先搜索天堂寨一带的常见路线和交通。", finish: "tool_calls"},
				result(2, zSearch, "天堂寨景区：主峰海拔1729米，经典环线约12公里，需6-7小时；山下有民宿。白马尖：大别山主峰，海拔1777米，从白马大峡谷上山约5小时。"),
				say(6, "推荐路线（两天）：\n第一天：天堂寨经典环线，约12公里，6-7小时，晚上住山下民宿。\n第二天：白马尖登顶（海拔1777米），从白马大峡谷上山约5小时，下午返程。\n注意：山上早晚温差大，带防风外套和足够的水。"),
				user(90, "天堂寨需要提前买票吗？"),
				say(4, "周末建议提前一天在官方小程序买票，节假日更要早订；门票含景区交通车。"),
			},
		},
		{
			id: "20261006_164519_f28a0c", source: "cli", user: "sam", model: "openai/gpt-5-codex", title: "Kubernetes rollout stuck",
			system: codingPrompt,
			config: map[string]any{"reasoning_effort": "medium"},
			start:  at("2026-10-06 16:45:19"), provider: "openai-codex", baseURL: "https://chatgpt.com/backend-api/codex", mode: "subscription",
			cacheRead: 30500,
			turns: []turn{
				user(6, "kubectl rollout of checkout has been stuck at 1 of 3 new replicas for ten minutes. Why?"),
				{after: 4, role: "assistant", content: text(""), calls: []call{kGet}, reasoning: "A rollout stuck at one new replica usually means the new pods never become Ready: check the rollout status, then the readiness events.", codex: true, finish: "tool_calls"},
				result(10, kGet, "Waiting for deployment \"checkout\" rollout to finish: 1 out of 3 new replicas have been updated...\nerror: timed out waiting for the condition"),
				{after: 3, role: "assistant", content: text(""), calls: []call{kDesc}, reasoning: "Timed out as expected; the readiness probe events will say why the new pod is not Ready.", codex: true, finish: "tool_calls"},
				result(2, kDesc, "Readiness:  http-get http://:8080/healthz delay=5s timeout=1s period=10s\nEvents:\n  Warning  Unhealthy  3m (x19 over 9m)  kubelet  Readiness probe failed: HTTP probe failed with statuscode: 404"),
				say(7, "The new pods never become Ready: their readiness probe calls GET /healthz on :8080 and gets 404, so the Deployment keeps waiting (maxUnavailable=0 keeps the old pods serving). The new image most likely moved the health endpoint; the last release notes mention `/livez` and `/readyz`.\n\nFix the probe path in the Deployment to `/readyz`, or keep `/healthz` as an alias in the service, then `kubectl -n shop rollout restart deploy/checkout`."),
				user(50, "It was /readyz, fixed the manifest and the rollout went through. Thanks."),
			},
		},
	}
}

// generate renders conversationsData as JSONL in the ExportSession shape.
func generate(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	msgID := int64(0)
	for _, c := range conversationsData() {
		p, ok := prices[c.model]
		if !ok {
			t.Fatalf("%s: no price for model %s", c.id, c.model)
		}
		start := float64(c.start.Unix()) + 0.25 // sub-second part, as Python's time.time() gives
		now := start
		var msgs []map[string]any
		var in, out, reasoningTok int64
		calls := 0
		for i, tu := range c.turns {
			now = round3(now + tu.after)
			msgID++
			toks := tokens(tu)
			switch tu.role {
			case "assistant":
				out += toks
			default:
				in += toks
			}
			// Each model call re-reads the conversation so far.
			if tu.role == "assistant" {
				in += contextTokens(c.turns[:i])
			}
			m := map[string]any{
				"id": msgID, "session_id": c.id, "role": tu.role, "content": tu.content,
				"tool_call_id": nil, "tool_calls": nil, "tool_name": nil, "timestamp": now,
				"token_count": toks, "finish_reason": nil, "reasoning": nil,
				"reasoning_details": nil, "codex_reasoning_items": nil,
			}
			if tu.role == "tool" {
				m["tool_call_id"], m["tool_name"] = tu.callID, tu.tool
			}
			if len(tu.calls) > 0 {
				var list []map[string]any
				for _, k := range tu.calls {
					list = append(list, map[string]any{"id": k.id, "type": "function", "function": map[string]any{"name": k.name, "arguments": k.args}})
				}
				m["tool_calls"] = list
				calls += len(list)
			}
			if tu.finish != "" {
				m["finish_reason"] = tu.finish
			}
			if tu.reasoning != "" {
				m["reasoning"] = tu.reasoning
				r := int64(utf8.RuneCountInString(tu.reasoning)/4 + 1)
				reasoningTok += r
				if tu.details {
					m["reasoning_details"] = mustJSON(t, []map[string]any{{"type": "reasoning.text", "text": tu.reasoning, "format": "anthropic-claude-v1", "index": 0}})
				}
				if tu.codex {
					m["codex_reasoning_items"] = mustJSON(t, []map[string]any{{"type": "reasoning", "id": fmt.Sprintf("rs_%s_%d", c.id[16:], i), "summary": []map[string]any{{"type": "summary_text", "text": tu.reasoning}}, "encrypted_content": "gAAAAABo" + strings.Repeat("x", 24)}})
				}
			}
			msgs = append(msgs, m)
		}
		var ended, endReason any
		if c.endReason != "" {
			ended, endReason = round3(now+1.5), c.endReason
		}
		cost := round6((float64(in)*p.in + float64(out+reasoningTok)*p.out + float64(c.cacheRead)*p.cacheRead) / 1e6)
		var actual any
		status, source := "estimated", "pricing_table"
		if c.actual {
			actual, status, source = round6(cost*1.05), "actual", "provider_response"
		}
		var config any
		if len(c.config) > 0 {
			config = mustJSON(t, c.config)
		}
		rec := map[string]any{
			"id": c.id, "source": c.source, "user_id": nilIfEmpty(c.user), "model": c.model,
			"model_config": config, "system_prompt": c.system, "parent_session_id": nilIfEmpty(c.parent),
			"started_at": start, "ended_at": ended, "end_reason": endReason,
			"message_count": len(msgs), "tool_call_count": calls,
			"input_tokens": in, "output_tokens": out, "cache_read_tokens": c.cacheRead,
			"cache_write_tokens": c.cacheWrite, "reasoning_tokens": reasoningTok,
			"billing_provider": c.provider, "billing_base_url": c.baseURL, "billing_mode": c.mode,
			"estimated_cost_usd": cost, "actual_cost_usd": actual, "cost_status": status,
			"cost_source": source, "pricing_version": "2026-03", "title": nilIfEmpty(c.title),
			"messages": msgs,
		}
		line, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// tokens approximates a message's token count: about four characters a
// token for text, plus the tool call arguments.
func tokens(tu turn) int64 {
	n := 0
	if tu.content != nil {
		n += utf8.RuneCountInString(*tu.content)
	}
	for _, c := range tu.calls {
		n += len(c.name) + len(c.args)
	}
	return int64(n/4 + 4)
}

func contextTokens(turns []turn) int64 {
	var n int64
	for _, tu := range turns {
		n += tokens(tu)
	}
	return n + 350 // the system prompt and tool schemas
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
func round6(f float64) float64 { return math.Round(f*1e6) / 1e6 }
