//go:build unix

package hostd

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup makes cmd the leader of a new process group, so that a
// stop reaches the shell and everything it started, not just the shell.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to cmd's process group (falling back to the process
// itself when the group is gone).
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err == nil {
		return nil
	}
	return cmd.Process.Signal(sig)
}

// terminate asks politely (SIGTERM); kill does not ask (SIGKILL).
func terminate(cmd *exec.Cmd) error { return signalGroup(cmd, syscall.SIGTERM) }

func kill(cmd *exec.Cmd) error { return signalGroup(cmd, syscall.SIGKILL) }
