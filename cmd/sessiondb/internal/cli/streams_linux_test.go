package cli

import (
	"os"
	"testing"

	"github.com/sessiondb/sessiondb/internal/testkit"
)

// TestIsTerminal: a pseudo-terminal is a terminal; /dev/null, a character
// device too, is not, nor is a pipe or a file.
func TestIsTerminal(t *testing.T) {
	tty, _ := testkit.Terminal(t)
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.Create(t.TempDir() + "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, c := range []struct {
		name string
		s    any
		want bool
	}{
		{"pseudo-terminal", tty, true}, {"/dev/null", devNull, false},
		{"pipe", r, false}, {"file", file, false}, {"not a file", &testkit.Buffer{}, false},
	} {
		if got := IsTerminal(c.s); got != c.want {
			t.Errorf("IsTerminal(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}
