package cli

import "github.com/sessiondb/sessiondb/internal/safetext"

// Printable returns stored text (a message, a title, an id, a file path,
// an error from a store) ready for a person's terminal: see safetext.Text
// (control, C1 and invisible format characters shown as escapes; newlines
// and tabs kept). --json output never goes through here: it stays
// byte-exact.
func Printable(s string) string { return safetext.Text(s) }

// PrintableLine is Printable for text that must stay on one line (table
// cells, list entries): newlines and tabs are escaped as well.
func PrintableLine(s string) string { return safetext.Line(s) }
