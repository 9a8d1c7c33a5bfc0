package mailbox

import "github.com/sessiondb/sessiondb/internal/filewatch"

// Watcher wakes waiters when chosen files of one folder change (see
// filewatch.Watcher): notification where the OS gives it, polling always.
type Watcher = filewatch.Watcher

// WatchOptions configure NewWatcher.
type WatchOptions = filewatch.Options

// NewWatcher watches the files named names (base names) inside dir. When
// the OS gives no notification for dir, it falls back to polling alone.
func NewWatcher(dir string, names []string, o WatchOptions) (*Watcher, error) {
	if o.Interval <= 0 {
		o.Interval = DefaultPollInterval
	}
	return filewatch.NewWatcher(dir, names, o)
}
