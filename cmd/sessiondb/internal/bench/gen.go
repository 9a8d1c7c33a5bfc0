package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// The built-in workload: the shape ../shared/bench/workload.py writes
// (sessions, messages interleaved across them, a third of user turns
// followed by tool calls and their results, English-like text drawn from a
// Zipf-weighted vocabulary, 50 queries of five kinds, the concurrent
// workers), generated here so that a fresh clone runs the benchmark with
// no other file. It is deterministic in its seed and sizes, not
// byte-identical to the Python script's: the random streams differ.
//
// Every session's script is drawn from a generator of its own, seeded by
// the workload seed and the session's index, so the growth benchmark can
// make any session on its own, in any order, without holding the rest.

// genConfig sizes a generated workload; the defaults are workload.py's.
type genConfig struct {
	Seed         uint64
	Messages     int
	Sessions     int
	LongSession  int
	Procs        int
	ProcMessages int
}

func defaultGenConfig() genConfig {
	return genConfig{Seed: 1234, Messages: 100_000, Sessions: 1000, LongSession: 500, Procs: 4, ProcMessages: 2000}
}

// validate names the first flag whose value cannot make a workload.
func (c genConfig) validate() error {
	switch {
	case c.Messages < 1:
		return sessiondb.Errorf(sessiondb.EINVALID, "--messages %d: want at least 1", c.Messages)
	case c.Sessions < 1:
		return sessiondb.Errorf(sessiondb.EINVALID, "--sessions %d: want at least 1", c.Sessions)
	case c.LongSession < 0 || c.LongSession > c.Messages:
		return sessiondb.Errorf(sessiondb.EINVALID, "--long-session %d: want 0 to --messages (%d)", c.LongSession, c.Messages)
	case c.Sessions == 1 && c.LongSession != c.Messages:
		return sessiondb.Errorf(sessiondb.EINVALID, "--long-session %d: with one session it holds every message (%d)", c.LongSession, c.Messages)
	case c.Procs < 0 || c.Procs > 64:
		return sessiondb.Errorf(sessiondb.EINVALID, "--procs %d: want 0 to 64", c.Procs)
	case c.ProcMessages < 0:
		return sessiondb.Errorf(sessiondb.EINVALID, "--proc-messages %d: want 0 or more", c.ProcMessages)
	}
	return nil
}

// genVersion changes whenever the generator's output for a given seed and
// size changes, so figures are compared only between equal workloads.
const genVersion = 1

var (
	wordsCommon = strings.Fields(`the of and to in is that it for on with as was be by this are or at from
have not but we you they can which one all will there if so about more
when what some into then them could other than only its also after use
how our first well way even new want because any these give most us`)

	wordsTech = strings.Fields(`deploy deployment docker container kubernetes cluster node pod service
database sqlite postgres index query schema migration table column row
session message search token cache memory buffer latency throughput
request response server client gateway proxy router socket stream
python golang rust javascript typescript compiler runtime module package
function method class struct interface pointer channel goroutine thread
process signal timeout retry backoff jitter lock mutex transaction commit
rollback checkpoint journal wal vacuum prune archive export import backup
config yaml json toml environment variable secret credential permission
terminal shell command script cron scheduler job queue worker pipeline
error exception stacktrace panic warning debug trace log metric alert
test fixture assertion benchmark profile flamegraph allocation garbage
network dns certificate tls handshake bandwidth packet firewall port
title lineage branch compression summary context prompt model provider
reasoning assistant user tool call argument result output input format
refactor review merge rebase commit diff patch release version changelog
telegram discord slack matrix signal webhook notification callback event
storage volume mount filesystem directory path file inode permission`)

	wordsRare = strings.Fields(`zebrafish quasar obsidian heliotrope marzipan fjord kumquat labyrinth
nebula origami paprika quokka rhubarb saffron tundra ukulele vortex
walrus xylophone yodel zeppelin aardvark bonsai cobalt dirigible
ember falcon gazebo hammock igloo jigsaw kiwi lantern meridian nectar`)

	identifiers = []string{"chat-send", "docker-compose", "config.yaml", "state.db", "P2.2",
		"my_var_name", "snake_case", "build.gradle", "main.go", "hermes_state.py",
		"x-request-id", "utf-8", "e2e-test", "v1.2.3", "api.example.com"}

	toolNames = []string{"terminal", "web_search", "read_file", "write_file", "session_search",
		"browser_navigate", "memory", "skill_manage", "cronjob", "delegate_task"}

	// sessionSources weighs cli 6, telegram 2, discord 1, tui 1.
	sessionSources = []string{"cli", "cli", "cli", "cli", "cli", "cli", "telegram", "telegram", "discord", "tui"}
	sessionModels  = []string{"anthropic/claude-sonnet-4", "openai/gpt-5", "nous/hermes-4-405b", "deepseek/deepseek-v3"}
)

