package testkit

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// A child process of a test is the test binary run again, with the child's
// role in childRoleEnv and its arguments in childArgsEnv, separated by
// childArgsSep (a byte no path or id holds).
const (
	childRoleEnv = "SESSIONDB_TEST_HELPER_ROLE"
	childArgsEnv = "SESSIONDB_TEST_HELPER_ARGS"
	childArgsSep = "\x1f"
)

// ChildCommand returns a command that runs this test binary again as a
// child in role with args; the test named serveTest serves it with
// ServeChild.
func ChildCommand(serveTest, role string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^"+serveTest+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childRoleEnv+"="+role, childArgsEnv+"="+strings.Join(args, childArgsSep))
	return cmd
}

// ServeChild is the body of the test that serves ChildCommand: in a normal
// run it returns at once; in a child it runs the role's function with the
// child's arguments and exits, 0 when it returned nil, else 3 with the
// error on stderr (an unknown role is such an error).
func ServeChild(roles map[string]func(args []string) error) {
	role := os.Getenv(childRoleEnv)
	if role == "" {
		return
	}
	os.Exit(serveChild(roles, role, os.Getenv(childArgsEnv), os.Stderr))
}

// serveChild runs one child role and returns its exit status.
func serveChild(roles map[string]func(args []string) error, role, args string, stderr io.Writer) int {
	fn, ok := roles[role]
	if !ok {
		fmt.Fprintf(stderr, "helper: unknown helper role %q\n", role)
		return 3
	}
	if err := fn(strings.Split(args, childArgsSep)); err != nil {
		fmt.Fprintln(stderr, "helper:", err)
		return 3
	}
	return 0
}
