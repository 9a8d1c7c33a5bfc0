package bench

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// TestCPUProfileRefusesALink: --cpuprofile names a file to write; a link
// planted there is refused before anything runs and its target is left
// alone (os.Create used to truncate it).
func TestCPUProfileRefusesALink(t *testing.T) {
	dir := t.TempDir()
	planted := testkit.PlantLink(t, dir, "cpu.pprof")
	code, _, stderr := benchRunCLI(t, "bench", "--workload", filepath.Join(dir, "none.jsonl"), "--cpuprofile", planted.Link, "--quiet")
	if code != cli.ExitInvalid || !strings.Contains(stderr, "symbolic link") {
		t.Errorf("exit %d, stderr %q; want invalid naming the link", code, stderr)
	}
	planted.Untouched(t)
}
