package hostd

import (
	"bytes"
	"io"
	"strings"
	"sync"

	"github.com/sessiondb/sessiondb/internal/safetext"
)

// maxWakeLine bounds the part of a line a wake process may keep unwritten:
// a longer one is written in pieces, so a process that never ends a line
// cannot grow the host's memory.
const maxWakeLine = 16 << 10

// wakeOutput passes a wake process's output on to the host's own output a
// line at a time, each line under prefix (which process said it: the
// output of several processes, and the host's log, share one stream) and
// with what a terminal would obey escaped (safetext.Line): an agent's
// output is not the host's to trust. mu is shared by every wakeOutput of
// one waker, so lines of two processes never interleave within a line.
type wakeOutput struct {
	mu     *sync.Mutex
	out    io.Writer
	prefix string
	buf    []byte
}

// Write writes the whole lines of p and keeps the rest for the next call.
// It never fails: the process must not stall on the host's output.
func (w *wakeOutput) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	for len(w.buf) >= maxWakeLine {
		w.emit(w.buf[:maxWakeLine])
		w.buf = w.buf[maxWakeLine:]
	}
	if len(w.buf) == 0 {
		w.buf = nil // let a long line's array go
	}
	return len(p), nil
}

// Flush writes what is left of an unfinished last line.
func (w *wakeOutput) Flush() {
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = nil
	}
}

func (w *wakeOutput) emit(line []byte) {
	s := strings.TrimSuffix(string(line), "\r")
	w.mu.Lock()
	defer w.mu.Unlock()
	io.WriteString(w.out, w.prefix+safetext.Line(s)+"\n")
}