// vocabulary is the ranked word list text is drawn from, word r (from 0)
// with weight 1/(r+1): function words first, technical terms, a long tail
// of pronounceable pseudo-words, the rare marker words last.
type vocabulary struct {
	words []string
	cum   []float64 // cumulative weights
}

func newVocabulary() *vocabulary {
	taken := map[string]bool{"and": true, "or": true, "not": true, "near": true}
	var words []string
	add := func(w string) {
		if !taken[w] {
			taken[w] = true
			words = append(words, w)
		}
	}
	for _, list := range [][]string{wordsCommon, wordsTech} {
		for _, w := range list {
			add(w)
		}
	}
	// The rare words must not turn up as pseudo-words.
	for _, w := range wordsRare {
		taken[w] = true
	}
	for _, w := range pseudoWords(3000, taken) {
		words = append(words, w)
	}
	for _, w := range wordsRare {
		words = append(words, w)
	}
	v := &vocabulary{words: words, cum: make([]float64, len(words))}
	acc := 0.0
	for i := range words {
		acc += 1 / float64(i+1)
		v.cum[i] = acc
	}
	return v
}

// pseudoWords makes n pronounceable words not in taken (which it extends),
// the same list for every seed.
func pseudoWords(n int, taken map[string]bool) []string {
	rng := rand.New(rand.NewPCG(genVersion*7919, 1))
	onset := strings.Fields("b br c ch d dr f g gr h j k l m n p pl r s sh st t tr v w z")
	vowel := strings.Fields("a e i o u ai ea ou io")
	coda := []string{"", "", "n", "r", "s", "l", "m", "x", "nd", "st"}
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for range 1 + rng.IntN(3) {
			b.WriteString(onset[rng.IntN(len(onset))])
			b.WriteString(vowel[rng.IntN(len(vowel))])
		}
		b.WriteString(coda[rng.IntN(len(coda))])
		w := b.String()
		if len(w) >= 3 && !taken[w] {
			taken[w] = true
			out = append(out, w)
		}
	}
	return out
}

// textGen draws text from one random stream.
type textGen struct {
	rng *rand.Rand
	v   *vocabulary
	b   strings.Builder
}

// between returns a whole number in [lo, hi].
func (g *textGen) between(lo, hi int) int { return lo + g.rng.IntN(hi-lo+1) }

func (g *textGen) word() string {
	x := g.rng.Float64() * g.v.cum[len(g.v.cum)-1]
	return g.v.words[sort.SearchFloat64s(g.v.cum, x)]
}

func pick[T any](g *textGen, list []T) T { return list[g.rng.IntN(len(list))] }

// sentence writes 6 to 18 words, one of them an identifier in 15% of
// sentences, capitalised, with closing punctuation.
func (g *textGen) sentence() int {
	start := g.b.Len()
	n := g.between(6, 18)
	ident := -1
	if g.rng.Float64() < 0.15 {
		ident = g.rng.IntN(n)
	}
	for i := range n {
		if i > 0 {
			g.b.WriteByte(' ')
		}
		w := g.word()
		if i == ident {
			w = pick(g, identifiers)
		}
		if i == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		g.b.WriteString(w)
	}
	g.b.WriteString(pick(g, []string{".", ".", ".", "?", "!", ":"}))
	return g.b.Len() - start
}

// text returns lo to hi characters of sentences, with a paragraph break
// after 8% of them.
func (g *textGen) text(lo, hi int) string {
	target := g.between(lo, hi)
	g.b.Reset()
	for g.b.Len() < target {
		if g.b.Len() > 0 && !strings.HasSuffix(g.b.String(), "\n\n") {
			g.b.WriteByte(' ')
		}
		g.sentence()
		if g.rng.Float64() < 0.08 {
			g.b.WriteString("\n\n")
		}
	}
	s := strings.TrimRight(g.b.String()[:min(target, g.b.Len())], " \n")
	if s == "" {
		return "ok"
	}
	return s
}

// toolCall is one OpenAI-style call with JSON arguments.
func (g *textGen) toolCall(k int) map[string]any {
	words := make([]string, g.between(2, 6))
	for i := range words {
		words[i] = pick(g, wordsTech)
	}
	args, _ := json.Marshal(struct {
		Query string `json:"query"`
		Path  string `json:"path"`
		Limit int    `json:"limit"`
	}{strings.Join(words, " "), "/srv/app/" + pick(g, identifiers), g.between(1, 50)})
	return map[string]any{
		"id":       fmt.Sprintf("call_%08x_%d", g.rng.Uint32(), k),
		"type":     "function",
		"function": map[string]any{"name": pick(g, toolNames), "arguments": string(args)},
	}
}

