package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
)

// TestCPUProfileRefusesALink: --cpuprofile names a file to write; a link
// planted there is refused before anything runs and its target is left
// alone (os.Create used to truncate it).
func TestCPUProfileRefusesALink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "cpu.pprof")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := benchRunCLI(t, "bench", "--workload", filepath.Join(dir, "none.jsonl"), "--cpuprofile", link, "--quiet")
	if code != cli.ExitInvalid || !strings.Contains(stderr, "symbolic link") {
		t.Errorf("exit %d, stderr %q; want invalid naming the link", code, stderr)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the link's target now holds %.40q", b)
	}
}
