package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
)

// The peak memory of a read command is its getrusage ru_maxrss. A child
// started straight from the bench would not give its own: Go starts
// children with vfork (CLONE_VM), and Linux carries the high-water mark of
// the memory the child shared until its execve (the bench's, which holds
// a whole store build) into the child's ru_maxrss. So each command runs
// under a small intermediate process, the hidden `bench-rusage`, whose
// own few MiB are all that carries over.

// rusageReport is what bench-rusage prints: the command's peak resident
// memory and wall time.
type rusageReport struct {
	PeakMB float64 `json:"peak_mb"`
	MS     float64 `json:"ms"`
}

func benchRusageCommand(f *cli.Factory) *cobra.Command {
	return &cobra.Command{
		Use:    "bench-rusage -- COMMAND [ARG...]",
		Short:  "Run a command and print its peak memory and time as JSON (used by bench --growth)",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := runMeasured(cmd.Context(), f.Now, args)
			if err != nil {
				return err
			}
			return json.NewEncoder(f.Out).Encode(rep)
		},
	}
}

// runMeasured runs args with its output discarded and returns its peak
// memory and wall time; a failure carries its stderr.
func runMeasured(ctx context.Context, now sessiondb.Clock, args []string) (*rusageReport, error) {
	c := exec.CommandContext(ctx, args[0], args[1:]...)
	var stderr bytes.Buffer
	c.Stdout, c.Stderr = io.Discard, &stderr
	start := now()
	if err := c.Run(); err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINTERNAL, "%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return &rusageReport{PeakMB: childPeakMB(c.ProcessState), MS: round(ms(now().Sub(start)), 1)}, nil
}

// measureCommand runs args under bench-rusage of the binary exe.
func measureCommand(ctx context.Context, exe string, args []string) (*rusageReport, error) {
	c := exec.CommandContext(ctx, exe, append([]string{"bench-rusage", "--"}, args...)...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINTERNAL, "%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	var rep rusageReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINTERNAL, "bench-rusage printed %q: %v", stdout.String(), err)
	}
	return &rep, nil
}
