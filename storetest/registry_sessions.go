package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// testResolveSession holds the resolver to spec A4, mode by mode.
func testResolveSession(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	e.group("ag", "Agent")
	e.group("other", "Other")
	chat := e.chat("mg-1", "slack", "C1", "General", true)
	chat2 := e.chat("mg-2", "slack", "C2", "Random", true)

	at := e.at()
	shared, created := e.resolve("ag", chat.ID, "t1", sessiondb.ModeShared)
	if !created || !generatedID("sess").MatchString(shared.ID) {
		t.Fatalf("first shared resolve = %+v, created %v", shared, created)
	}
	if shared.AgentGroupID != "ag" || shared.MessagingGroupID != chat.ID || shared.ThreadID != "" ||
		shared.Status != sessiondb.SessionActive || shared.ContainerStatus != sessiondb.ContainerStopped || !shared.LastActive.IsZero() {
		t.Errorf("new shared session = %+v: want no thread, active, stopped, never active", shared)
	}
	sameTime(t, "created_at", shared.CreatedAt, at)
	if shared.Ref() != (sessiondb.SessionRef{AgentGroupID: "ag", SessionID: shared.ID}) {
		t.Errorf("Ref = %+v", shared.Ref())
	}

	cases := []struct {
		name    string
		ag, mg  string
		thread  string
		mode    sessiondb.SessionMode
		same    string // "" = new session; "shared" = the shared one; "t1" = the t1 thread's
		created bool
	}{
		{"shared finds the chat's session whatever the thread", "ag", chat.ID, "t9", sessiondb.ModeShared, "shared", false},
		{"per-thread with a thread is its own session", "ag", chat.ID, "t1", sessiondb.ModePerThread, "", true},
		{"per-thread finds it again", "ag", chat.ID, "t1", sessiondb.ModePerThread, "t1", false},
		{"per-thread with no thread finds the shared one", "ag", chat.ID, "", sessiondb.ModePerThread, "shared", false},
		{"another agent in the same chat gets its own", "other", chat.ID, "", sessiondb.ModeShared, "", true},
	}
	var t1 sessiondb.AgentSession
	for _, c := range cases {
		s, created := e.resolve(c.ag, c.mg, c.thread, c.mode)
		if created != c.created {
			t.Errorf("%s: created = %v, want %v", c.name, created, c.created)
		}
		switch c.same {
		case "shared":
			if s.ID != shared.ID {
				t.Errorf("%s: got %s, want the shared session %s", c.name, s.ID, shared.ID)
			}
		case "t1":
			if s.ID != t1.ID {
				t.Errorf("%s: got %s, want the t1 session %s", c.name, s.ID, t1.ID)
			}
		default:
			if s.ID == shared.ID || s.AgentGroupID != c.ag {
				t.Errorf("%s: got %+v, want a new session of %s", c.name, s, c.ag)
			}
		}
		if c.mode == sessiondb.ModePerThread && c.thread == "t1" {
			if s.ThreadID != "t1" {
				t.Errorf("%s: per-thread session stores thread %q", c.name, s.ThreadID)
			}
			t1 = s
		}
	}

	t.Run("agent-shared", func(t *testing.T) {
		newest, created := e.resolve("ag", chat2.ID, "t5", sessiondb.ModeShared)
		if !created {
			t.Fatalf("chat2 session not created")
		}
		s, created := e.resolve("ag", "", "", sessiondb.ModeAgentShared)
		if created || s.ID != newest.ID {
			t.Errorf("agent-shared = %s (created %v), want the group's newest active session %s", s.ID, created, newest.ID)
		}
		s, _ = e.resolve("ag", chat.ID, "x", sessiondb.ModeAgentShared)
		if s.ID != newest.ID {
			t.Errorf("agent-shared from another chat = %s, want %s", s.ID, newest.ID)
		}
		e.group("lonely", "Lonely")
		s, created = e.resolve("lonely", chat.ID, "x", sessiondb.ModeAgentShared)
		if !created || s.MessagingGroupID != chat.ID || s.ThreadID != "" {
			t.Errorf("agent-shared without sessions = %+v, %v; want a new one with the chat and no thread", s, created)
		}
	})
	t.Run("no chat means a new session", func(t *testing.T) {
		a, created1 := e.resolve("ag", "", "", sessiondb.ModeShared)
		b, created2 := e.resolve("ag", "", "", sessiondb.ModeShared)
		if !created1 || !created2 || a.ID == b.ID || a.MessagingGroupID != "" {
			t.Errorf("two resolves without a chat = %s, %s; want two new sessions without a chat", a.ID, b.ID)
		}
	})
	t.Run("closed sessions are not reused", func(t *testing.T) {
		noErr(t, "close", e.r.CloseSession(e.ctx, shared.ID))
		s, created := e.resolve("ag", chat.ID, "", sessiondb.ModeShared)
		if !created || s.ID == shared.ID {
			t.Errorf("after closing, resolve = %s (created %v); want a new session", s.ID, created)
		}
		got, _ := e.r.GetAgentSession(e.ctx, shared.ID)
		if got.Status != sessiondb.SessionClosed {
			t.Errorf("closed session status = %q", got.Status)
		}
		noErr(t, "close again", e.r.CloseSession(e.ctx, shared.ID))
	})
	t.Run("find without creating", func(t *testing.T) {
		s, found, err := e.r.FindActiveSession(e.ctx, sessiondb.SessionLookup{AgentGroupID: "ag", MessagingGroupID: chat.ID, ThreadID: "t1", Mode: sessiondb.ModePerThread})
		if err != nil || !found || s.ID != t1.ID {
			t.Errorf("FindActiveSession = %+v, %v, %v", s, found, err)
		}
		_, found, err = e.r.FindActiveSession(e.ctx, sessiondb.SessionLookup{AgentGroupID: "ag", MessagingGroupID: chat.ID, ThreadID: "t404", Mode: sessiondb.ModePerThread})
		if err != nil || found {
			t.Errorf("FindActiveSession of a new thread = %v, %v", found, err)
		}
		page, _ := e.r.ListAgentSessions(e.ctx, sessiondb.AgentSessionFilter{AgentGroupID: "ag", MessagingGroupID: chat.ID})
		for _, s := range page.Sessions {
			if s.ThreadID == "t404" {
				t.Errorf("FindActiveSession created %+v", s)
			}
		}
	})
	t.Run("refusals", func(t *testing.T) {
		_, _, err := e.r.ResolveSession(e.ctx, sessiondb.SessionLookup{AgentGroupID: "ag-missing", MessagingGroupID: chat.ID, Mode: sessiondb.ModeShared})
		wantCode(t, "unknown agent group", err, sessiondb.ENOTFOUND)
		_, _, err = e.r.ResolveSession(e.ctx, sessiondb.SessionLookup{AgentGroupID: "ag", MessagingGroupID: "mg-missing", Mode: sessiondb.ModeShared})
		wantCode(t, "unknown chat", err, sessiondb.ENOTFOUND)
		_, _, err = e.r.ResolveSession(e.ctx, sessiondb.SessionLookup{AgentGroupID: "ag", MessagingGroupID: chat.ID, Mode: "thread"})
		wantCode(t, "bad mode", err, sessiondb.EINVALID)
		_, _, err = e.r.ResolveSession(e.ctx, sessiondb.SessionLookup{AgentGroupID: "../x", Mode: sessiondb.ModeShared})
		wantCode(t, "hostile agent group", err, sessiondb.EINVALID)
	})
}

