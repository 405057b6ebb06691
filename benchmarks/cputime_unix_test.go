//go:build unix

package benchmarks

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time, user and system, the process has used
// so far, and true. On a machine shared with other work, this is what a
// run costs, where the wall time also counts the waits for a CPU.
func processCPU() (time.Duration, bool) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, false
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), true
}
