package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/mattn/go-isatty"

	"github.com/sessiondb/sessiondb"
)

// Streams are a command's standard input, output and error.
//
// Out and Err must be safe for concurrent writes: the host daemon's log and
// the output of the processes it starts, or bench's worker processes, reach
// them at once. An *os.File is; tests use testkit.Buffer.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// IsTerminal reports whether s (a stream) is a terminal, as a person's
// console is and a pipe, file or buffer is not. The terminal driver is
// asked (isatty's ioctl): being a character device is not enough, since
// /dev/null is one too, and it is the stdin of systemd units, cron jobs,
// `ssh -n` and `nohup`.
func IsTerminal(s any) bool {
	f, ok := s.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// Styled reports whether Out gets ANSI styles: only a terminal does, and
// not when the user asked for none with NO_COLOR (https://no-color.org).
func (s Streams) Styled() bool {
	return IsTerminal(s.Out) && os.Getenv("NO_COLOR") == ""
}

// Printf writes human-readable output on Out.
func (s Streams) Printf(format string, args ...any) {
	fmt.Fprintf(s.Out, format, args...)
}

// PrintJSON writes v as indented JSON on Out. HTML escaping is off: the
// output is for scripts and people, not for embedding in a web page.
func (s Streams) PrintJSON(v any) error {
	enc := json.NewEncoder(s.Out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "write output")
	}
	return nil
}
