package storetest

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// delegateFamily makes p with every kind of child Hermes tells apart, each
// with one message holding "osprey": d1, a delegate subagent of p
// (_delegate_from p); d2, d1's own delegate; u2, an untagged child of d1;
// x, a delegate marked for p whose parent link is gone; b, a /branch of p
// (_branched_from); u, an untagged child of p; n, a child whose marker is
// null; q with its delegate qd, which nothing here touches.
func (e *env) delegateFamily() {
	e.t.Helper()
	marked := func(id, parent string, cfg map[string]any) {
		e.createWith(sessiondb.NewSession{ID: id, Source: "cli", ParentSessionID: parent, ModelConfig: cfg})
		e.msg(id, "user", "osprey in "+id)
	}
	marked("p", "", nil)
	marked("q", "", nil)
	marked("d1", "p", map[string]any{"_delegate_from": "p"})
	marked("d2", "d1", map[string]any{"_delegate_from": "d1"})
	marked("u2", "d1", nil)
	marked("x", "", map[string]any{"_delegate_from": "p"})
	marked("b", "p", map[string]any{"_branched_from": "p"})
	marked("u", "p", nil)
	marked("n", "p", map[string]any{"_delegate_from": nil})
	marked("qd", "q", map[string]any{"_delegate_from": "q"})
}

// sessionIDs returns the ids of the sessions that exist, sorted.
func (e *env) sessionIDs() []string {
	e.t.Helper()
	var ids []string
	noErr(e.t, "EachSession", sessiondb.EachSession(e.ctx, e.s, "", func(s *sessiondb.Session) bool {
		ids = append(ids, s.ID)
		return true
	}))
	sort.Strings(ids)
	return ids
}

// testDeleteDelegates covers DeleteSession's cascade to delegate
// subagents, as Hermes' delete_session has it, and PruneSessions' lack of
// one, as Hermes' prune_sessions has it.
func testDeleteDelegates(t *testing.T, h Harness) {
	t.Run("Delete", func(t *testing.T) {
		e := newEnv(t, h)
		e.delegateFamily()
		want := []string{"d1", "d2", "x"}
		got, err := e.s.DelegatesOf(e.ctx, "p")
		noErr(t, "DelegatesOf", err)
		if !slices.Equal(got, want) {
			t.Errorf("DelegatesOf(p) = %v, want %v", got, want)
		}
		ids, err := e.s.DeleteSession(e.ctx, "p")
		noErr(t, "DeleteSession", err)
		if w := append([]string{"p"}, want...); !slices.Equal(ids, w) {
			t.Errorf("DeleteSession(p) = %v, want %v", ids, w)
		}
		if left, w := e.sessionIDs(), []string{"b", "n", "q", "qd", "u", "u2"}; !slices.Equal(left, w) {
			t.Errorf("sessions left %v, want %v", left, w)
		}
		e.checkParents(t, []string{"b", "u", "n", "u2"}, map[string]string{"qd": "q"})
		var found []string
		for _, hit := range e.search("osprey", sessiondb.SearchFilter{Limit: 100}) {
			found = append(found, hit.SessionID)
		}
		sort.Strings(found)
		if w := []string{"b", "n", "q", "qd", "u", "u2"}; !slices.Equal(found, w) {
			t.Errorf("search finds messages of %v, want those of %v", found, w)
		}
	})
	t.Run("DeleteADelegate", func(t *testing.T) {
		e := newEnv(t, h)
		e.delegateFamily()
		ids, err := e.s.DeleteSession(e.ctx, "d1")
		noErr(t, "DeleteSession", err)
		if w := []string{"d1", "d2"}; !slices.Equal(ids, w) {
			t.Errorf("DeleteSession(d1) = %v, want %v", ids, w)
		}
		e.checkParents(t, []string{"u2"}, map[string]string{"b": "p", "u": "p"})
	})
	t.Run("NoDelegates", func(t *testing.T) {
		e := newEnv(t, h)
		e.delegateFamily()
		got, err := e.s.DelegatesOf(e.ctx, "b")
		noErr(t, "DelegatesOf", err)
		if got == nil || len(got) != 0 {
			t.Errorf("DelegatesOf(b) = %#v, want []", got)
		}
		got, err = e.s.DelegatesOf(e.ctx, "ghost")
		if err != nil || len(got) != 0 {
			t.Errorf("DelegatesOf(ghost) = %v, %v; want none", got, err)
		}
	})
	t.Run("PruneOrphansDelegates", func(t *testing.T) {
		e := newEnv(t, h)
		e.delegateFamily()
		e.end("p", "cli_close")
		e.clock.Advance(48 * time.Hour)
		n, err := e.s.PruneSessions(e.ctx, 1, "")
		noErr(t, "PruneSessions", err)
		if n != 1 {
			t.Errorf("PruneSessions = %d, want 1 (p only)", n)
		}
		e.checkParents(t, []string{"d1", "b", "u", "n"}, map[string]string{"d2": "d1"})
		if cfg := deref(e.get("d1").ModelConfig); !strings.Contains(cfg, `"_delegate_from"`) {
			t.Errorf("d1's model_config after the prune = %q, want its marker kept", cfg)
		}
	})
}

