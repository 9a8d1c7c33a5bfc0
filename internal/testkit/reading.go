package testkit

import (
	"io"
	"os/exec"
	"testing"
)

// StartReading starts cmd with its standard output as a pipe for the test
// to read, line by line as the process writes (a child acknowledging each
// write, say), and its standard error collected in a Buffer, readable
// while it runs and once it has exited. It fails t when cmd cannot start.
// The test reads stdout to its end before it calls cmd.Wait.
func StartReading(t testing.TB, cmd *exec.Cmd) (stdout io.Reader, stderr *Buffer) {
	t.Helper()
	stderr = &Buffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return out, stderr
}
