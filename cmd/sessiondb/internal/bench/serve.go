package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
	sdbhttp "github.com/sessiondb/sessiondb/http"
)

// The serve phase (--serve) times the HTTP server over the main store,
// with a Go client on loopback: what a person's browser and an agent's
// client wait for.
const (
	// serveLongMessages is the size of the long session the transcript
	// figure is taken on (the workload's own long session is shorter).
	serveLongMessages = 20000
	serveLongID       = "bench_serve_long"
	serveListRuns     = 200
	serveFirstRuns    = 50
	serveLiveRuns     = 200
)

// serveResult is the serve phase's figures, in milliseconds.
type serveResult struct {
	Sessions int `json:"sessions"`
	// List is GET /api/v1/sessions (50 a page): the first page, and the
	// pages after it by cursor, in each order.
	List map[string]latency `json:"list_page"`
	// Transcript is the first page of the long session (50 messages), from
	// its start and from its end; FirstColdMS the very first request.
	LongMessages int                `json:"long_session_messages"`
	Transcript   map[string]latency `json:"transcript_first_page"`
	FirstColdMS  float64            `json:"transcript_first_cold_ms"`
	// Search is GET /api/v1/search over the workload's queries (limit 20,
	// three passes), each query also run through the library right before.
	Search         latency `json:"search"`
	LibrarySearch  latency `json:"library_search"`
	SearchP95Ratio float64 `json:"search_p95_ratio_vs_library"`
	// Live is the time from an append to its event on the session's
	// Server-Sent Event stream: through the server's own store, and
	// through another handle on the store (as another process).
	Live map[string]latency `json:"live_append_to_event"`
}

type latency struct {
	N     int     `json:"n"`
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	MaxMS float64 `json:"max_ms"`
}

func latencyOf(samples []float64) latency {
	return latency{N: len(samples), P50MS: round(percentile(samples, 0.5), 3), P95MS: round(percentile(samples, 0.95), 3), MaxMS: round(percentile(samples, 1), 3)}
}

// servePhase adds the long session, serves the store on loopback and
// times the API. path is the store's location, for a second handle.
func (b *bencher) servePhase(ctx context.Context, st sessiondb.Store, path string, res *benchResult) error {
	b.p.phase("serve: importing a %d-message session", serveLongMessages)
	if _, err := st.ImportSession(ctx, longSession(b.cfg.now()), sessiondb.ImportOptions{}); err != nil {
		return sessiondb.Wrap("", err, "import the long session")
	}
	tok := make([]byte, 16)
	rand.Read(tok)
	srv, err := sdbhttp.NewServer(sdbhttp.Config{History: st, Token: hex.EncodeToString(tok)})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "listen for the serve phase")
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()
	defer func() { stop(); <-served }()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Timeout: time.Minute}
	r := &serveResult{List: map[string]latency{}, Transcript: map[string]latency{}, Live: map[string]latency{}, LongMessages: serveLongMessages}
	if r.Sessions, err = countSessions(ctx, st); err != nil {
		return err
	}
	get := func(path string, into any) (float64, error) {
		t := b.cfg.now()
		resp, err := client.Get(base + path)
		if err != nil {
			return 0, sessiondb.Wrap(sessiondb.EINTERNAL, err, "GET %s", path)
		}
		defer resp.Body.Close()
		if into == nil {
			into = &json.RawMessage{}
		}
		err = json.NewDecoder(resp.Body).Decode(into)
		io.Copy(io.Discard, resp.Body) // the newline after the value: read, so the connection is reused
		if err != nil || resp.StatusCode != 200 {
			return 0, sessiondb.Errorf(sessiondb.EINTERNAL, "GET %s: status %d (%v)", path, resp.StatusCode, err)
		}
		return ms(b.since(t)), nil
	}

	b.p.phase("serve: transcript pages of the %d-message session", serveLongMessages)
	first := "/api/v1/sessions/" + serveLongID + "/messages?limit=50"
	if r.FirstColdMS, err = get(first, nil); err != nil {
		return err
	}
	r.FirstColdMS = round(r.FirstColdMS, 3)
	for _, from := range []string{"start", "end"} {
		var samples []float64
		for range serveFirstRuns {
			s, err := get(first+"&from="+from, nil)
			if err != nil {
				return err
			}
			samples = append(samples, s)
		}
		r.Transcript[from] = latencyOf(samples)
	}

	b.p.phase("serve: session list pages")
	for _, sort := range []string{"started", "last_active", "cost", "tokens"} {
		var firstPage, next []float64
		cursor := ""
		for range serveListRuns {
			var page struct{ Next string }
			s, err := get("/api/v1/sessions?limit=50&sort="+sort+"&cursor="+url.QueryEscape(cursor), &page)
			if err != nil {
				return err
			}
			if cursor == "" {
				firstPage = append(firstPage, s)
			} else {
				next = append(next, s)
			}
			cursor = page.Next
		}
		r.List[sort+"_first"] = latencyOf(firstPage)
		r.List[sort+"_next"] = latencyOf(next)
	}

	b.p.phase("serve: search over HTTP, %d queries x %d passes", len(b.wl.queries), searchPasses)
	for _, q := range b.wl.queries { // warm-up, as the library's phase
		if _, err := get(fmt.Sprintf("/api/v1/search?limit=%d&q=%s", searchLimit, url.QueryEscape(q.Q)), nil); err != nil {
			return err
		}
	}
	// The library is timed beside the server, query by query, so both
	// figures see the same machine (the search phase ran minutes before);
	// which goes first alternates by pass, so neither always finds the
	// other's pages in the cache.
	var searches, library []float64
	filter := sessiondb.SearchFilter{Limit: searchLimit}
	for pass := range searchPasses {
		for _, q := range b.wl.queries {
			for turn := range 2 {
				if (turn+pass)%2 == 0 {
					t := b.cfg.now()
					if _, err := st.SearchMessages(ctx, q.Q, filter); err != nil {
						return sessiondb.Wrap("", err, "search %q", q.Q)
					}
					library = append(library, ms(b.since(t)))
					continue
				}
				s, err := get(fmt.Sprintf("/api/v1/search?limit=%d&q=%s", searchLimit, url.QueryEscape(q.Q)), nil)
				if err != nil {
					return err
				}
				searches = append(searches, s)
			}
		}
	}
	r.Search, r.LibrarySearch = latencyOf(searches), latencyOf(library)
	if r.LibrarySearch.P95MS > 0 {
		r.SearchP95Ratio = round(r.Search.P95MS/r.LibrarySearch.P95MS, 3)
	}

	b.p.phase("serve: live events, %d appends per path", serveLiveRuns)
	other, err := store.Open(ctx, path, store.Options{Now: b.cfg.now})
	if err != nil {
		return sessiondb.Wrap("", err, "open a second handle on the store")
	}
	defer other.Close()
	for name, writer := range map[string]sessiondb.Store{"same_store": st, "other_handle": other} {
		samples, err := b.liveLatency(ctx, base, writer)
		if err != nil {
			return err
		}
		r.Live[name] = latencyOf(samples)
	}
	res.Serve = r
	b.p.phase("serve: list p95 %.2f ms, first transcript page p95 %.2f ms, search p95 %.2f ms (library %.2f), live p50 %.2f ms",
		r.List["started_first"].P95MS, r.Transcript["start"].P95MS, r.Search.P95MS, r.LibrarySearch.P95MS, r.Live["other_handle"].P50MS)
	return nil
}