// archivedIDs returns the sessions whose export carries archived = 1, of
// ids.
func (e *env) archivedIDs(ids ...string) []string {
	e.t.Helper()
	var out []string
	for _, id := range ids {
		if e.exported(id)["archived"] == 1.0 {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// archivable reports whether the store says it can archive (the web UI
// offers archiving only then).
func archivable(s any) bool {
	a, ok := s.(interface{ Archivable() bool })
	return ok && a.Archivable()
}

// testArchive covers SetSessionArchived: Hermes' set_session_archived on
// a compression lineage. A store without the column (a schema-6 file)
// refuses it whole.
func testArchive(t *testing.T, h Harness) {
	e := newEnv(t, h)
	// r → m → tip by compression; bb and dd children of m (which ended
	// by compression), oc a child of tip (which did not); z unrelated.
	e.compressionChain("r", "m", "tip")
	e.createWith(sessiondb.NewSession{ID: "bb", Source: "cli", ParentSessionID: "m", ModelConfig: map[string]any{"_branched_from": "m"}})
	e.child("oc", "tip")
	e.create("z", "cli")
	all := []string{"r", "m", "tip", "bb", "oc", "z"}
	archived := func() []string { return e.archivedIDs(all...) }
	n, err := e.s.SetSessionArchived(e.ctx, "m", true)
	if sessiondb.ErrorCode(err) == sessiondb.EINVALID {
		if !strings.Contains(err.Error(), "archived") {
			t.Errorf("refusal %q does not name the archived column", err)
		}
		if got := archived(); len(got) != 0 {
			t.Errorf("archived after a refusal: %v", got)
		}
		if archivable(e.s) {
			t.Error("Archivable is true for a store that refuses to archive")
		}
		return
	}
	noErr(t, "SetSessionArchived(m)", err)
	if !archivable(e.s) {
		t.Error("Archivable is false for a store that archives")
	}
	if want := []string{"bb", "m", "r", "tip"}; n != 4 || !slices.Equal(archived(), want) {
		t.Errorf("archive m: %d set, archived %v; want 4, %v", n, archived(), want)
	}
	n, err = e.s.SetSessionArchived(e.ctx, "tip", false)
	noErr(t, "SetSessionArchived(tip, false)", err)
	if want := []string{"bb"}; n != 3 || !slices.Equal(archived(), want) {
		t.Errorf("unarchive tip: %d set, archived %v; want 3 (tip and its ancestors), %v", n, archived(), want)
	}
	n, err = e.s.SetSessionArchived(e.ctx, "z", true)
	noErr(t, "SetSessionArchived(z)", err)
	if want := []string{"bb", "z"}; n != 1 || !slices.Equal(archived(), want) {
		t.Errorf("archive z: %d set, archived %v; want 1, %v", n, archived(), want)
	}
	if n, err := e.s.SetSessionArchived(e.ctx, "ghost", true); err != nil || n != 0 {
		t.Errorf("SetSessionArchived(ghost) = %d, %v; want 0, nil", n, err)
	}
	if s := e.get("z"); s.MessageCount != 0 || s.ID != "z" {
		t.Errorf("archived z reads as %+v", s)
	}
}
