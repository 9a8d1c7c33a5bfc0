//go:build !unix

package hostd

import "os/exec"

// Without process groups, stops reach the started process only.
func ownProcessGroup(cmd *exec.Cmd) {}

func terminate(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}

func kill(cmd *exec.Cmd) error { return terminate(cmd) }