// testSessionRegistry covers the registry rows' upkeep and the listing.
func testSessionRegistry(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	e.group("ag", "Agent")
	e.group("bg", "B")
	chat := e.chat("mg", "telegram", "1", "", false)
	var made []sessiondb.AgentSession
	for i := 0; i < 7; i++ {
		s, _ := e.resolve("ag", "", "", sessiondb.ModeShared)
		made = append(made, s)
	}
	b, _ := e.resolve("bg", chat.ID, "", sessiondb.ModeShared)

	s := made[0]
	e.tick()
	noErr(t, "touch", e.r.TouchSession(e.ctx, s.ID))
	got, _ := e.r.GetAgentSession(e.ctx, s.ID)
	sameTime(t, "last_active after touch", got.LastActive, e.at())
	e.tick()
	noErr(t, "spawn", e.r.SetContainerStatus(e.ctx, s.ID, sessiondb.ContainerRunning))
	got, _ = e.r.GetAgentSession(e.ctx, s.ID)
	if got.ContainerStatus != sessiondb.ContainerRunning {
		t.Errorf("container status = %q", got.ContainerStatus)
	}
	sameTime(t, "last_active after spawn", got.LastActive, e.at())
	e.tick()
	noErr(t, "idle", e.r.SetContainerStatus(e.ctx, made[1].ID, sessiondb.ContainerIdle))
	got, _ = e.r.GetAgentSession(e.ctx, made[1].ID)
	if got.ContainerStatus != sessiondb.ContainerIdle || !got.LastActive.IsZero() {
		t.Errorf("idle session = %+v: only running bumps last_active", got)
	}
	wantCode(t, "bad container status", e.r.SetContainerStatus(e.ctx, s.ID, "paused"), sessiondb.EINVALID)
	wantCode(t, "touch missing", e.r.TouchSession(e.ctx, "sess-missing"), sessiondb.ENOTFOUND)
	wantCode(t, "status of missing", e.r.SetContainerStatus(e.ctx, "sess-missing", sessiondb.ContainerStopped), sessiondb.ENOTFOUND)
	wantCode(t, "close missing", e.r.CloseSession(e.ctx, "sess-missing"), sessiondb.ENOTFOUND)
	_, err := e.r.GetAgentSession(e.ctx, "sess-missing")
	wantCode(t, "get missing", err, sessiondb.ENOTFOUND)

	running, err := e.r.ListAgentSessions(e.ctx, sessiondb.AgentSessionFilter{ContainerStatus: sessiondb.ContainerRunning})
	if err != nil || len(running.Sessions) != 1 || running.Sessions[0].ID != s.ID {
		t.Errorf("running sessions = %+v, %v", running, err)
	}
	n, err := e.r.StopAllContainers(e.ctx)
	if err != nil || n != 2 {
		t.Errorf("StopAllContainers = %d, %v; want the running and the idle one", n, err)
	}
	running, _ = e.r.ListAgentSessions(e.ctx, sessiondb.AgentSessionFilter{ContainerStatus: sessiondb.ContainerRunning})
	if len(running.Sessions) != 0 {
		t.Errorf("still running: %+v", running.Sessions)
	}

	t.Run("listing pages newest first", func(t *testing.T) {
		var seen []string
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("paging does not end")
			}
			p, err := e.r.ListAgentSessions(e.ctx, sessiondb.AgentSessionFilter{AgentGroupID: "ag", Limit: 3, Cursor: cursor})
			noErr(t, "page", err)
			if len(p.Sessions) > 3 {
				t.Fatalf("page of %d", len(p.Sessions))
			}
			seen = append(seen, pluck(p.Sessions, func(s sessiondb.AgentSession) string { return s.ID })...)
			if p.NextCursor == "" {
				break
			}
			cursor = p.NextCursor
		}
		var want []string
		for i := len(made) - 1; i >= 0; i-- {
			want = append(want, made[i].ID)
		}
		if fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Errorf("paged ids = %v, want %v", seen, want)
		}
		all, _ := e.r.ListAgentSessions(e.ctx, sessiondb.AgentSessionFilter{})
		if len(all.Sessions) != 8 || all.Sessions[0].ID != b.ID || all.NextCursor != "" {
			t.Errorf("unfiltered listing = %d sessions, first %s", len(all.Sessions), all.Sessions[0].ID)
		}
		noErr(t, "close", e.r.CloseSession(e.ctx, made[3].ID))
		active, _ := e.r.ListAgentSessions(e.ctx, sessiondb.AgentSessionFilter{AgentGroupID: "ag", Status: sessiondb.SessionActive})
		if len(active.Sessions) != 6 {
			t.Errorf("active sessions = %d, want 6", len(active.Sessions))
		}
		_, err := e.r.ListAgentSessions(e.ctx, sessiondb.AgentSessionFilter{Cursor: "not a cursor!"})
		wantCode(t, "bad cursor", err, sessiondb.EINVALID)
	})
}

