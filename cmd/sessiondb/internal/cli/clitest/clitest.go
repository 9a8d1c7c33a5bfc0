// Package clitest runs command groups in tests the way main runs them, on
// testkit.Buffers for streams and, where a test needs one, its own clock.
package clitest

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// Options are what a test sets on the factory of a run.
type Options struct {
	// Stdin is the command's input; nil is empty.
	Stdin io.Reader
	// Now is the command's clock; nil is time.Now.
	Now sessiondb.Clock
	// Executable is the path the command sees as its binary's; "" is the
	// test binary's.
	Executable string
}

// Result is what one command line did.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// factory builds the factory of one run.
func (o Options) factory() (*cli.Factory, *testkit.Buffer, *testkit.Buffer) {
	in := o.Stdin
	if in == nil {
		in = strings.NewReader("")
	}
	out, errOut := &testkit.Buffer{}, &testkit.Buffer{}
	f := cli.New(in, out, errOut)
	if o.Now != nil {
		f.Now = o.Now
	}
	if o.Executable != "" {
		f.Executable = func() (string, error) { return o.Executable, nil }
	}
	return f, out, errOut
}

// Run runs the command line args over groups and returns its exit status
// and output.
func Run(ctx context.Context, o Options, args []string, groups ...cli.Group) Result {
	f, out, errOut := o.factory()
	code := cli.Run(ctx, f, args, groups...)
	return Result{Code: code, Stdout: out.String(), Stderr: errOut.String()}
}

// Decode decodes r's stdout, the output of a --json run, into v, and fails
// t when it is not JSON.
func (r Result) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.Stdout), v); err != nil {
		t.Fatalf("stdout is not JSON (%v):\n%s", err, r.Stdout)
	}
}

// Must runs args like Run, with no input and the real clock, and fails t
// unless the exit status is 0.
func Must(t testing.TB, args []string, groups ...cli.Group) Result {
	t.Helper()
	r := Run(context.Background(), Options{}, args, groups...)
	if r.Code != 0 {
		t.Fatalf("sessiondb %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	return r
}

// Failure is a command line that must fail: exit status Code, and Want in
// what it printed on stderr.
type Failure struct {
	Name string
	Args []string
	Code int
	Want string
}

// Fails runs each failure over groups as a subtest of t and checks its
// status and message.
func Fails(t *testing.T, cases []Failure, groups ...cli.Group) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			r := Run(context.Background(), Options{}, tc.Args, groups...)
			if r.Code != tc.Code || !strings.Contains(r.Stderr, tc.Want) {
				t.Fatalf("exit %d, stderr %q; want exit %d mentioning %q", r.Code, r.Stderr, tc.Code, tc.Want)
			}
		})
	}
}

// Start runs the command line args over groups in the background until
// the returned stop is called (as Ctrl-C would); stop returns the exit
// status. out and errOut can be read while it runs.
func Start(o Options, args []string, groups ...cli.Group) (out, errOut *testkit.Buffer, stop func() int) {
	f, out, errOut := o.factory()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- cli.Run(ctx, f, args, groups...) }()
	return out, errOut, func() int { cancel(); return <-done }
}
