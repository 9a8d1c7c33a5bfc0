package http

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/internal/filewatch"
	"github.com/sessiondb/sessiondb/mailbox"
)

// mailboxFiles are the files of a session folder whose change is traffic:
// the two databases (with the journal whose removal is a commit) and the
// heartbeat.
var mailboxFiles = []string{mailbox.InboundFile, mailbox.InboundFile + "-journal",
	mailbox.OutboundFile, mailbox.OutboundFile + "-journal", mailbox.HeartbeatFile}

// liveRows is how many of a session's newest rows a live stream compares
// at each change.
const liveRows = 500

// mailboxEvents: GET /api/v1/mailboxes/{group}/{session}/events streams
// one session's traffic, woken by file-change notification on its folder
// (polling the files' size and mtime where the OS gives none): event
// "status" (the summary, when it changes), "inbound" and "outbound" (a
// row, when it appears or its state changes). The event id is the highest
// seq seen; a client resuming with Last-Event-ID N gets first every row
// with a seq above N, then the live traffic.
func (s *Server) mailboxEvents(w http.ResponseWriter, r *http.Request) error {
	after, resume, err := lastEventID(r)
	if err != nil {
		return err
	}
	ref, err := s.mailboxRef(r)
	if err != nil {
		return err
	}
	dir, _ := s.cfg.Mailboxes.Layout().SessionDir(ref)
	watch, err := s.watches.Watch(dir, mailboxFiles, s.watchOptions())
	if err != nil {
		return err
	}
	defer watch.Close()
	ctx, cancel := s.streamContext(r)
	defer cancel()
	st, err := s.startSSE(w, "mailbox")
	if err != nil {
		return nil
	}
	known := map[string]string{}
	var lastStatus []byte
	watermark := after
	for first := true; ; first = false {
		a, err := s.mailbox(ctx, ref, liveRows)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			// The status compared without its clock-dependent parts would
			// be stricter; a heartbeat is traffic too, so it is sent.
			if b, _ := json.Marshal(a.Session); string(b) != string(lastStatus) {
				lastStatus = b
				if st.event(strconv.FormatInt(watermark, 10), "status", a.Session) != nil {
					return nil
				}
			}
			type row struct {
				key, state, name string
				seq              int64
				v                any
			}
			var rows []row
			for _, x := range a.Inbound {
				rows = append(rows, row{"in:" + x.ID, x.State, "inbound", x.Seq, x})
			}
			for _, x := range a.Outbound {
				rows = append(rows, row{"out:" + x.ID, x.Delivery.Status, "outbound", x.Seq, x})
			}
			slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(a.seq, b.seq) })
			for _, x := range rows {
				old, seen := known[x.key]
				known[x.key] = x.state
				send := seen && old != x.state
				if !seen {
					// On the first look only rows past the resume point are
					// news; everything after that is.
					send = !first || (resume && x.seq > after)
				}
				watermark = max(watermark, x.seq)
				if send && st.event(strconv.FormatInt(watermark, 10), x.name, x.v) != nil {
					return nil
				}
			}
		} else if st.comment("unreadable: "+sessionErr(err)) != nil {
			return nil
		}
		if !s.waitChange(ctx, st, watch.C()) {
			return nil
		}
	}
}

// watchOptions are the options of the live streams' file watches: the
// polling fallback every cfg.Poll, mailbox.DefaultPollInterval by default.
func (s *Server) watchOptions() filewatch.Options {
	return filewatch.Options{Interval: cmp.Or(s.cfg.Poll, mailbox.DefaultPollInterval)}
}

// sessionErr is an error's code, for a comment line (no stored text).
func sessionErr(err error) string { return sessiondb.ErrorCode(err) }

// waitChange waits for a change on c, sending keep-alives meanwhile; false
// when the stream is over.
func (s *Server) waitChange(ctx context.Context, st *sseStream, c <-chan struct{}) bool {
	for {
		t := time.NewTimer(keepAlive)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-c:
			t.Stop()
			return true
		case <-t.C:
			if st.comment("keep-alive") != nil {
				return false
			}
		}
	}
}

