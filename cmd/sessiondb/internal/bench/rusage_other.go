//go:build !unix

package bench

import "os"

// Peak memory is read with getrusage, which only Unix systems have; 0
// elsewhere.
func selfPeakMB() float64                     { return 0 }
func childPeakMB(ps *os.ProcessState) float64 { return 0 }
