package grouplabel

import (
	"time"

	"github.com/kobe/groupconc"
)

// Sums adds up the stats of the groups of one label value.
type Sums struct {
	Running, Waiting, Groups, Blocked int
	Limit                             int // the concurrency limits, Unlimited ones left out
	OldestWait, OldestRunning         time.Duration
	Paused, WaitingGlobal             int
	Ended                             [4]uint64 // Succeeded, Failed, Cancelled, Rejected
}

// Add counts g in s.
func (s *Sums) Add(g groupconc.GroupStats) {
	s.Running += g.Running
	s.Waiting += g.Waiting
	s.Groups++
	s.Blocked += g.Blocked
	if g.MaxConcurrency != groupconc.Unlimited {
		s.Limit += g.MaxConcurrency
	}
	s.OldestWait = max(s.OldestWait, g.OldestWait)
	s.OldestRunning = max(s.OldestRunning, g.OldestRunning)
	if g.Paused {
		s.Paused++
	}
	s.WaitingGlobal += g.WaitingGlobal
	for i, n := range [...]uint64{g.Succeeded, g.Failed, g.Cancelled, g.Rejected} {
		s.Ended[i] += n
	}
}