// mailboxesEvents: GET /api/v1/mailboxes/events streams the whole data
// root: event "report" (every session's summary, as GET
// /api/v1/mailboxes) first and whenever sessions appear or go, then event
// "session" (one session's summary) each time that session's files
// change. Every (re)connection starts with a report: the state is small,
// so a resumed client is simply told it again.
func (s *Server) mailboxesEvents(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.streamContext(r)
	defer cancel()
	fw := newFolderWatch(s.watches, s.cfg.Mailboxes, s.watchOptions())
	defer fw.close()
	st, err := s.startSSE(w, "mailboxes")
	if err != nil {
		return nil
	}
	n := 0
	id := func() string { n++; return strconv.Itoa(n) }
	last := map[mailbox.SessionRef]string{}
	for {
		refsChanged, changed := fw.take()
		if refsChanged {
			if err := fw.sync(ctx); err != nil {
				s.log.Warn("live mailboxes", "err", err)
			}
			now := s.now()
			rep, err := hostd.Report(ctx, s.cfg.Mailboxes, s.cfg.DataRoot, now)
			if ctx.Err() != nil {
				return nil
			}
			if err == nil {
				for _, x := range rep.Sessions {
					b, _ := json.Marshal(x)
					last[x.Ref] = string(b)
				}
				if st.event(id(), "report", mailboxesAnswer{Now: now, DataReport: rep}) != nil {
					return nil
				}
			}
		} else {
			for _, ref := range changed {
				if _, ok := last[ref]; !ok {
					// A folder that just became a mailbox: a new report.
					fw.refsChanged()
					continue
				}
				rep, err := s.sessionReport(ctx, ref, s.now())
				if ctx.Err() != nil {
					return nil
				}
				if err != nil {
					continue
				}
				b, _ := json.Marshal(rep)
				if last[ref] == string(b) {
					continue
				}
				last[ref] = string(b)
				if st.event(id(), "session", rep) != nil {
					return nil
				}
			}
		}
		if !s.waitChange(ctx, st, fw.c) {
			return nil
		}
	}
}

// folderWatch watches every session folder under a data root (and the
// root and group folders, for sessions that appear or go) and says which
// changed. Its watches come from the server's Hub: a folder watched by
// several streams holds one watch.
type folderWatch struct {
	hub  *filewatch.Hub
	h    *mailbox.Host
	c    chan struct{}
	opts filewatch.Options

	mu        sync.Mutex
	dirs      map[string]*filewatch.Watcher // folder → its watch
	refsDirty bool
	dirty     map[mailbox.SessionRef]bool
}

func newFolderWatch(hub *filewatch.Hub, h *mailbox.Host, opts filewatch.Options) *folderWatch {
	return &folderWatch{hub: hub, h: h, c: make(chan struct{}, 1), opts: opts,
		dirs: map[string]*filewatch.Watcher{}, refsDirty: true, dirty: map[mailbox.SessionRef]bool{}}
}

func (f *folderWatch) signal() {
	select {
	case f.c <- struct{}{}:
	default:
	}
}

// take returns and clears what changed since the last take.
func (f *folderWatch) take() (refs bool, changed []mailbox.SessionRef) {
	f.mu.Lock()
	defer f.mu.Unlock()
	refs, f.refsDirty = f.refsDirty, false
	for r := range f.dirty {
		changed = append(changed, r)
	}
	clear(f.dirty)
	slices.SortFunc(changed, func(a, b mailbox.SessionRef) int { return cmp.Compare(a.String(), b.String()) })
	return refs, changed
}

// sync watches the root, every group folder and every session folder, and
// stops watching folders that are gone.
func (f *folderWatch) sync(ctx context.Context) error {
	root := f.h.Layout().Root
	want := map[string]func(){root: f.refsChanged}
	// Folders without a mailbox yet are watched too: their inbound.db is
	// on its way (InitSession links it into place), and its arrival must
	// be seen.
	refs, err := f.h.SessionFolders(ctx)
	if err != nil {
		return err
	}
	groups, _ := os.ReadDir(root)
	for _, g := range groups {
		if g.IsDir() {
			want[filepath.Join(root, g.Name())] = f.refsChanged
		}
	}
	for _, ref := range refs {
		dir, err := f.h.Layout().SessionDir(ref)
		if err != nil {
			continue
		}
		want[dir] = func() { f.sessionChanged(ref) }
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for dir, w := range f.dirs {
		if _, ok := want[dir]; !ok {
			w.Close()
			delete(f.dirs, dir)
		}
	}
	added := false
	defer func() {
		// A folder watched only now may have filled before its watch
		// began: look once more.
		if added {
			f.refsDirty = true
			f.signal()
		}
	}()
	for dir, on := range want {
		if _, ok := f.dirs[dir]; ok {
			continue
		}
		added = true
		var names []string
		if dir != root && filepath.Dir(dir) != root {
			names = mailboxFiles
		}
		w, err := f.hub.Notify(dir, names, f.opts, on)
		if err != nil {
			continue
		}
		f.dirs[dir] = w
	}
	return nil
}

func (f *folderWatch) refsChanged() {
	f.mu.Lock()
	f.refsDirty = true
	f.mu.Unlock()
	f.signal()
}

func (f *folderWatch) sessionChanged(ref mailbox.SessionRef) {
	f.mu.Lock()
	f.dirty[ref] = true
	f.mu.Unlock()
	f.signal()
}

func (f *folderWatch) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for dir, w := range f.dirs {
		w.Close()
		delete(f.dirs, dir)
	}
}
