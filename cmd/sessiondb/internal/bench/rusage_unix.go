//go:build unix

package bench

import (
	"os"
	"runtime"
	"syscall"
)

// maxrssMB converts getrusage's ru_maxrss, which macOS gives in bytes and
// the other systems in KiB, to MiB.
func maxrssMB(maxrss int64) float64 {
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return round(float64(maxrss)/(1<<20), 1)
	}
	return round(float64(maxrss)/1024, 1)
}

// selfPeakMB is this process's peak resident memory so far.
func selfPeakMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return maxrssMB(int64(ru.Maxrss))
}

// childPeakMB is the peak resident memory of a child process that has
// exited.
func childPeakMB(ps *os.ProcessState) float64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return maxrssMB(int64(ru.Maxrss))
	}
	return 0
}
