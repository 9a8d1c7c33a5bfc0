package hostd

import (
	"sync"
	"time"

	"github.com/sessiondb/sessiondb/internal/filewatch"
	"github.com/sessiondb/sessiondb/mailbox"
)

// watchSet keeps a file watcher on the folder of every session whose
// container runs and calls onChange on each outbound write, so a running
// agent's replies go out at once rather than at the next tick. The
// watchers come from one Hub: a host with hundreds of running sessions
// holds one notification instance, not one each (the user's limit is 128
// on Linux, shared with every other program).
type watchSet struct {
	poll     time.Duration
	onChange func(mailbox.SessionRef)
	layout   mailbox.Layout
	hub      *filewatch.Hub

	mu       sync.Mutex
	closed   bool
	watchers map[mailbox.SessionRef]*filewatch.Watcher
}

func newWatchSet(layout mailbox.Layout, poll time.Duration, onChange func(mailbox.SessionRef)) *watchSet {
	return &watchSet{layout: layout, poll: poll, onChange: onChange, hub: filewatch.NewHub(), watchers: map[mailbox.SessionRef]*filewatch.Watcher{}}
}

// sync watches exactly the sessions in live: it closes the watchers of
// sessions no longer there and starts one for each new session.
func (s *watchSet) sync(live map[mailbox.SessionRef]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for ref, w := range s.watchers {
		if !live[ref] {
			w.Close()
			delete(s.watchers, ref)
		}
	}
	for ref := range live {
		if s.watchers[ref] != nil {
			continue
		}
		dir, err := s.layout.SessionDir(ref)
		if err != nil {
			continue
		}
		w, err := s.hub.Notify(dir, []string{mailbox.OutboundFile, mailbox.OutboundFile + "-journal"}, filewatch.Options{Interval: s.poll, CommitsOnly: true},
			func() { s.onChange(ref) })
		if err != nil {
			continue
		}
		s.watchers[ref] = w
	}
}

// close stops every watcher and the Hub; sync does nothing afterwards.
func (s *watchSet) close() {
	s.mu.Lock()
	s.closed = true
	watchers := s.watchers
	s.watchers = map[mailbox.SessionRef]*filewatch.Watcher{}
	s.mu.Unlock()
	for _, w := range watchers {
		w.Close()
	}
	s.hub.Close()
}