func strp(s string) *string { return &s }

// script returns count messages of session sid, in order: a user turn,
// in 35% of turns an assistant message with one or two tool calls and a
// tool result for each, then the assistant's answer.
func (g *textGen) script(sid string, count int) []wlMessage {
	msgs := make([]wlMessage, 0, count+4)
	for len(msgs) < count {
		msgs = append(msgs, wlMessage{SessionID: sid, Role: "user", Content: strp(g.text(200, 2000))})
		if g.rng.Float64() < 0.35 {
			calls := make([]any, g.between(1, 2))
			for k := range calls {
				calls[k] = g.toolCall(k)
			}
			msgs = append(msgs, wlMessage{SessionID: sid, Role: "assistant", Content: strp(g.text(200, 600)), ToolCalls: calls})
			for _, c := range calls {
				c := c.(map[string]any)
				name := c["function"].(map[string]any)["name"].(string)
				msgs = append(msgs, wlMessage{SessionID: sid, Role: "tool", Content: strp(g.text(200, 2000)),
					ToolCallID: strp(c["id"].(string)), ToolName: strp(name)})
			}
		}
		msgs = append(msgs, wlMessage{SessionID: sid, Role: "assistant", Content: strp(g.text(200, 2000))})
	}
	return msgs[:count]
}

// generator makes workloads of one seed.
type generator struct {
	seed uint64
	v    *vocabulary
}

func newGenerator(seed uint64) *generator { return &generator{seed: seed, v: newVocabulary()} }

// stream returns the text generator of one named stream of the seed: the
// session with index i is stream 2i+1, workload-wide draws are even.
func (g *generator) stream(n uint64) *textGen {
	return &textGen{rng: rand.New(rand.NewPCG(g.seed, n)), v: g.v}
}

const (
	streamLayout  = 0 // sizes, interleaving
	streamQueries = 2
	streamWorkers = 4 // + 2w for worker w
)

func sessionStream(i int) uint64 { return 2*uint64(i) + 1 }

// liveStream is the stream of the growth benchmark's live appends: k is
// 1000+step for a step's append rounds, 2000+step for the appends before
// its search after appends. (Odd like a session's: the stream of session
// k+1, whose text it repeats on a store of that many sessions.)
func liveStream(k int) uint64 { return streamWorkers - 1 + 2*uint64(k) }

// session returns the id, source, model and script of session i of a
// workload, count messages long.
func (g *generator) session(i, count int, prefix string) (wlSession, []wlMessage) {
	tg := g.stream(sessionStream(i))
	s := wlSession{ID: fmt.Sprintf("%s_%06d_%08x", prefix, i, tg.rng.Uint32()), Source: pick(tg, sessionSources), Model: pick(tg, sessionModels)}
	return s, tg.script(s.ID, count)
}

// workload generates the whole replay workload of c in memory.
func (g *generator) workload(c genConfig) *workload {
	wl := &workload{}
	sizes := make([]int, c.Sessions)
	sizes[0] = c.LongSession
	if c.Sessions > 1 {
		rest := c.Messages - c.LongSession
		base, extra := rest/(c.Sessions-1), rest%(c.Sessions-1)
		for i := 1; i < c.Sessions; i++ {
			sizes[i] = base
			if i-1 < extra {
				sizes[i]++
			}
		}
	}
	scripts := make([][]wlMessage, c.Sessions)
	for i, n := range sizes {
		var s wlSession
		s, scripts[i] = g.session(i, n, "bench")
		wl.sessions = append(wl.sessions, s)
	}
	wl.getMessages = wl.sessions[0].ID
	// A seeded interleaving that keeps each session's own order, as many
	// live agents writing at once do.
	layout := g.stream(streamLayout)
	cursors := make([]int, c.Sessions)
	var live []int
	for i, n := range sizes {
		if n > 0 {
			live = append(live, i)
		}
	}
	wl.messages = make([]wlMessage, 0, c.Messages)
	for len(live) > 0 {
		j := layout.rng.IntN(len(live))
		i := live[j]
		m := scripts[i][cursors[i]]
		m.Seq = int64(len(wl.messages))
		wl.messages = append(wl.messages, m)
		cursors[i]++
		if cursors[i] == sizes[i] {
			live[j] = live[len(live)-1]
			live = live[:len(live)-1]
		}
	}
	wl.queries = g.queries(wl.messages)
	for w := range c.Procs {
		tg := g.stream(streamWorkers + 2*uint64(w))
		sid := fmt.Sprintf("conc_w%d_%08x", w, tg.rng.Uint32())
		msgs := tg.script(sid, c.ProcMessages)
		for j := range msgs {
			msgs[j].Seq = int64(j)
		}
		wl.workers = append(wl.workers, &wlWorker{Worker: w, SessionID: sid, Messages: msgs})
		wl.concRecords += len(msgs)
	}
	return wl
}

