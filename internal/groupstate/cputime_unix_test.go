//go:build unix

package groupstate

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time the process has used, user and system, or
// 0 where the system cannot tell.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
