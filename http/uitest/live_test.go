package uitest

import (
	"slices"
	"strconv"
	"testing"
	"time"
)

const liveID = "live_session_0001"

// openLive adds a session with one message and opens its transcript,
// waiting until the page follows the session's event stream.
func openLive(tb testing.TB) (*site, *page) {
	tb.Helper()
	s := newSite(tb, siteOptions{})
	s.session(liveID, "cli", "openai/gpt-5-codex", "Deploy the API")
	s.msg(sessionMsg(liveID, "user", "Deploy the API to staging and tell me when it is up."))
	p := newPage(tb)
	p.open(s.url + "/s/" + liveID)
	p.waitFor(`!document.getElementById("live-status").hidden`)
	return s, p
}

// TestBrowserLive watches messages written by another process appear in
// an open transcript: a message, a tool call, then its result, which goes
// inside its call.
func TestBrowserLive(t *testing.T) {
	s, p := openLive(t)
	a := startAppender(t, s.path)

	id, _ := a.append(appendCmd{Session: liveID, Role: "assistant", Content: "Deploying now, from another process."})
	p.waitFor(`!!document.getElementById("m` + strconv.FormatInt(id, 10) + `")`)
	// The text shows rendered as Markdown (its raw text folded below it).
	if txt := p.text("#m" + strconv.FormatInt(id, 10) + " .text.md"); txt != "Deploying now, from another process." {
		t.Errorf("live message shows %q", txt)
	}

	call, _ := a.append(appendCmd{Session: liveID, Role: "assistant",
		ToolCalls: []map[string]any{{"id": "call_live", "type": "function",
			"function": map[string]any{"name": "terminal", "arguments": `{"command":"kubectl rollout status deploy/api"}`}}}})
	p.waitFor(`!!document.getElementById("m` + strconv.FormatInt(call, 10) + `")`)
	res, _ := a.append(appendCmd{Session: liveID, Role: "tool", ToolCallID: "call_live", ToolName: "terminal",
		Content: `deployment "api" successfully rolled out`})
	p.waitFor(`!!document.querySelector("details.call .call-result #m` + strconv.FormatInt(res, 10) + `")`)
	if st := p.text(`details.call .call-state`); st != "result · 1 line" {
		t.Errorf("call state %q after its result came", st)
	}
	// Nothing twice, in order.
	ids := eval[[]string](p, `Array.from(document.querySelectorAll("#transcript article"), e => e.id)`)
	want := []string{"m" + strconv.FormatInt(id, 10), "m" + strconv.FormatInt(call, 10), "m" + strconv.FormatInt(res, 10)}
	if len(ids) != 4 || !slices.Equal(ids[1:], want) {
		t.Errorf("transcript holds %q, want the first message then %q", ids, want)
	}
	if n := p.text("#message-count"); n != "4" {
		t.Errorf("message count shows %s, want 4", n)
	}
	p.shot("live")

	// The latency from another process's commit to the message on the
	// screen, logged (timing is measured, not asserted: see
	// BenchmarkLiveLatency).
	lat := measureLive(p, a, 20)
	t.Logf("append-to-browser latency over %d appends: p50 %v, max %v", len(lat), lat[len(lat)/2], lat[len(lat)-1])
}

// measureLive has the appender write n messages, one after the other, and
// returns, sorted, how long each took from its commit in the other process
// to its element in the page (the page's own clock, by a MutationObserver:
// no polling from here adds to it).
func measureLive(p *page, a *appender, n int) []time.Duration {
	p.t.Helper()
	p.waitFor(`!document.getElementById("live-status").hidden`)
	eval[bool](p, `(() => {
		window.seenAt = {};
		const box = document.getElementById("transcript");
		new MutationObserver(() => {
			const now = performance.timeOrigin + performance.now();
			for (const el of box.querySelectorAll("article")) if (!(el.id in seenAt)) seenAt[el.id] = now;
		}).observe(box, {childList: true, subtree: true});
		return true;
	})()`)
	var out []time.Duration
	for i := 0; i < n; i++ {
		id, committed := a.append(appendCmd{Session: liveID, Role: "assistant", Content: "progress " + strconv.Itoa(i)})
		key := jsString("m" + strconv.FormatInt(id, 10))
		p.waitFor(`seenAt[` + key + `] !== undefined`)
		ms := eval[float64](p, `seenAt[`+key+`]`)
		out = append(out, time.Duration(ms*float64(time.Millisecond))-time.Duration(committed.UnixNano()))
	}
	slices.Sort(out)
	return out
}

// BenchmarkLiveLatency measures the live transcript: from a message's
// commit by another process to its element in an open page, through the
// store's change notification, the server's event stream and the page's
// fetch of the rendered message. It reports the median as p50-ms.
func BenchmarkLiveLatency(b *testing.B) {
	s, p := openLive(b)
	a := startAppender(b, s.path)
	b.ResetTimer()
	lat := measureLive(p, a, b.N)
	b.StopTimer()
	b.ReportMetric(float64(lat[len(lat)/2])/float64(time.Millisecond), "p50-ms")
	b.ReportMetric(float64(lat[len(lat)-1])/float64(time.Millisecond), "max-ms")
}