// testResolveConcurrently: goroutines on two handles (two processes' worth)
// resolving the same keys at once create exactly one session per key
// (spec A4 [IMP]).
func testResolveConcurrently(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	e.group("ag", "Agent")
	e.group("bg", "B")
	var chats []string
	for i := 0; i < 4; i++ {
		chats = append(chats, e.chat(fmt.Sprintf("mg-%d", i), "slack", fmt.Sprintf("C%d", i), "", true).ID)
	}
	handles := []sessiondb.Registry{e.r, e.reopen()}
	type key struct{ ag, mg, thread string }
	var keys []key
	for _, ag := range []string{"ag", "bg"} {
		for _, mg := range chats {
			keys = append(keys, key{ag, mg, ""}, key{ag, mg, "th"})
		}
	}
	const perHandle = 8
	var mu sync.Mutex
	got := map[key]map[string]bool{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, r := range handles {
		for g := 0; g < perHandle; g++ {
			wg.Add(1)
			go func(r sessiondb.Registry, g int) {
				defer wg.Done()
				<-start
				for i := range keys {
					k := keys[(i+g)%len(keys)]
					mode := sessiondb.ModeShared
					if k.thread != "" {
						mode = sessiondb.ModePerThread
					}
					s, _, err := r.ResolveSession(e.ctx, sessiondb.SessionLookup{AgentGroupID: k.ag, MessagingGroupID: k.mg, ThreadID: k.thread, Mode: mode})
					if err != nil {
						t.Errorf("ResolveSession: %v", err)
						return
					}
					mu.Lock()
					if got[k] == nil {
						got[k] = map[string]bool{}
					}
					got[k][s.ID] = true
					mu.Unlock()
				}
			}(r, g)
		}
	}
	close(start)
	wg.Wait()
	for _, k := range keys {
		if len(got[k]) != 1 {
			t.Errorf("%+v resolved to %d sessions: %v", k, len(got[k]), got[k])
		}
	}
	all, err := e.r.ListAgentSessions(e.ctx, sessiondb.AgentSessionFilter{Limit: 1000})
	noErr(t, "list", err)
	if len(all.Sessions) != len(keys) {
		t.Errorf("%d sessions stored, want one per key: %d", len(all.Sessions), len(keys))
	}
}
