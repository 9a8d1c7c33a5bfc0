//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package bench

import "syscall"

// flushFileSystems asks the kernel to write every dirty page out (sync(2))
// and, on Linux, waits until it has. Between phases this keeps the
// write-back of one phase's files from landing in the next phase's fsyncs.
func flushFileSystems() { syscall.Sync() }