// queries makes the 50 searches: 15 single words (11 technical, 3 rare,
// one identifier), 10 pairs of words, 10 two-word phrases lifted from
// messages (so each finds something), 10 prefixes and 5 ORs.
func (g *generator) queries(messages []wlMessage) []wlQuery {
	tg := g.stream(streamQueries)
	var q []wlQuery
	add := func(kind, s string) { q = append(q, wlQuery{Idx: len(q), Kind: kind, Q: s}) }
	for _, w := range sample(tg, wordsTech, 11) {
		add("word", w)
	}
	for _, w := range sample(tg, wordsRare, 3) {
		add("word", w)
	}
	add("word", "chat-send")
	techRare := append(append([]string{}, wordsTech...), wordsRare...)
	for range 10 {
		add("two_words", pick(tg, wordsTech)+" "+pick(tg, techRare))
	}
	for phrases := 0; phrases < 10; {
		m := messages[tg.rng.IntN(len(messages))]
		if m.Content == nil {
			continue
		}
		var ws []string
		for _, w := range strings.Fields(*m.Content) {
			ws = append(ws, strings.ToLower(strings.Trim(w, ".?!:,")))
		}
		var pairs []int
		for i := 0; i+1 < len(ws); i++ {
			if isAlpha(ws[i]) && isAlpha(ws[i+1]) {
				pairs = append(pairs, i)
			}
		}
		if len(pairs) == 0 {
			continue
		}
		i := pairs[tg.rng.IntN(len(pairs))]
		add("phrase", `"`+ws[i]+" "+ws[i+1]+`"`)
		phrases++
	}
	for _, w := range sample(tg, techRare, 10) {
		add("prefix", w[:max(3, min(5, len(w)-1))]+"*")
	}
	for range 5 {
		add("or", pick(tg, wordsRare)+" OR "+pick(tg, wordsTech))
	}
	return q
}

func isAlpha(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

// sample returns n distinct elements of list in a seeded order.
func sample(g *textGen, list []string, n int) []string {
	idx := g.rng.Perm(len(list))[:n]
	out := make([]string, n)
	for i, j := range idx {
		out[i] = list[j]
	}
	return out
}

// dump writes wl as workload.py's JSONL records, so another implementation
// can replay exactly this workload (and `bench --workload` reads it back).
func (wl *workload) dump(w io.Writer, c genConfig) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	put := func(v any) error { return enc.Encode(v) }
	if err := put(map[string]any{"type": "meta", "workload_version": workloadVersion, "generator": "sessiondb", "generator_version": genVersion,
		"seed": c.Seed, "messages": c.Messages, "sessions": c.Sessions, "long_session": c.LongSession,
		"long_session_id": wl.getMessages, "procs": c.Procs, "proc_messages": c.ProcMessages}); err != nil {
		return err
	}
	for _, s := range wl.sessions {
		if err := put(map[string]any{"type": "session", "id": s.ID, "source": s.Source, "model": s.Model}); err != nil {
			return err
		}
	}
	msg := func(typ string, m *wlMessage, worker int) error {
		r := map[string]any{"type": typ, "seq": m.Seq, "session_id": m.SessionID, "role": m.Role, "content": m.Content,
			"tool_calls": m.ToolCalls, "tool_call_id": m.ToolCallID, "tool_name": m.ToolName}
		if worker >= 0 {
			r["worker"] = worker
		}
		return put(r)
	}
	for i := range wl.messages {
		if err := msg("message", &wl.messages[i], -1); err != nil {
			return err
		}
	}
	for _, q := range wl.queries {
		if err := put(map[string]any{"type": "query", "idx": q.Idx, "kind": q.Kind, "q": q.Q}); err != nil {
			return err
		}
	}
	if wl.getMessages != "" {
		if err := put(map[string]any{"type": "get_messages", "session_id": wl.getMessages}); err != nil {
			return err
		}
	}
	for _, wk := range wl.workers {
		if err := put(map[string]any{"type": "concurrent_session", "worker": wk.Worker, "session_id": wk.SessionID}); err != nil {
			return err
		}
		for i := range wk.Messages {
			if err := msg("concurrent_message", &wk.Messages[i], wk.Worker); err != nil {
				return err
			}
		}
	}
	return nil
}