// liveLatency appends serveLiveRuns messages to a session one at a time
// through w and times each from the call to its event on the stream.
func (b *bencher) liveLatency(ctx context.Context, base string, w sessiondb.Store) ([]float64, error) {
	id := "bench_serve_live_" + hex.EncodeToString([]byte(fmt.Sprint(b.cfg.now().UnixNano())))[:12]
	if _, err := w.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "bench"}); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(sctx, "GET", base+"/api/v1/sessions/"+id+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "open the event stream")
	}
	defer resp.Body.Close()
	events := make(chan string, serveLiveRuns)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				events <- id
			}
		}
		close(events)
	}()
	// The stream is open once its retry line has been read; a first
	// append and its event make sure it is also listening.
	samples := make([]float64, 0, serveLiveRuns)
	text := "live"
	for i := range serveLiveRuns + 1 {
		t := b.cfg.now()
		n, err := w.AppendMessage(ctx, sessiondb.NewMessage{SessionID: id, Role: "user", Content: &text})
		if err != nil {
			return nil, err
		}
		want, seen := fmt.Sprint(n), false
		for got := range events {
			if got == want {
				seen = true
				break
			}
		}
		if !seen {
			return nil, sessiondb.Errorf(sessiondb.EINTERNAL, "the event stream ended before message %s", want)
		}
		if i > 0 {
			samples = append(samples, ms(b.since(t)))
		}
		if sctx.Err() != nil {
			return nil, sctx.Err()
		}
	}
	return samples, nil
}

// countSessions counts every session, children included.
func countSessions(ctx context.Context, st sessiondb.Store) (int, error) {
	n, err := st.SessionCount(ctx, "")
	return int(n), err
}

// longSession is the long session of the serve phase: user turns and
// assistant answers, every fourth answer a tool call with its result.
func longSession(now time.Time) map[string]any {
	start := sessiondb.EpochSeconds(now.Add(-24 * time.Hour))
	msgs := make([]any, 0, serveLongMessages)
	for i := 0; len(msgs) < serveLongMessages; i++ {
		ts := start + float64(len(msgs))
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("question %d about the deploy", i), "timestamp": ts})
		if i%4 == 3 && len(msgs)+2 <= serveLongMessages {
			call := fmt.Sprintf("call_%d", i)
			msgs = append(msgs,
				map[string]any{"role": "assistant", "timestamp": ts + 0.1,
					"tool_calls": []any{map[string]any{"id": call, "type": "function", "function": map[string]any{"name": "shell", "arguments": `{"cmd":"ls"}`}}}},
				map[string]any{"role": "tool", "tool_call_id": call, "tool_name": "shell", "content": strings.Repeat("file.txt\n", 20), "timestamp": ts + 0.2})
			continue
		}
		if len(msgs) < serveLongMessages {
			msgs = append(msgs, map[string]any{"role": "assistant", "content": fmt.Sprintf("answer %d: it is done", i), "timestamp": ts + 0.5})
		}
	}
	return map[string]any{"id": serveLongID, "source": "cli", "model": "bench", "started_at": start, "messages": msgs}
}
