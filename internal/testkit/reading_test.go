package testkit

import (
	"errors"
	"io"
	"os/exec"
	"testing"
)

func TestStartReading(t *testing.T) {
	cmd := exec.Command("sh", "-c", `echo one; echo two; echo oops >&2; exit 3`)
	stdout, stderr := StartReading(t, cmd)
	out, err := io.ReadAll(stdout)
	if err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("wait: %v, want exit status 3", err)
	}
	if string(out) != "one\ntwo\n" || stderr.String() != "oops\n" {
		t.Fatalf("stdout %q, stderr %q", out, stderr.String())
	}
}
