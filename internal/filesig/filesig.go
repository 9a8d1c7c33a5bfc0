// Package filesig notices that a file changed without opening it: its size
// and modification time, as one comparable value. The mailbox uses it to
// skip re-reading a file that did not move, and the host daemon to skip
// sessions whose files did not.
package filesig

import (
	"os"
	"time"
)

// Sig is what is remembered of a file: the zero Sig means "not found".
// Two Sigs are compared with ==.
type Sig struct {
	size  int64
	mtime time.Time
	found bool
}

// Of stats path; a file that cannot be stat'ed gives the zero Sig.
func Of(path string) Sig {
	fi, err := os.Stat(path)
	if err != nil {
		return Sig{}
	}
	return Sig{size: fi.Size(), mtime: fi.ModTime(), found: true}
}

// Found reports whether the file existed when it was stat'ed.
func (s Sig) Found() bool { return s.found }
