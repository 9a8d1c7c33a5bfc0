package cli

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Confirm asks a person before a command destroys something. When stdin
// is a terminal and yes (--yes) is not set, show writes what would be
// removed (counts, ids, titles) on Err, question is asked there, and
// anything but y or yes returns ErrCancelled (exit 6), which says nothing
// was changed and that --yes skips the question. Without a terminal (a script,
// a pipe, a cron job) there is nobody to ask and the command goes ahead:
// it was named in full, as delete has always done. show may be nil.
func (f *Factory) Confirm(yes bool, show func(w io.Writer) error, question string) error {
	if yes || !IsTerminal(f.In) {
		return nil
	}
	if show != nil {
		if err := show(f.Err); err != nil {
			return err
		}
	}
	if Ask(f.In, f.Err, Printable(question)+" [y/N] ") {
		return nil
	}
	return ErrCancelled
}

// Ask writes question q on w and reports whether the answer read from r
// is y or yes (any case).
func Ask(r io.Reader, w io.Writer, q string) bool {
	fmt.Fprint(w, q)
	line, _ := bufio.NewReader(r).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
