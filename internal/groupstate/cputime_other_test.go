//go:build !unix

package groupstate

import "time"

// cpuTime returns 0: the process's CPU time is read on unix systems only.
func cpuTime() time.Duration { return 0 }
